"""The one exception the client raises for what the service answered."""


class GpusortError(Exception):
    """A call the service (or gRPC on the way) refused or failed: `code` is the grpc.StatusCode, `details`
    the server's message, `request_id` the id the server logged it under (when it sent one)."""

    def __init__(self, code, details, request_id=None):
        self.code = code
        self.details = details
        self.request_id = request_id
        name = getattr(code, "name", str(code))
        super().__init__("%s: %s%s" % (name, details, " (request %s)" % request_id if request_id else ""))

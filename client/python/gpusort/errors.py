"""The one exception the client raises for what the service answered."""
import grpc


class GpusortError(Exception):
    """A call the service (or gRPC on the way) refused or failed: `code` is the grpc.StatusCode, `details`
    the server's message, `request_id` the id the server logged it under (when it sent one)."""

    def __init__(self, code, details, request_id=None):
        self.code = code
        self.details = details
        self.request_id = request_id
        name = getattr(code, "name", str(code))
        super().__init__("%s: %s%s" % (name, details, " (request %s)" % request_id if request_id else ""))


class BadAnswerError(GpusortError):
    """The server said OK but its answer breaks sort.proto (wrong lengths, stream chunks that skip or
    repeat elements, indices outside their row): the client returns nothing of it. The code is DATA_LOSS,
    as gRPC names data that came back corrupted; the data port's checks raise it too."""

    def __init__(self, details, request_id=None):
        super().__init__(grpc.StatusCode.DATA_LOSS, details, request_id)

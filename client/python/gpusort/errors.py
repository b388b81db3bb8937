"""The exceptions the client raises for what the service answered.

Every one is a GpusortError, carrying the gRPC status code, the server's message and the request id the
server logged the call under. Each code that has a Python counterpart raises a subclass that is also that
built-in exception, so that code written for Python's own errors catches them:

    InvalidArgumentError   ValueError           INVALID_ARGUMENT, OUT_OF_RANGE, FAILED_PRECONDITION
    UnavailableError       ConnectionError      UNAVAILABLE (server down, draining, connection lost)
    DeadlineExceededError  TimeoutError         DEADLINE_EXCEEDED (the client's timeout= passed)
    ResourceExhaustedError MemoryError          RESOURCE_EXHAUSTED (a limit of the server: memory,
                                                calls in flight, regions; retry later or send less)
    PermissionDeniedError  PermissionError      UNAUTHENTICATED, PERMISSION_DENIED (token= missing or
                                                wrong)
    UnimplementedError     NotImplementedError  UNIMPLEMENTED (an algorithm or dtype this server lacks)
    BadAnswerError         -                    DATA_LOSS: an OK answer that breaks sort.proto (the
                                                client's finding; the server's own failures are
                                                GpusortError with their code)

Other codes (CANCELLED, INTERNAL, UNKNOWN, ...) raise GpusortError itself.
"""
from typing import Any, Callable, Dict, Optional, Tuple, Type

import grpc


class GpusortError(Exception):
    """A call the service (or gRPC on the way) refused or failed: `code` is the grpc.StatusCode, `details`
    the server's message, `request_id` the id the server logged it under (when it sent one)."""

    def __init__(self, code: "grpc.StatusCode", details: str, request_id: Optional[str] = None) -> None:
        self.code = code
        self.details = details
        self.request_id = request_id
        name = getattr(code, "name", str(code))
        super().__init__("%s: %s%s" % (name, details, " (request %s)" % request_id if request_id else ""))

    # pickles (multiprocessing, Dask) whatever the built-in base's own arguments are
    def __reduce__(self) -> Tuple[Callable[..., "GpusortError"], Tuple[Any, ...]]:
        return (error_from, (self.code, self.details, self.request_id))


class InvalidArgumentError(GpusortError, ValueError):
    """The request is wrong (INVALID_ARGUMENT, OUT_OF_RANGE, FAILED_PRECONDITION): sending it again fails again."""


class UnavailableError(GpusortError, ConnectionError):
    """The server cannot be reached or is not serving now (UNAVAILABLE): another try, or server, may do."""


class DeadlineExceededError(GpusortError, TimeoutError):
    """The call's deadline (the client's timeout=) passed before its answer (DEADLINE_EXCEEDED)."""


class ResourceExhaustedError(GpusortError, MemoryError):
    """A limit of the server was reached (RESOURCE_EXHAUSTED): its memory, calls in flight, or shared-memory
    regions; the message says which. Retry later, or send less at once."""


class PermissionDeniedError(GpusortError, PermissionError):
    """No token, or one the server does not accept (UNAUTHENTICATED, PERMISSION_DENIED)."""


class UnimplementedError(GpusortError, NotImplementedError):
    """Something this server does not offer (UNIMPLEMENTED): an algorithm, a dtype, a method."""


class BadAnswerError(GpusortError):
    """The server said OK but its answer breaks sort.proto (wrong lengths, stream chunks that skip or
    repeat elements, indices outside their row): the client returns nothing of it. The code is DATA_LOSS,
    as gRPC names data that came back corrupted; the data port's checks raise it too."""

    def __init__(self, details: str, request_id: Optional[str] = None) -> None:
        super().__init__(grpc.StatusCode.DATA_LOSS, details, request_id)

    def __reduce__(self) -> Tuple[Callable[..., "GpusortError"], Tuple[Any, ...]]:
        return (BadAnswerError, (self.details, self.request_id))


_BY_CODE: Dict["grpc.StatusCode", Type[GpusortError]] = {
    grpc.StatusCode.INVALID_ARGUMENT: InvalidArgumentError,
    grpc.StatusCode.OUT_OF_RANGE: InvalidArgumentError,
    grpc.StatusCode.FAILED_PRECONDITION: InvalidArgumentError,
    grpc.StatusCode.UNAVAILABLE: UnavailableError,
    grpc.StatusCode.DEADLINE_EXCEEDED: DeadlineExceededError,
    grpc.StatusCode.RESOURCE_EXHAUSTED: ResourceExhaustedError,
    grpc.StatusCode.UNAUTHENTICATED: PermissionDeniedError,
    grpc.StatusCode.PERMISSION_DENIED: PermissionDeniedError,
    grpc.StatusCode.UNIMPLEMENTED: UnimplementedError,
}


def error_from(code: "grpc.StatusCode", details: str, request_id: Optional[str] = None) -> GpusortError:
    """The exception for a call that ended with grpc.StatusCode `code`: the subclass above for the code's
    kind, else GpusortError (a DATA_LOSS the server sent is its own failure, not a BadAnswerError)."""
    return _BY_CODE.get(code, GpusortError)(code, details, request_id)

"""What the server said about how it served a call: `Client.last_info` is a CallInfo.

Its `backend` and `algorithm` are enums (IntEnum: they still compare equal to the proto's numbers), its
stages a tuple of (name, seconds) in the order they happened; the stage names are sort.proto's
StageTime list.
"""
import enum
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Tuple, Type, TypeVar, Union, cast

from .v1 import sort_pb2 as pb

_E = TypeVar("_E", bound=enum.IntEnum)


def _enum(name: str, proto_enum: Any, prefix: str) -> Type[enum.IntEnum]:
    # cast: mypy reads the functional API's call as a member lookup (an IntEnum), not the new class
    return cast(Type[enum.IntEnum],
                enum.IntEnum(name, {key[len(prefix):]: value for key, value in proto_enum.items()}, module=__name__))


if TYPE_CHECKING:
    # What type checkers see: the proto's members as these classes are written (sort.proto's Algorithm
    # and Backend). At run time (below) they are built from the generated module, so a proto member
    # added later exists there before it is listed here.
    class Algorithm(enum.IntEnum):
        AUTO = 0
        RADIX = 1
        MERGE = 2
        BITONIC = 3
        ODD_EVEN = 4
        QUICKSORT = 5
        CPU = 6
        RADIX_SELECT = 32
        SMALL_K = 33
        THREAD_LISTS = 34

    class Backend(enum.IntEnum):
        UNSPECIFIED = 0
        CPU = 1
        CUDA = 2
else:
    Algorithm = _enum("Algorithm", pb.Algorithm, "ALGORITHM_")  # AUTO, RADIX, MERGE, ..., CPU, RADIX_SELECT, ...
    Backend = _enum("Backend", pb.Backend, "BACKEND_")  # UNSPECIFIED, CPU, CUDA


@dataclass(frozen=True)
class Stage:
    name: str
    seconds: float


@dataclass(frozen=True)
class CallInfo:
    algorithm: "Union[Algorithm, int]"  # what ran (never AUTO); an int when this client does not know it
    backend: "Union[Backend, int]"
    device: str  # e.g. "cpu (2 threads)" or "NVIDIA H200"
    stages: Tuple[Stage, ...]
    server_seconds: float  # from arrival to the reply, on the server
    request_id: str  # the id the server logged the call under

    @staticmethod
    def of(info: Any) -> "CallInfo":  # info: a pb.ExecutionInfo (generated: untyped)
        """The CallInfo of a reply's ExecutionInfo (a number this client does not know stays an int)."""
        return CallInfo(algorithm=_known(Algorithm, info.algorithm), backend=_known(Backend, info.backend),
                        device=info.device, stages=tuple(Stage(s.stage, s.seconds) for s in info.stages),
                        server_seconds=info.server_seconds, request_id=info.request_id)


def _known(kind: Type[_E], value: int) -> Union[_E, int]:
    try:
        return kind(value)
    except ValueError:  # a newer server's algorithm or backend
        return int(value)

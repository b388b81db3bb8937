"""What the server said about how it served a call: `Client.last_info` is a CallInfo.

Its `backend` and `algorithm` are enums (IntEnum: they still compare equal to the proto's numbers), its
stages a tuple of (name, seconds) in the order they happened; the stage names are sort.proto's
StageTime list.
"""
import enum
from dataclasses import dataclass
from typing import Tuple

from .v1 import sort_pb2 as pb


def _enum(name, proto_enum, prefix):
    return enum.IntEnum(name, {key[len(prefix):]: value for key, value in proto_enum.items()}, module=__name__)


Algorithm = _enum("Algorithm", pb.Algorithm, "ALGORITHM_")  # AUTO, RADIX, MERGE, ..., CPU, RADIX_SELECT, ...
Backend = _enum("Backend", pb.Backend, "BACKEND_")  # UNSPECIFIED, CPU, CUDA


@dataclass(frozen=True)
class Stage:
    name: str
    seconds: float


@dataclass(frozen=True)
class CallInfo:
    algorithm: "Algorithm"  # what ran (never AUTO)
    backend: "Backend"
    device: str  # e.g. "cpu (2 threads)" or "NVIDIA H200"
    stages: Tuple[Stage, ...]
    server_seconds: float  # from arrival to the reply, on the server
    request_id: str  # the id the server logged the call under

    @staticmethod
    def of(info: "pb.ExecutionInfo") -> "CallInfo":
        """The CallInfo of a reply's ExecutionInfo (a number this client does not know stays an int)."""
        return CallInfo(algorithm=_known(Algorithm, info.algorithm), backend=_known(Backend, info.backend),
                        device=info.device, stages=tuple(Stage(s.stage, s.seconds) for s in info.stages),
                        server_seconds=info.server_seconds, request_id=info.request_id)


def _known(kind, value):
    try:
        return kind(value)
    except ValueError:  # a newer server's algorithm or backend
        return int(value)

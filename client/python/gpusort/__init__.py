"""gpusort: sort and top-k of numpy arrays, torch and CuPy tensors on a gpusort server.

    import gpusort
    client = gpusort.Client("127.0.0.1:50051")
    client.sort(a)                      # numpy.sort(a, axis=-1, kind="stable"), bit for bit
    client.argsort(a, axis=None)        # numpy.argsort(a, axis=None, kind="stable")
    keys, vals = client.sort_with(k, v) # v moved with its keys
    values, indices = client.topk(a, 10, axis=-1, largest=True)   # torch.topk(a, 10)

asyncio services use gpusort.aio.Client: the same calls, awaited.

CUDA arrays (torch, CuPy, anything with __cuda_array_interface__) stay on their GPU: with shm_socket=
(the server's --shm-socket, same node) they go through device memory registered with the server and the
answers come back as arrays of the same kind on the same GPU.

Floats are ordered as numpy orders them (NaNs last, -0.0 equal to +0.0) unless nan="total" asks for the
service's IEEE totalOrder. The module-level functions use one client for $GPUSORT_SERVER (default
127.0.0.1:50051). Errors the service answers are GpusortError, carrying the gRPC status code, and where
Python has an exception for the code, a subclass that is also it (InvalidArgumentError is a ValueError,
UnavailableError a ConnectionError, DeadlineExceededError a TimeoutError: see gpusort.errors); an OK answer that breaks the protocol
(wrong lengths, missing stream chunks, indices outside their rows) is BadAnswerError, a GpusortError
with code DATA_LOSS, and none of it is returned.
"""
import os
import threading
from typing import TYPE_CHECKING, Any, Dict, Optional, SupportsIndex, Tuple, TypeVar, overload

import numpy as np

from ._client import DEFAULT_TARGET, NAN_ORDERS, ArrayLike, Client
from ._device import DeviceArray
from ._dtypes import SUPPORTED as SUPPORTED_DTYPES
from . import aio, errors, info
from .errors import (BadAnswerError, DeadlineExceededError, GpusortError, InvalidArgumentError, PermissionDeniedError,
                     ResourceExhaustedError, UnavailableError, UnimplementedError)
from .info import Algorithm, Backend, CallInfo

if TYPE_CHECKING:
    import numpy.typing as npt  # for the annotations only: no import at run time

__all__ = ["Client", "DeviceArray", "GpusortError", "BadAnswerError", "InvalidArgumentError", "UnavailableError",
           "DeadlineExceededError", "ResourceExhaustedError", "PermissionDeniedError", "UnimplementedError", "sort",
           "argsort", "sort_with", "topk", "default_client", "Algorithm", "Backend", "CallInfo", "SUPPORTED_DTYPES",
           "NAN_ORDERS", "DEFAULT_TARGET"]
__version__ = "0.2.0"  # 0.2: numpy's float order and stable sorts by default; errors by code

_lock = threading.Lock()
_default: Dict[str, Client] = {}
_S = TypeVar("_S", bound=np.generic)


def default_client() -> Client:
    """The shared Client for $GPUSORT_SERVER (one per target, made on first use)."""
    target = os.environ.get("GPUSORT_SERVER") or DEFAULT_TARGET
    with _lock:
        if target not in _default:
            _default[target] = Client(target)
        return _default[target]


# The options are Client.sort's (and argsort's, ...) keyword arguments; the overloads say what Client's
# do: numpy arrays in, numpy arrays out, else the caller's kind. (The implementations return Any: with
# **options, mypy cannot tell which of Client's overloads they call.)
@overload
def sort(a: "npt.NDArray[_S]", axis: Optional[SupportsIndex] = -1, **options: Any) -> "npt.NDArray[_S]": ...


@overload
def sort(a: ArrayLike, axis: Optional[SupportsIndex] = -1, **options: Any) -> Any: ...


def sort(a: ArrayLike, axis: Optional[SupportsIndex] = -1, **options: Any) -> Any:
    return default_client().sort(a, axis, **options)


@overload
def argsort(a: "npt.NDArray[Any]", axis: Optional[SupportsIndex] = -1, **options: Any) -> "npt.NDArray[np.int64]": ...


@overload
def argsort(a: ArrayLike, axis: Optional[SupportsIndex] = -1, **options: Any) -> Any: ...


def argsort(a: ArrayLike, axis: Optional[SupportsIndex] = -1, **options: Any) -> Any:
    return default_client().argsort(a, axis, **options)


@overload
def sort_with(keys: "npt.NDArray[_S]", values: ArrayLike, axis: Optional[SupportsIndex] = -1, **options: Any
              ) -> Tuple["npt.NDArray[_S]", "npt.NDArray[Any]"]: ...


@overload
def sort_with(keys: ArrayLike, values: ArrayLike, axis: Optional[SupportsIndex] = -1, **options: Any
              ) -> Tuple[Any, Any]: ...


def sort_with(keys: ArrayLike, values: ArrayLike, axis: Optional[SupportsIndex] = -1, **options: Any) -> Any:
    return default_client().sort_with(keys, values, axis, **options)


@overload
def topk(a: "npt.NDArray[_S]", k: SupportsIndex, axis: Optional[SupportsIndex] = -1, **options: Any
         ) -> Tuple["npt.NDArray[_S]", "npt.NDArray[np.int64]"]: ...


@overload
def topk(a: ArrayLike, k: SupportsIndex, axis: Optional[SupportsIndex] = -1, **options: Any) -> Tuple[Any, Any]: ...


def topk(a: ArrayLike, k: SupportsIndex, axis: Optional[SupportsIndex] = -1, **options: Any) -> Any:
    return default_client().topk(a, k, axis, **options)


sort.__doc__ = Client.sort.__doc__
argsort.__doc__ = Client.argsort.__doc__
sort_with.__doc__ = Client.sort_with.__doc__
topk.__doc__ = Client.topk.__doc__

"""gpusort: sort and top-k of numpy arrays, torch and CuPy tensors on a gpusort server.

    import gpusort
    client = gpusort.Client("127.0.0.1:50051")
    client.sort(a)                      # numpy.sort(a, axis=-1, kind="stable"), bit for bit
    client.argsort(a, axis=None)        # numpy.argsort(a, axis=None, kind="stable")
    keys, vals = client.sort_with(k, v) # v moved with its keys
    values, indices = client.topk(a, 10, axis=-1, largest=True)   # torch.topk(a, 10)

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

from ._client import DEFAULT_TARGET, NAN_ORDERS, Client
from ._device import DeviceArray
from ._dtypes import SUPPORTED as SUPPORTED_DTYPES
from . import errors, info
from .errors import (BadAnswerError, DeadlineExceededError, GpusortError, InvalidArgumentError, PermissionDeniedError,
                     ResourceExhaustedError, UnavailableError, UnimplementedError)
from .info import Algorithm, Backend, CallInfo

__all__ = ["Client", "DeviceArray", "GpusortError", "BadAnswerError", "InvalidArgumentError", "UnavailableError",
           "DeadlineExceededError", "ResourceExhaustedError", "PermissionDeniedError", "UnimplementedError", "sort",
           "argsort", "sort_with", "topk", "default_client", "Algorithm", "Backend", "CallInfo", "SUPPORTED_DTYPES",
           "NAN_ORDERS", "DEFAULT_TARGET"]
__version__ = "0.2.0"  # 0.2: numpy's float order and stable sorts by default; errors by code

_lock = threading.Lock()
_default = {}


def default_client():
    """The shared Client for $GPUSORT_SERVER (one per target, made on first use)."""
    target = os.environ.get("GPUSORT_SERVER") or DEFAULT_TARGET
    with _lock:
        if target not in _default:
            _default[target] = Client(target)
        return _default[target]


def sort(a, axis=-1, **options):
    return default_client().sort(a, axis, **options)


def argsort(a, axis=-1, **options):
    return default_client().argsort(a, axis, **options)


def sort_with(keys, values, axis=-1, **options):
    return default_client().sort_with(keys, values, axis, **options)


def topk(a, k, axis=-1, **options):
    return default_client().topk(a, k, axis, **options)


sort.__doc__ = Client.sort.__doc__
argsort.__doc__ = Client.argsort.__doc__
sort_with.__doc__ = Client.sort_with.__doc__
topk.__doc__ = Client.topk.__doc__

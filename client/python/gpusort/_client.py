"""gpusort.Client: Sort and TopK over gRPC for numpy arrays (and what numpy reads).

Transport by size: a call whose request and answer both fit `max_unary_bytes` is one unary RPC;
larger ones stream (SortStream / TopKStream) in chunks of `chunk_bytes`, so a caller never meets a
message limit. The channel itself has no message limit; the server's --max-message-bytes (64 MiB by
default) is what max_unary_bytes stays under.
"""
import mmap
import operator
import os
import threading
from typing import (TYPE_CHECKING, Any, ContextManager, Dict, Generator, Iterator, Optional, SupportsIndex, Tuple,
                    TypeVar, Union, cast, overload)

import grpc
import numpy as np
from google.protobuf.message import DecodeError

from . import _answers, _arrays, _device, _device_calls, _dtypes, _region_calls, _shm, _sockets
from .errors import BadAnswerError, GpusortError, error_from
from .info import CallInfo
from .v1 import sort_pb2 as pb
from .v1 import sort_pb2_grpc as pb_grpc

if TYPE_CHECKING:
    import numpy.typing as npt  # for the annotations only: no import at run time

DEFAULT_PORT = 50051
DEFAULT_TARGET = "127.0.0.1:%d" % DEFAULT_PORT
NAN_ORDERS = ("numpy", "total")

# What the calls take: anything numpy reads (numpy arrays of any layout, lists, torch CPU tensors) or a
# CUDA array (torch, CuPy, anything with __cuda_array_interface__). Any: torch and CuPy are optional and
# untyped. A numpy array in gives numpy arrays back (the overloads below); anything else gives the
# caller's kind (torch tensors, CuPy arrays, DeviceArray), hence Any.
ArrayLike = Any
_S = TypeVar("_S", bound=np.generic)

_ALGORITHMS: Dict[Optional[str], int] = {
    None: pb.ALGORITHM_AUTO, "auto": pb.ALGORITHM_AUTO, "radix": pb.ALGORITHM_RADIX, "merge": pb.ALGORITHM_MERGE,
    "bitonic": pb.ALGORITHM_BITONIC, "odd_even": pb.ALGORITHM_ODD_EVEN, "quicksort": pb.ALGORITHM_QUICKSORT,
    "cpu": pb.ALGORITHM_CPU, "radix_select": pb.ALGORITHM_RADIX_SELECT, "small_k": pb.ALGORITHM_SMALL_K,
    "thread_lists": pb.ALGORITHM_THREAD_LISTS,
}


class SortCall:
    """The one exchange with the server a Sort of host arrays makes: `options` and the key bytes to send
    (`keys`, little-endian), answered by (sorted keys as `key_dtype`, int64 positions or None). The
    calls are written as generators of these (Client._sort_steps, _topk_steps): gpusort.Client answers
    each by a blocking call, gpusort.aio.Client by an awaited one, and both share every step around it."""

    def __init__(self, options: Any, keys: "npt.NDArray[Any]", key_dtype: "np.dtype[Any]") -> None:
        self.options, self.keys, self.key_dtype = options, keys, key_dtype


class TopKCall:
    """The same for a TopK: `results` values and positions come back."""

    def __init__(self, options: Any, keys: "npt.NDArray[Any]", results: int, key_dtype: "np.dtype[Any]") -> None:
        self.options, self.keys, self.results, self.key_dtype = options, keys, results, key_dtype


Exchange = Union[SortCall, TopKCall]
_R = TypeVar("_R")
Steps = Generator[Exchange, Any, _R]


def _target(target: Optional[str]) -> str:
    target = target or os.environ.get("GPUSORT_SERVER") or DEFAULT_TARGET
    if "://" in target:
        raise ValueError("gpusort: the server is host:port (or unix:PATH), not a URL: %r" % target)
    if target.startswith("unix:") or target.startswith("dns:"):
        return target
    host = target[1:].split("]", 1)[-1] if target.startswith("[") else target
    if host.endswith(":"):
        raise ValueError("gpusort: the server %r names no port" % target)
    return target if ":" in host else "%s:%d" % (target, DEFAULT_PORT)


def _flat(obj: ArrayLike) -> Any:
    """obj as one dimension (numpy's axis=None): numpy, torch and CuPy arrays by their own reshape."""
    return obj.reshape(-1) if hasattr(obj, "reshape") else np.asarray(obj).reshape(-1)


def _axis(a: ArrayLike, axis: Optional[SupportsIndex], values: ArrayLike = None) -> Tuple[Any, int, Any]:
    """(a, axis, values) as the calls take them: axis=None flattens `a` and `values` (numpy's rule), any
    other axis must be an integer (operator.index: 1.0 or "1" is a TypeError, as in numpy)."""
    if axis is None:
        if values is not None and tuple(np.shape(values)) != tuple(np.shape(a)):
            raise ValueError("gpusort: values must have the keys' shape %s, not %s"
                             % (tuple(np.shape(a)), tuple(np.shape(values))))
        return _flat(a), -1, None if values is None else _flat(values)
    return a, operator.index(axis), values


def _algorithm(name: Optional[str]) -> int:
    key = name.lower() if isinstance(name, str) else name
    if key not in _ALGORITHMS:
        raise ValueError("gpusort: unknown algorithm %r; one of: %s"
                         % (name, ", ".join(k for k in _ALGORITHMS if k)))
    return _ALGORITHMS[key]


class Client:
    """A connection to one gpusort server.

    target: "host:port" (port 50051 when left out) or "unix:/path"; default $GPUSORT_SERVER, else
    127.0.0.1:50051. token: a bearer token (servers started with --auth-tokens-file). tls: None/False for
    plaintext, True for TLS with the system's roots, or a CA certificate (PEM bytes or a file path).
    shm_socket: the server's --shm-socket (default $GPUSORT_SHM_SOCKET): with it the arrays travel
    through shared memory registered with that server instead of gRPC messages (same host only).
    transport: "auto" (shared memory when shm_socket is set, else one message or a stream by size),
    "grpc" (never shared memory), "shm" (always; shm_socket required) or "sockets" (Sorts' keys over the
    server's --data-port beside the call, in up to socket_parts TCP connections of at least 1 MiB each:
    near the socket's speed where gRPC moves large arrays at about a third of it; the keys cross in clear;
    TopK and sort_with go as with "grpc").
    shm_calls: "socket" (the calls on shared memory go as records on shm_socket itself, without HTTP/2;
    a server that does not take them gets them over gRPC) or "grpc".
    timeout: seconds for each call (None: no deadline). nan: "numpy" (the default: as numpy orders
    floats, so that sort, argsort and topk equal np.sort, np.argsort(kind="stable") and the stable
    selection bit for bit: every NaN after +inf, equal to each other and kept in position order, -0.0
    equal to +0.0; torch.topk takes NaN as the largest too) or "total" (the service's own IEEE totalOrder:
    -NaN first, +NaN last, -0.0 before +0.0, NaNs by payload; no re-coding on the client); each call may
    override it.

    The calls mirror numpy: axis=None sorts the flattened array, an axis or k that is not an integer is a
    TypeError, and stable=True (numpy's kind="stable": equal keys keep their order) is the default; no
    algorithm of the service is slower for it.
    """

    def __init__(self, target: Optional[str] = None, *, token: Optional[str] = None,
                 tls: Union[None, bool, bytes, bytearray, str] = None, timeout: Optional[float] = None,
                 nan: str = "numpy", max_unary_bytes: int = 32 << 20, chunk_bytes: int = 4 << 20,
                 shm_socket: Optional[str] = None, transport: str = "auto", socket_parts: int = 8,
                 shm_calls: str = "socket") -> None:
        if nan not in NAN_ORDERS:
            raise ValueError("gpusort: nan must be one of %s, not %r" % (NAN_ORDERS, nan))
        if shm_calls not in ("socket", "grpc"):
            raise ValueError("gpusort: shm_calls must be socket or grpc, not %r" % (shm_calls,))
        if transport not in ("auto", "grpc", "shm", "sockets"):
            raise ValueError("gpusort: transport must be auto, grpc, shm or sockets, not %r" % (transport,))
        self.use_sockets = transport == "sockets"
        self.socket_parts = max(1, int(socket_parts))
        self.shm_socket = shm_socket or os.environ.get("GPUSORT_SHM_SOCKET") or None
        if transport == "shm" and not self.shm_socket:
            raise ValueError("gpusort: transport='shm' needs shm_socket (the server's --shm-socket)")
        self.use_shm = transport == "shm" or (transport == "auto" and self.shm_socket is not None)
        # Registered regions, one for each call in flight (made on first use).
        self._regions: Optional[_shm.RegionPool] = None
        self._regions_lock = threading.Lock()
        self._device_regions = _device_calls.DeviceRegions()  # CUDA arrays' regions, one per GPU
        self.target = _target(target)
        self.timeout = timeout
        self.nan = nan
        self.max_unary_bytes = int(max_unary_bytes)
        self.chunk_bytes = max(1 << 16, int(chunk_bytes))
        # info.CallInfo of the last answered call (backend, algorithm, stages).
        self.last_info: Optional[CallInfo] = None
        options = [("grpc.max_receive_message_length", -1), ("grpc.max_send_message_length", -1)]
        self._channel_options = options
        self._credentials: Any = None  # grpc.ChannelCredentials with TLS (gpusort.aio makes its channel alike)
        self._metadata: Tuple[Tuple[str, str], ...] = ()
        if tls:
            roots = None
            if isinstance(tls, (bytes, bytearray)):
                roots = bytes(tls)
            elif isinstance(tls, str):
                with open(tls, "rb") as f:
                    roots = f.read()
            credentials = grpc.ssl_channel_credentials(root_certificates=roots)
            if token:
                credentials = grpc.composite_channel_credentials(credentials,
                                                                 grpc.access_token_call_credentials(token))
            self._credentials = credentials
            self._channel = grpc.secure_channel(self.target, credentials, options)
        else:
            if token:  # gRPC's call credentials need TLS; over plaintext the header goes as metadata
                self._metadata = (("authorization", "Bearer " + token),)
            self._channel = grpc.insecure_channel(self.target, options)
        self._stub = pb_grpc.SortServiceStub(self._channel)
        self._region_calls: Optional[_region_calls.RegionCalls] = None
        if self.shm_socket and shm_calls == "socket":
            self._region_calls = _region_calls.RegionCalls(self.shm_socket, token)

    def close(self) -> None:
        with self._regions_lock:
            if self._regions is None:  # closed before any call on shared memory: later ones are refused too
                self._regions = _shm.RegionPool(self.shm_socket or "")
            self._regions.close()
        self._device_regions.close()
        if self._region_calls is not None:
            self._region_calls.close()
        self._channel.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- public calls ------------------------------------------------------------------------------

    @overload
    def sort(self, a: "npt.NDArray[_S]", axis: Optional[SupportsIndex] = -1, *, descending: bool = False,
             stable: bool = True, algorithm: Optional[str] = None, dtype: Optional[str] = None,
             nan: Optional[str] = None, offsets: Optional["npt.ArrayLike"] = None) -> "npt.NDArray[_S]": ...

    @overload
    def sort(self, a: ArrayLike, axis: Optional[SupportsIndex] = -1, *, descending: bool = False,
             stable: bool = True, algorithm: Optional[str] = None, dtype: Optional[str] = None,
             nan: Optional[str] = None, offsets: Optional["npt.ArrayLike"] = None) -> Any: ...

    def sort(self, a: ArrayLike, axis: Optional[SupportsIndex] = -1, *, descending: bool = False,
             stable: bool = True, algorithm: Optional[str] = None, dtype: Optional[str] = None,
             nan: Optional[str] = None, offsets: Optional["npt.ArrayLike"] = None) -> Any:
        """The array sorted along `axis` (numpy.sort's shape and dtype). offsets: 1-D `a` cut into
        segments [offsets[s], offsets[s+1]) each sorted on its own (0 first, len(a) last)."""
        return self._sort(a, axis, descending, stable, algorithm, dtype, nan, offsets, None, False)[0]

    @overload
    def argsort(self, a: "npt.NDArray[Any]", axis: Optional[SupportsIndex] = -1, *, descending: bool = False,
                stable: bool = True, algorithm: Optional[str] = None, dtype: Optional[str] = None,
                nan: Optional[str] = None, offsets: Optional["npt.ArrayLike"] = None) -> "npt.NDArray[np.int64]": ...

    @overload
    def argsort(self, a: ArrayLike, axis: Optional[SupportsIndex] = -1, *, descending: bool = False,
                stable: bool = True, algorithm: Optional[str] = None, dtype: Optional[str] = None,
                nan: Optional[str] = None, offsets: Optional["npt.ArrayLike"] = None) -> Any: ...

    def argsort(self, a: ArrayLike, axis: Optional[SupportsIndex] = -1, *, descending: bool = False,
                stable: bool = True, algorithm: Optional[str] = None, dtype: Optional[str] = None,
                nan: Optional[str] = None, offsets: Optional["npt.ArrayLike"] = None) -> Any:
        """int64 positions that sort `a` along `axis` (numpy.argsort's shape; positions count from the
        start of each row or segment)."""
        return self._sort(a, axis, descending, stable, algorithm, dtype, nan, offsets, None, True, want_keys=False)[1]

    @overload
    def sort_with(self, keys: "npt.NDArray[_S]", values: ArrayLike, axis: Optional[SupportsIndex] = -1, *,
                  descending: bool = False, stable: bool = True, algorithm: Optional[str] = None,
                  dtype: Optional[str] = None, nan: Optional[str] = None, offsets: Optional["npt.ArrayLike"] = None
                  ) -> Tuple["npt.NDArray[_S]", "npt.NDArray[Any]"]: ...

    @overload
    def sort_with(self, keys: ArrayLike, values: ArrayLike, axis: Optional[SupportsIndex] = -1, *,
                  descending: bool = False, stable: bool = True, algorithm: Optional[str] = None,
                  dtype: Optional[str] = None, nan: Optional[str] = None, offsets: Optional["npt.ArrayLike"] = None
                  ) -> Tuple[Any, Any]: ...

    def sort_with(self, keys: ArrayLike, values: ArrayLike, axis: Optional[SupportsIndex] = -1, *,
                  descending: bool = False, stable: bool = True, algorithm: Optional[str] = None,
                  dtype: Optional[str] = None, nan: Optional[str] = None, offsets: Optional["npt.ArrayLike"] = None
                  ) -> Tuple[Any, Any]:
        """(sorted keys, values moved with their keys). values: the keys' shape, any fixed-size dtype."""
        sorted_keys, _, moved = self._sort(keys, axis, descending, stable, algorithm, dtype, nan, offsets,
                                           values, False)
        return sorted_keys, moved

    @overload
    def topk(self, a: "npt.NDArray[_S]", k: SupportsIndex, axis: Optional[SupportsIndex] = -1, *,
             largest: bool = True, sorted: bool = True, algorithm: Optional[str] = None, dtype: Optional[str] = None,
             nan: Optional[str] = None, offsets: Optional["npt.ArrayLike"] = None
             ) -> Tuple["npt.NDArray[_S]", "npt.NDArray[np.int64]"]: ...

    @overload
    def topk(self, a: ArrayLike, k: SupportsIndex, axis: Optional[SupportsIndex] = -1, *,
             largest: bool = True, sorted: bool = True, algorithm: Optional[str] = None, dtype: Optional[str] = None,
             nan: Optional[str] = None, offsets: Optional["npt.ArrayLike"] = None) -> Tuple[Any, Any]: ...

    def topk(self, a: ArrayLike, k: SupportsIndex, axis: Optional[SupportsIndex] = -1, *,
             largest: bool = True, sorted: bool = True, algorithm: Optional[str] = None, dtype: Optional[str] = None,
             nan: Optional[str] = None, offsets: Optional["npt.ArrayLike"] = None) -> Tuple[Any, Any]:
        """(values, indices) of the k largest (or smallest) along `axis`, as torch.topk: shape with `axis`
        of length k; ties go to the earlier position. offsets: 1-D `a` in segments, each giving its own
        min(k, length) results, concatenated (flat arrays)."""
        return self._drive(self._topk_steps(a, k, axis, largest, sorted, algorithm, dtype, nan, offsets))

    # --- internals ---------------------------------------------------------------------------------

    def _drive(self, steps: "Steps[_R]") -> _R:
        """Runs a call's steps, answering each exchange with the server by a blocking call."""
        try:
            exchange = next(steps)
            while True:
                exchange = steps.send(self._answer(exchange))
        except StopIteration as done:
            return cast(_R, done.value)

    def _answer(self, exchange: Exchange) -> Any:
        """One exchange with the server, by this client's transport, blocking."""
        if isinstance(exchange, SortCall):
            return self._call_sort(exchange.options, exchange.keys, exchange.key_dtype)
        return self._call_topk(exchange.options, exchange.keys, exchange.results, exchange.key_dtype)

    def _topk_steps(self, a: ArrayLike, k: SupportsIndex, axis: Optional[SupportsIndex], largest: bool, sorted: bool,
                    algorithm: Optional[str], dtype: Optional[str], nan: Optional[str],
                    offsets: Optional["npt.ArrayLike"]) -> "Steps[Tuple[Any, Any]]":
        k = operator.index(k)  # numpy's rule: 2.5 or "3" is a TypeError, not 2 or a late failure
        a, axis, _ = _axis(a, axis)
        if _device.is_cuda(a):
            return _device_calls.topk(self, a, k, axis, largest, sorted, algorithm, dtype, nan, offsets)
        converted = _arrays.to_numpy(a, dtype)
        array = converted.array
        data, shape = _arrays.little_endian_rows(array, axis)
        dtype_enum = _dtypes.dtype_of(data, converted.dtype_name)
        n = data.size
        m = shape[-1] if shape else 0
        if offsets is None and (k < 1 or k > m):
            raise ValueError("gpusort: k = %d is outside 1..%d (the length along axis %d)" % (k, m, axis))
        options = pb.TopKOptions(dtype=dtype_enum, k=int(k), largest=bool(largest), sorted=bool(sorted),
                                 algorithm=_algorithm(algorithm))
        if offsets is not None:
            options.segment_offsets = self._offsets(offsets, n, data.ndim)
        else:
            options.rows = max(1, n // m)
        keys, special = self._keys_for(data, dtype_enum, nan)
        results = self._count_topk(offsets, n, m, k)
        if n == 0 or results == 0:
            values, indices = data.reshape(-1)[:0], np.zeros(0, dtype=np.int64)
        else:
            values, indices = yield TopKCall(options, keys, results, data.dtype)
            self._check_topk_indices(indices, offsets, m, k)
        if special is not None:  # the canonical NaN / +0.0 sent: the caller's own keys back
            flat = data.reshape(-1)
            if offsets is None:
                values = flat.reshape(-1, m)[np.repeat(np.arange(n // m), k), indices]
            else:
                starts = np.repeat(np.asarray(offsets, dtype=np.int64)[:-1],
                                   np.minimum(np.diff(np.asarray(offsets, dtype=np.int64)), k))
                values = flat[starts + indices]
        if offsets is not None:
            return converted.back(values), converted.indices_back(indices)
        out_shape = tuple(shape[:-1]) + (int(k),)
        values = _arrays.restore_axis(values, out_shape, axis, array.ndim, array.dtype)
        indices = _arrays.restore_axis(indices, out_shape, axis, array.ndim)
        return converted.back(values), converted.indices_back(indices)

    def _nan(self, nan: Optional[str]) -> str:
        nan = self.nan if nan is None else nan
        if nan not in NAN_ORDERS:
            raise ValueError("gpusort: nan must be one of %s, not %r" % (NAN_ORDERS, nan))
        return nan

    def _keys_for(self, data: "npt.NDArray[Any]", dtype_enum: int, nan: Optional[str]
                  ) -> Tuple["npt.NDArray[Any]", Optional["npt.NDArray[np.bool_]"]]:
        """The key bytes to send, and the mask of elements nan="numpy" re-coded (None: as they are)."""
        flat = data.reshape(-1)
        if self._nan(nan) == "numpy":
            special, canonical = _dtypes.numpy_specials(flat, dtype_enum)
            if special is not None:  # (the cast: canonical comes with special)
                return cast("npt.NDArray[Any]", canonical).view(flat.dtype), special
        return flat, None

    @staticmethod
    def _offsets(offsets: "npt.ArrayLike", n: int, ndim: int) -> bytes:
        if ndim != 1:
            raise ValueError("gpusort: offsets (segments) take a 1-D array")
        o = np.asarray(offsets, dtype=np.int64)
        if o.ndim != 1 or o.size < 1 or o[0] != 0 or o[-1] != n or (np.diff(o) < 0).any():
            raise ValueError("gpusort: offsets must start at 0, never decrease and end at len(a) = %d" % n)
        return o.astype("<u8").tobytes()

    @staticmethod
    def _count_topk(offsets: Optional["npt.ArrayLike"], n: int, m: int, k: int) -> int:
        if offsets is None:
            return 0 if m == 0 else (n // m) * int(k)
        return int(np.minimum(np.diff(np.asarray(offsets, dtype=np.int64)), k).sum())

    def _sort(self, a: ArrayLike, axis: Optional[SupportsIndex], descending: bool, stable: bool,
              algorithm: Optional[str], dtype: Optional[str], nan: Optional[str], offsets: Optional["npt.ArrayLike"],
              values: ArrayLike, want_indices: bool, want_keys: bool = True) -> Tuple[Any, Any, Any]:
        return self._drive(self._sort_steps(a, axis, descending, stable, algorithm, dtype, nan, offsets, values,
                                            want_indices, want_keys))

    def _sort_steps(self, a: ArrayLike, axis: Optional[SupportsIndex], descending: bool, stable: bool,
                    algorithm: Optional[str], dtype: Optional[str], nan: Optional[str],
                    offsets: Optional["npt.ArrayLike"], values: ArrayLike, want_indices: bool,
                    want_keys: bool = True) -> "Steps[Tuple[Any, Any, Any]]":
        """(sorted keys or None where not want_keys, positions or None, moved values or None) in the
        caller's kind, the exchange with the server yielded (SortCall). want_keys=False (argsort) spares
        nan="numpy" the gather of the caller's own keys."""
        a, axis, values = _axis(a, axis, values)
        if _device.is_cuda(a):
            return _device_calls.sort(self, a, axis, descending, stable, algorithm, dtype, nan, offsets, values,
                                      want_indices)
        converted = _arrays.to_numpy(a, dtype)
        array = converted.array
        data, shape = _arrays.little_endian_rows(array, axis)
        dtype_enum = _dtypes.dtype_of(data, converted.dtype_name)
        n = data.size
        m = shape[-1] if shape else 0
        keys, special = self._keys_for(data, dtype_enum, nan)
        # nan="numpy" sends canonical NaNs and +0.0; the caller's own keys come back by the positions.
        indices_needed = want_indices or special is not None
        value_data = None
        if values is not None:
            converted_values = _arrays.to_numpy(values, keys=False)
            value_array = converted_values.array
            if value_array.shape != array.shape:
                raise ValueError("gpusort: values must have the keys' shape %s, not %s"
                                 % (array.shape, value_array.shape))
            value_data, _ = _arrays.little_endian_rows(value_array, axis)
            if value_data.dtype.itemsize > 256:
                raise ValueError("gpusort: values of more than 256 bytes each")
        options = pb.SortOptions(dtype=dtype_enum, stable=bool(stable), algorithm=_algorithm(algorithm),
                                 order=pb.ORDER_DESCENDING if descending else pb.ORDER_ASCENDING)
        if offsets is not None:
            options.segment_offsets = self._offsets(offsets, n, data.ndim)
        else:
            options.rows = max(1, n // m) if m else 1
        # Values travel as positions when the answer's keys must be gathered anyway, or when the
        # request would stream (SortStream takes keys and indices only across parts; one stream takes
        # values, but positions keep every path the same).
        if value_data is not None or indices_needed:
            options.payload = pb.PAYLOAD_INDICES
        indices: Optional["npt.NDArray[np.int64]"]
        if n == 0:
            sorted_keys, indices = data.reshape(-1), np.zeros(0, dtype=np.int64)
        else:
            sorted_keys, indices = yield SortCall(options, keys, data.dtype)
            if indices is not None:  # before they gather anything (nan="numpy", values) or reach the caller
                self._check_sort_indices(indices, offsets, m)
        flat = data.reshape(-1)
        if indices is not None and ((special is not None and want_keys) or value_data is not None):
            at = self._flat_positions(offsets, n, m, indices)
            if special is not None and want_keys:
                sorted_keys = flat[at]
        moved = None
        if value_data is not None:  # (values made the call ask for indices: `at` is set)
            moved = converted_values.back(_arrays.restore_axis(value_data.reshape(-1)[at], shape, axis, array.ndim,
                                                               value_array.dtype))
        if offsets is not None:
            return converted.back(sorted_keys) if want_keys else None, converted.indices_back(indices), moved
        positions = None if indices is None else _arrays.restore_axis(indices, shape, axis, array.ndim)
        if not want_keys:
            return None, converted.indices_back(positions), moved
        keys_out = _arrays.restore_axis(sorted_keys, shape, axis, array.ndim, array.dtype)
        return converted.back(keys_out), converted.indices_back(positions), moved

    @staticmethod
    def _check_sort_indices(indices: "npt.NDArray[np.int64]", offsets: Optional["npt.ArrayLike"], m: int) -> None:
        """A Sort's indices each within their row (0 .. m-1) or segment."""
        if offsets is None:
            return _answers.check_indices(indices, m)
        lengths = np.diff(np.asarray(offsets, dtype=np.int64))
        return _answers.check_indices(indices, lengths, lengths)

    @staticmethod
    def _check_topk_indices(indices: "npt.NDArray[np.int64]", offsets: Optional["npt.ArrayLike"], m: int,
                            k: int) -> None:
        """A TopK's indices each within their row, or their segment (which gave min(k, length) of them)."""
        if offsets is None:
            return _answers.check_indices(indices, m)
        lengths = np.diff(np.asarray(offsets, dtype=np.int64))
        return _answers.check_indices(indices, lengths, np.minimum(lengths, k))

    @classmethod
    def _flat_positions(cls, offsets: Optional["npt.ArrayLike"], n: int, m: int,
                        indices: "npt.NDArray[np.int64]") -> "npt.NDArray[np.int64]":
        """Each sorted element's position in the flat array: its index where there is one row (no
        repeat of zeros, no addition: a 16M-key call spent 0.1 s there), else its row's or segment's
        start plus its index."""
        if offsets is None and m == n:
            return indices
        return cls._segment_starts(offsets, n, m) + indices

    @staticmethod
    def _segment_starts(offsets: Optional["npt.ArrayLike"], n: int, m: int) -> "npt.NDArray[np.int64]":
        """For each sorted element, where its row or segment starts in the flat array."""
        if offsets is None:
            if m == 0:  # rows of no element (an empty array): nothing starts anywhere
                return np.zeros(0, dtype=np.int64)
            return np.repeat(np.arange(0, n, m, dtype=np.int64), m)
        o = np.asarray(offsets, dtype=np.int64)
        return np.repeat(o[:-1], np.diff(o))

    _algorithm_of = staticmethod(_algorithm)

    def _unary(self, method: Any, request: Any) -> Any:  # a stub method, its request and reply (generated)
        """One unary call (its ExecutionInfo kept in last_info); GpusortError when it fails."""
        try:
            reply = method(request, timeout=self.timeout, metadata=self._metadata)
        except grpc.RpcError as error:
            raise self._fail(error) from None
        self.last_info = CallInfo.of(reply.info)
        return reply

    @staticmethod
    def _fail(error: Any) -> GpusortError:  # error: a grpc.RpcError (untyped)
        request_id = None
        try:
            for key, value in error.trailing_metadata() or ():
                if key == "x-request-id":
                    request_id = value
        except Exception:  # a stream's error may carry no call metadata
            pass
        return error_from(error.code(), error.details(), request_id)

    # --- shared memory ----------------------------------------------------------------------------

    def _region_call(self, method: int, stub_method: Any, reply_type: Any, request: Any) -> Any:
        """A Sort or TopK on regions: on the shared-memory socket when this client and the server do that
        (shm_calls), else over gRPC."""
        if self._region_calls is not None:
            answer = self._region_calls.call(method, request.SerializeToString(), self.timeout)
            if answer is not None:
                try:
                    reply = reply_type.FromString(answer)
                except DecodeError:  # protobuf's own error is no GpusortError
                    raise BadAnswerError("the server's answer on the shared-memory socket does not parse") from None
                self.last_info = CallInfo.of(reply.info)
                return reply
        return self._unary(stub_method, request)

    @staticmethod
    def _align(offset: int) -> int:
        return (offset + 63) // 64 * 64

    def _region_for(self, size: int) -> ContextManager[_shm.SharedRegion]:
        """A registered region of at least `size` bytes, this call's alone until it returns."""
        with self._regions_lock:
            if self._regions is None:
                # (the cast: use_shm, which brings calls here, needs shm_socket)
                self._regions = _shm.RegionPool(cast(str, self.shm_socket))
            return self._regions.lease(size)

    @staticmethod
    def _put(region: _shm.SharedRegion, offset: int, array: "npt.NDArray[Any]") -> None:
        # (the casts here and in _get: region.buffer is None only once the region is closed)
        np.frombuffer(cast(mmap.mmap, region.buffer), dtype=np.uint8, count=array.nbytes, offset=offset)[:] = \
            np.ascontiguousarray(array).reshape(-1).view(np.uint8)

    @staticmethod
    def _get(region: _shm.SharedRegion, offset: int, count: int, dtype: "npt.DTypeLike",
             into: "npt.DTypeLike") -> "npt.NDArray[Any]":
        """The answer's bytes copied out of the region as `into`, in one copy (a copy and then astype
        cost a 16M-key sort with indices 64 ms more). Caller holds the region's lease."""
        view = np.frombuffer(cast(mmap.mmap, region.buffer), dtype=dtype, count=count, offset=offset)
        return view.astype(into, copy=True)

    def _shm_sort(self, options: Any, keys: "npt.NDArray[Any]", key_dtype: "np.dtype[Any]", with_indices: bool
                  ) -> Tuple["npt.NDArray[Any]", Optional["npt.NDArray[np.int64]"]]:
        n, width = keys.size, keys.dtype.itemsize
        out = self._align(n * width)
        index = self._align(out + n * width)
        with self._region_for(index + (8 * n if with_indices else 0)) as region:
            self._put(region, 0, keys)
            request = pb.SortRequest(options=options, keys_region=region.ref(0, n * width),
                                     output_region=region.ref(out, n * width))
            if with_indices:
                request.indices_region.CopyFrom(region.ref(index, 8 * n))
            self._region_call(_region_calls.SORT, self._stub.Sort, pb.SortResponse, request)
            sorted_keys = self._get(region, out, n, keys.dtype.newbyteorder("<"), key_dtype)
            indices = self._get(region, index, n, "<i8", np.int64) if with_indices else None
        return sorted_keys, indices

    def _shm_topk(self, options: Any, keys: "npt.NDArray[Any]", results: int, key_dtype: "np.dtype[Any]"
                  ) -> Tuple["npt.NDArray[Any]", "npt.NDArray[np.int64]"]:
        n, width = keys.size, keys.dtype.itemsize
        values_at = self._align(n * width)
        index = self._align(values_at + results * width)
        with self._region_for(index + 8 * results) as region:
            self._put(region, 0, keys)
            request = pb.TopKRequest(options=options, keys_region=region.ref(0, n * width),
                                     values_region=region.ref(values_at, results * width),
                                     indices_region=region.ref(index, 8 * results))
            self._region_call(_region_calls.TOPK, self._stub.TopK, pb.TopKResponse, request)
            values = self._get(region, values_at, results, keys.dtype.newbyteorder("<"), key_dtype)
            indices = self._get(region, index, results, "<i8", np.int64)
        return values, indices

    # --- gRPC messages -----------------------------------------------------------------------------
    # (gpusort.aio.Client makes the same calls awaited, with these same requests and answers)

    def fits_one_message(self, exchange: Exchange) -> bool:
        """Whether the exchange's request and answer each fit max_unary_bytes (else it streams)."""
        width = exchange.keys.dtype.itemsize
        if isinstance(exchange, SortCall):
            with_indices = exchange.options.payload == pb.PAYLOAD_INDICES
            answer_bytes = exchange.keys.size * (width + (8 if with_indices else 0))
        else:
            answer_bytes = exchange.results * (width + 8)
        return max(exchange.keys.size * width, answer_bytes) <= self.max_unary_bytes

    def message_request(self, exchange: Exchange) -> Any:
        if isinstance(exchange, SortCall):
            return pb.SortRequest(options=exchange.options, keys=exchange.keys.tobytes())
        return pb.TopKRequest(options=exchange.options, keys=exchange.keys.tobytes())

    def message_answer(self, exchange: Exchange, reply: Any) -> Any:
        """A unary reply as the exchange's answer (last_info kept)."""
        self.last_info = CallInfo.of(reply.info)
        keys = exchange.keys
        wire = keys.dtype.newbyteorder("<")
        if isinstance(exchange, SortCall):
            n = keys.size
            sorted_keys = _answers.array_of(reply.keys, n, wire, "keys").astype(exchange.key_dtype)
            indices = None
            if exchange.options.payload == pb.PAYLOAD_INDICES:
                indices = _answers.array_of(reply.indices, n, "<i8", "indices").astype(np.int64)
            return sorted_keys, indices
        values = _answers.array_of(reply.values, exchange.results, wire, "values")
        indices = _answers.array_of(reply.indices, exchange.results, "<i8", "indices")
        return values.astype(exchange.key_dtype), indices.astype(np.int64)

    def stream_outputs(self, exchange: Exchange) -> Dict[str, "npt.NDArray[Any]"]:
        """The arrays a streamed answer's chunks are copied into, by reply field."""
        keys = exchange.keys
        if isinstance(exchange, SortCall):
            outputs = {"keys": np.empty(keys.size, dtype=keys.dtype)}
            if exchange.options.payload == pb.PAYLOAD_INDICES:
                outputs["indices"] = np.empty(keys.size, dtype=np.int64)
            return outputs
        return {"values": np.empty(exchange.results, dtype=keys.dtype),
                "indices": np.empty(exchange.results, dtype=np.int64)}

    def stream_requests(self, exchange: Exchange) -> Iterator[Any]:
        """The keys in chunks, options and the answer's chunk size on the first."""
        request_type = pb.SortStreamRequest if isinstance(exchange, SortCall) else pb.TopKStreamRequest
        view = memoryview(exchange.keys.tobytes())
        for at in range(0, max(1, len(view)), self.chunk_bytes):
            chunk = bytes(view[at:at + self.chunk_bytes])
            if at == 0:
                yield request_type(options=exchange.options, keys=chunk, response_chunk_bytes=self.chunk_bytes)
            else:
                yield request_type(keys=chunk)

    def stream_answer(self, exchange: Exchange, outputs: Dict[str, "npt.NDArray[Any]"]) -> _answers.StreamAnswer:
        wire = {name: np.dtype("<i8") if name == "indices" else exchange.keys.dtype.newbyteorder("<")
                for name in outputs}
        return _answers.StreamAnswer(outputs, wire)

    def stream_reply(self, answer: _answers.StreamAnswer, reply: Any) -> None:
        """One chunk of a streamed answer taken in (last_info kept from the one that carries it)."""
        answer.take(reply)
        if reply.HasField("info"):
            self.last_info = CallInfo.of(reply.info)

    def stream_result(self, exchange: Exchange, outputs: Dict[str, "npt.NDArray[Any]"]) -> Any:
        if isinstance(exchange, SortCall):
            return outputs["keys"].astype(exchange.key_dtype), outputs.get("indices")
        return outputs["values"].astype(exchange.key_dtype), outputs["indices"]

    def _call_sort(self, options: Any, keys: "npt.NDArray[Any]", key_dtype: "np.dtype[Any]"
                   ) -> Tuple["npt.NDArray[Any]", Optional["npt.NDArray[np.int64]"]]:
        with_indices = options.payload == pb.PAYLOAD_INDICES
        try:
            if self.use_shm:
                return self._shm_sort(options, keys, key_dtype, with_indices)
            if self.use_sockets:
                sorted_keys, indices = _sockets.sort(self, options, keys, with_indices)
                return sorted_keys.astype(key_dtype), indices
            return cast(Tuple[Any, Any], self._over_grpc(SortCall(options, keys, key_dtype)))
        except grpc.RpcError as error:
            raise self._fail(error) from None

    def _call_topk(self, options: Any, keys: "npt.NDArray[Any]", results: int, key_dtype: "np.dtype[Any]"
                   ) -> Tuple["npt.NDArray[Any]", "npt.NDArray[np.int64]"]:
        try:
            if self.use_shm:
                return self._shm_topk(options, keys, results, key_dtype)
            return cast(Tuple[Any, Any], self._over_grpc(TopKCall(options, keys, results, key_dtype)))
        except grpc.RpcError as error:
            raise self._fail(error) from None

    def _over_grpc(self, exchange: Exchange) -> Any:
        """One unary call, or one streaming call whose answer's chunks are copied in at their offsets."""
        sort = isinstance(exchange, SortCall)
        if self.fits_one_message(exchange):
            method = self._stub.Sort if sort else self._stub.TopK
            reply = method(self.message_request(exchange), timeout=self.timeout, metadata=self._metadata)
            return self.message_answer(exchange, reply)
        outputs = self.stream_outputs(exchange)
        answer = self.stream_answer(exchange, outputs)
        method = self._stub.SortStream if sort else self._stub.TopKStream
        replies = method(self.stream_requests(exchange), timeout=self.timeout, metadata=self._metadata)
        try:
            for reply in replies:
                self.stream_reply(answer, reply)
        except BadAnswerError:
            replies.cancel()  # the rest of a broken answer is of no use: stop the server sending it
            raise
        answer.finish()  # the outputs are np.empty: an element no chunk wrote holds stale memory
        return self.stream_result(exchange, outputs)

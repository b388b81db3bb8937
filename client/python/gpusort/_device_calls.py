"""Client.sort / argsort / sort_with / topk for CUDA arrays, through device-memory regions (_device.py).

Each call copies the caller's keys on their GPU into the client's registered region for that GPU (one per
GPU, grown when too small, used by one call at a time), names ranges of it in the request, and copies
the answers on the GPU into new arrays of the caller's kind. The server's rules for device memory hold
(sort.proto, "Device memory"): a Sort takes keys or indices by AUTO or RADIX (rows and segments also
BITONIC; others UNIMPLEMENTED, raised as GpusortError); TopK takes every option.
"""
import threading
from typing import TYPE_CHECKING, Any, Dict, Optional, Tuple, Union, cast

import numpy as np

from . import _answers, _cuda, _device, _dtypes, _region_calls
from .v1 import sort_pb2 as pb

if TYPE_CHECKING:
    import numpy.typing as npt  # for the annotations only: no import at run time

    from ._client import Client


def _align(offset: int) -> int:
    return (offset + 255) // 256 * 256


class DeviceRegions:
    """A Client's device regions, one per GPU, each grown (registered anew) when a call needs more."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        # device -> (its region, None until the first call made it; the lock of its calls)
        self._regions: Dict[int, Tuple[Optional[_device.DeviceRegion], threading.Lock]] = {}

    def take(self, socket_path: str, device: int, size: int) -> "_Held":
        """The region of `device`, holding its lock: use it inside `with`."""
        return _Held(self, socket_path, device, size)

    def close(self) -> None:
        with self._lock:
            for region, _ in self._regions.values():
                if region is not None:  # a first registration that failed leaves (None, lock)
                    region.close()
            self._regions.clear()

    def _get(self, socket_path: str, device: int, size: int) -> Tuple[_device.DeviceRegion, threading.Lock]:
        with self._lock:
            region, lock = self._regions.get(device, (None, None))
            if lock is None:
                lock = threading.Lock()
                self._regions[device] = (None, lock)
        lock.acquire()
        try:
            if region is None or region.size < size:
                if region is not None:
                    region.close()
                region = _device.DeviceRegion(socket_path, max(size, 1 << 21), device)
                with self._lock:
                    self._regions[device] = (region, lock)
        except BaseException:
            lock.release()
            raise
        return region, lock


class _Held:
    def __init__(self, regions: DeviceRegions, socket_path: str, device: int, size: int) -> None:
        self._args = (regions, socket_path, device, size)

    def __enter__(self) -> _device.DeviceRegion:
        regions, socket_path, device, size = self._args
        self.region, self._lock = regions._get(socket_path, device, size)
        return self.region

    def __exit__(self, *exc: object) -> None:
        self._lock.release()


class _Keys:
    """A caller's CUDA keys prepared for a call: the bits to send, their DType, shape with axis last."""

    def __init__(self, client: "Client", a: Any, axis: int, dtype: Optional[str], nan: Optional[str]) -> None:
        self.ops = _device.ops_for(a)
        self.wire, self.np_dtype, name = self.ops.wire(a, axis)
        self.dtype_enum = _dtypes.dtype_for(self.np_dtype, dtype or name)
        self.shape = self.ops.shape(self.wire)
        self.n = int(np.prod(self.shape, dtype=np.int64))
        self.m = self.shape[-1] if self.shape else 0
        self.width = self.np_dtype.itemsize
        self.special, canonical = (None, None)
        if client._nan(nan) == "numpy":
            self.special, canonical = self.ops.numpy_specials(self.wire, self.dtype_enum)
        self.send = canonical if self.special is not None else self.wire
        self.ops.wait(self.send)


def _require_socket(client: "Client") -> None:
    if not client.shm_socket:
        raise ValueError("gpusort: CUDA arrays go through device memory registered with the server: give "
                         "shm_socket= (the server's --shm-socket) or set $GPUSORT_SHM_SOCKET")


def _check_indices(keys: _Keys, indices: Any, limits: Union[int, "npt.NDArray[Any]"],
                   counts: Optional["npt.NDArray[Any]"]) -> None:
    """The server's indices each in [0, limit) of their row (`limits` a number) or segment (`limits` per
    group, `counts` entries each), checked on the GPU before anything is gathered with them. Where the
    caller's library has no GPU operations (a plain __cuda_array_interface__ array) they are handed back
    unchecked: the client never gathers with them there, and checking would copy them to the host."""
    if not keys.ops.can_gather:
        return
    # (the casts: limits an array means one limit per group, and then counts is given too)
    limit = limits if np.ndim(limits) == 0 else keys.ops.repeat_starts(cast("npt.NDArray[Any]", limits),
                                                                       cast("npt.NDArray[Any]", counts))
    _answers.check_device_indices(indices, limit)


def _out(keys: _Keys, region: _device.DeviceRegion, offset: int, count: int, np_dtype: "npt.DTypeLike") -> Any:
    """A new array of the caller's kind holding `count` elements copied from the region at `offset`."""
    out = keys.ops.empty(count, np_dtype)
    _cuda.copy(region.device, keys.ops.pointer(out), region.pointer + offset, count * np.dtype(np_dtype).itemsize)
    return out


def sort(client: "Client", a: Any, axis: int, descending: bool, stable: bool, algorithm: Optional[str],
         dtype: Optional[str], nan: Optional[str], offsets: Optional["npt.ArrayLike"], values: Any,
         want_indices: bool) -> Tuple[Any, Any, Any]:
    """(keys, indices or None, moved values or None) as Client._sort gives for host arrays."""
    _require_socket(client)
    keys = _Keys(client, a, axis, dtype, nan)
    if values is not None:
        if not _device.is_cuda(values):
            raise ValueError("gpusort: keys and values must both be on the host or both on a GPU; these keys "
                             "are a CUDA array and the values are not")
        if not (keys.ops.can_gather and _device.ops_for(values).can_gather):
            raise ValueError(_device.SORT_WITH_NEEDS_GATHER)
    n, w = keys.n, keys.width
    gather = keys.special is not None or values is not None
    options = pb.SortOptions(dtype=keys.dtype_enum, stable=bool(stable), algorithm=client._algorithm_of(algorithm),
                             order=pb.ORDER_DESCENDING if descending else pb.ORDER_ASCENDING)
    if offsets is not None:
        options.segment_offsets = client._offsets(offsets, n, len(keys.shape))
    else:
        options.rows = max(1, n // keys.m) if keys.m else 1
    with_indices = want_indices or gather
    if with_indices:
        options.payload = pb.PAYLOAD_INDICES
    if n == 0:
        sorted_keys, indices = keys.ops.empty(0, keys.np_dtype), keys.ops.empty(0, np.int64)
    else:
        out_at = _align(n * w)
        index_at = _align(out_at + n * w)
        with client._device_regions.take(cast(str, client.shm_socket), keys.ops.device,  # _require_socket: set
                                         index_at + (8 * n if with_indices else 0)) as region:
            _cuda.copy(region.device, region.pointer, keys.ops.pointer(keys.send), n * w)
            request = pb.SortRequest(options=options, keys_region=region.ref(0, n * w),
                                     output_region=region.ref(out_at, n * w))
            if with_indices:
                request.indices_region.CopyFrom(region.ref(index_at, 8 * n))
            client._region_call(_region_calls.SORT, client._stub.Sort, pb.SortResponse, request)
            sorted_keys = _out(keys, region, out_at, n, keys.np_dtype)
            indices = _out(keys, region, index_at, n, np.int64) if with_indices else None
        if indices is not None:
            lengths = None if offsets is None else np.diff(np.asarray(offsets, dtype=np.int64))
            _check_indices(keys, indices, keys.m if offsets is None else cast("npt.NDArray[Any]", lengths), lengths)
    moved = None
    if gather and n:
        positions = indices + _starts_of_sort(keys, offsets)
        if keys.special is not None:
            sorted_keys = keys.ops.gather(keys.ops.flat(keys.wire), positions)
        if values is not None:
            value_ops = _device.ops_for(values)
            value_wire, _, _ = value_ops.wire(values, axis)
            if tuple(value_ops.shape(value_wire)) != keys.shape:
                raise ValueError("gpusort: values must have the keys' shape")
            moved = value_ops.gather(value_ops.flat(value_wire), positions)
            moved = value_ops.reshape_back(moved, keys.shape, axis) if offsets is None else moved
    if offsets is not None:
        return keys.ops.keys_back(sorted_keys), indices, moved
    sorted_keys = keys.ops.reshape_back(keys.ops.keys_back(sorted_keys), keys.shape, axis)
    if indices is not None:
        indices = keys.ops.reshape_back(indices, keys.shape, axis)
    return sorted_keys, (indices if want_indices else None), moved


def _starts_of_sort(keys: _Keys, offsets: Optional["npt.ArrayLike"]) -> Any:
    """Where each sorted element's row or segment starts (device int64), for gathering by position."""
    if offsets is None:
        rows = keys.n // keys.m
        return keys.ops.repeat_starts(np.arange(rows, dtype=np.int64) * keys.m, np.full(rows, keys.m))
    o = np.asarray(offsets, dtype=np.int64)
    return keys.ops.repeat_starts(o[:-1], np.diff(o))


def topk(client: "Client", a: Any, k: int, axis: int, largest: bool, sorted: bool, algorithm: Optional[str],
         dtype: Optional[str], nan: Optional[str], offsets: Optional["npt.ArrayLike"]) -> Tuple[Any, Any]:
    """(values, indices) as Client.topk gives for host arrays."""
    _require_socket(client)
    keys = _Keys(client, a, axis, dtype, nan)
    n, m, w = keys.n, keys.m, keys.width
    if offsets is None and (k < 1 or k > m):
        raise ValueError("gpusort: k = %d is outside 1..%d (the length along axis %d)" % (k, m, axis))
    options = pb.TopKOptions(dtype=keys.dtype_enum, k=int(k), largest=bool(largest), sorted=bool(sorted),
                             algorithm=client._algorithm_of(algorithm))
    if offsets is not None:
        options.segment_offsets = client._offsets(offsets, n, len(keys.shape))
        o = np.asarray(offsets, dtype=np.int64)
        group_starts, group_counts = o[:-1], np.minimum(np.diff(o), k)
    else:
        options.rows = max(1, n // m)
        group_starts = np.arange(n // m, dtype=np.int64) * m
        group_counts = np.full(n // m, int(k))
    # indices count from their row's or segment's start
    group_limits: Union[int, "npt.NDArray[Any]"] = m if offsets is None else np.diff(o)
    results = int(group_counts.sum())
    if n == 0 or results == 0:
        values, indices = keys.ops.empty(0, keys.np_dtype), keys.ops.empty(0, np.int64)
    else:
        values_at = _align(n * w)
        index_at = _align(values_at + results * w)
        socket_path = cast(str, client.shm_socket)  # _require_socket: set
        with client._device_regions.take(socket_path, keys.ops.device, index_at + 8 * results) as region:
            _cuda.copy(region.device, region.pointer, keys.ops.pointer(keys.send), n * w)
            request = pb.TopKRequest(options=options, keys_region=region.ref(0, n * w),
                                     values_region=region.ref(values_at, results * w),
                                     indices_region=region.ref(index_at, 8 * results))
            client._region_call(_region_calls.TOPK, client._stub.TopK, pb.TopKResponse, request)
            values = _out(keys, region, values_at, results, keys.np_dtype)
            indices = _out(keys, region, index_at, results, np.int64)
        _check_indices(keys, indices, group_limits, group_counts)
        if keys.special is not None:  # the canonical NaN / +0.0 sent: the caller's own keys back
            positions = indices + keys.ops.repeat_starts(group_starts, group_counts)
            values = keys.ops.gather(keys.ops.flat(keys.wire), positions)
    if offsets is not None:
        return keys.ops.keys_back(values), indices
    out_shape = tuple(keys.shape[:-1]) + (int(k),)
    return (keys.ops.reshape_back(keys.ops.keys_back(values), out_shape, axis),
            keys.ops.reshape_back(indices, out_shape, axis))


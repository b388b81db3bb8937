"""CUDA arrays (torch and CuPy tensors, anything with __cuda_array_interface__) through the service's
device-memory regions (sort.proto, "Device memory"): the keys are copied once on their GPU into an
exportable allocation registered with the server, the server sorts or selects there, and the answers
are copied on the GPU into arrays of the caller's kind. Nothing crosses to the host but the request and
its ExecutionInfo.

What each kind of caller gets:
  - torch CUDA tensors: any axis (moved on the GPU), bfloat16 by its bits, answers as torch tensors on
    the same device; nan="numpy" and sort_with's values done with torch ops on the GPU.
  - CuPy arrays: the same with CuPy ops, answers as CuPy arrays.
  - Any other object with __cuda_array_interface__: C-contiguous, sorted along its last axis, answers
    as gpusort.DeviceArray (which has __cuda_array_interface__ itself, and .get() for a numpy copy).
"""
import socket
from typing import TYPE_CHECKING, Any, Dict, NoReturn, Optional, Sequence, Tuple

import numpy as np

from . import _cuda, _dtypes, _shm
from .v1 import sort_pb2 as pb

if TYPE_CHECKING:
    import numpy.typing as npt  # for the annotations only: no import at run time


def is_cuda(obj: Any) -> bool:
    """Whether `obj` is an array in GPU memory. torch is asked by its device first: its
    __cuda_array_interface__ raises other errors than AttributeError (bfloat16, tensors that require
    grad), which hasattr would let through."""
    device = getattr(obj, "device", None)
    if getattr(device, "type", None) == "cuda":
        return True
    if type(obj).__module__.split(".")[0] == "torch":
        return False
    try:
        return hasattr(obj, "__cuda_array_interface__")
    except Exception:  # an object whose interface property fails is not one we can read
        return False


class DeviceArray:
    """An answer in device memory, for callers whose arrays are neither torch nor CuPy: `shape`,
    `dtype` (numpy's; bfloat16 answers hold its bits as uint16), `device`, __cuda_array_interface__,
    and get() for a numpy copy on the host."""

    def __init__(self, shape: Sequence[int], dtype: "npt.DTypeLike", device: int) -> None:
        self.shape = tuple(int(d) for d in shape)
        self.dtype = np.dtype(dtype)
        self.size = int(np.prod(self.shape, dtype=np.int64)) if self.shape else 1
        self.nbytes = self.size * self.dtype.itemsize
        self.device = int(device)
        self._buffer = _cuda.DeviceBuffer(self.nbytes, self.device)

    @property
    def pointer(self) -> int:
        return self._buffer.pointer

    @property
    def __cuda_array_interface__(self) -> Dict[str, Any]:
        return {"shape": self.shape, "typestr": self.dtype.str, "data": (self.pointer, False),
                "version": 3, "strides": None, "stream": None}

    def get(self) -> "npt.NDArray[Any]":
        host = np.empty(self.shape, dtype=self.dtype)
        _cuda.to_host(self.device, host.ctypes.data, self.pointer, self.nbytes)
        return host

    def __len__(self) -> int:
        return self.shape[0] if self.shape else 0

    def __repr__(self) -> str:
        return "gpusort.DeviceArray(shape=%s, dtype=%s, device=%d)" % (self.shape, self.dtype, self.device)


class DeviceRegion:
    """`size` bytes of exportable device memory on GPU `device`, registered with the server over its
    shared-memory socket (kind 2) while this object lives."""

    def __init__(self, socket_path: str, size: int, device: int, timeout: float = 10.0) -> None:
        self.size = int(size)
        self.device = int(device)
        self._socket: Optional[socket.socket] = None
        self.memory = _cuda.ExportableAllocation(self.size, self.device)
        fd = self.memory.export_fd()
        try:
            self._socket, self.region_id = _shm.register(socket_path, fd, self.size, _shm.DEVICE_MEMORY, timeout)
        except Exception:
            self.memory.close()
            raise
        finally:
            import os

            os.close(fd)  # the server holds the memory through its own import

    @property
    def pointer(self) -> int:
        return self.memory.pointer

    def ref(self, offset: int, length: int) -> Any:  # a pb.RegionRef (generated: untyped)
        return pb.RegionRef(region_id=self.region_id, offset=int(offset), length=int(length))

    def close(self) -> None:
        if self._socket is not None:
            self._socket.close()  # unregisters
            self._socket = None
        self.memory.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass


class _Torch:
    """A torch CUDA tensor's operations (torch is the caller's, imported only when they use it)."""

    can_gather = True  # has GPU gathers, for nan="numpy" and sort_with's values

    def __init__(self, tensor: Any) -> None:
        import torch

        self.torch = torch
        self.device = tensor.device.index if tensor.device.index is not None else torch.cuda.current_device()
        self.bfloat16 = tensor.dtype == torch.bfloat16

    def wire(self, tensor: Any, axis: int) -> Tuple[Any, "np.dtype[Any]", Optional[str]]:
        """(contiguous tensor with `axis` last, holding the bits that are sent; numpy dtype; dtype name)."""
        moved = tensor.detach().movedim(axis, -1).contiguous()
        if self.bfloat16:
            return moved.view(self.torch.int16), np.dtype(np.int16), "bfloat16"
        return moved, np.dtype(str(moved.dtype).replace("torch.", "")), None

    def shape(self, array: Any) -> Tuple[int, ...]:
        return tuple(array.shape)

    def pointer(self, tensor: Any) -> int:
        return tensor.data_ptr()  # type: ignore[no-any-return]  # torch is untyped

    def wait(self, tensor: Any) -> None:
        """Waits for the work queued to make `tensor` (on torch's current stream)."""
        self.torch.cuda.current_stream(tensor.device).synchronize()

    def empty(self, count: int, np_dtype: "npt.DTypeLike") -> Any:
        return self.torch.empty(int(count), dtype=getattr(self.torch, np.dtype(np_dtype).name),
                                device="cuda:%d" % self.device)

    def keys_back(self, flat: Any) -> Any:
        return flat.view(self.torch.bfloat16) if self.bfloat16 else flat

    def reshape_back(self, flat: Any, shape: Sequence[int], axis: int) -> Any:
        return flat.reshape(tuple(shape)).movedim(-1, axis)

    def numpy_specials(self, wire: Any, dtype_enum: int) -> Tuple[Any, Any]:
        """nan="numpy" on the GPU: (mask, canonical copy) as _dtypes.numpy_specials, or (None, None)."""
        rule = _dtypes.float_bits(dtype_enum)
        if rule is None:
            return None, None
        _, sign, quiet_nan, exponent = rule
        width = wire.element_size()
        bits = wire.view({2: self.torch.int16, 4: self.torch.int32, 8: self.torch.int64}[width])
        magnitude = bits & _to_signed(~sign, width)  # torch has no unsigned 16/32/64-bit arithmetic
        nan = magnitude > _to_signed(exponent, width)
        negative_zero = bits == _to_signed(sign, width)
        special = nan | negative_zero
        if not bool(special.any()):
            return None, None
        canonical = bits.clone()
        canonical[nan] = _to_signed(quiet_nan, width)
        canonical[negative_zero] = 0
        return special, canonical.view(wire.dtype)

    def flat(self, array: Any) -> Any:
        return array.reshape(-1)

    def repeat_starts(self, starts: "npt.NDArray[np.int64]", counts: "npt.NDArray[Any]") -> Any:
        """Each group's start repeated once per element of the group, on the GPU (int64)."""
        on = "cuda:%d" % self.device
        return self.torch.repeat_interleave(self.torch.as_tensor(starts, dtype=self.torch.int64, device=on),
                                            self.torch.as_tensor(counts, dtype=self.torch.int64, device=on))

    def gather(self, flat: Any, positions: Any) -> Any:
        return flat[positions]


class _Cupy(_Torch):
    """The same for CuPy arrays."""

    def __init__(self, array: Any) -> None:
        import cupy

        self.cupy = cupy
        self.device = array.device.id
        self.bfloat16 = False

    def wire(self, array: Any, axis: int) -> Tuple[Any, "np.dtype[Any]", Optional[str]]:
        moved = self.cupy.ascontiguousarray(self.cupy.moveaxis(array, axis, -1))
        return moved, np.dtype(moved.dtype), None

    def pointer(self, array: Any) -> int:
        return array.data.ptr  # type: ignore[no-any-return]  # CuPy is untyped

    def wait(self, array: Any) -> None:
        with self.cupy.cuda.Device(self.device):
            self.cupy.cuda.get_current_stream().synchronize()

    def empty(self, count: int, np_dtype: "npt.DTypeLike") -> Any:
        with self.cupy.cuda.Device(self.device):
            return self.cupy.empty(int(count), dtype=np_dtype)

    def keys_back(self, flat: Any) -> Any:
        return flat

    def reshape_back(self, flat: Any, shape: Sequence[int], axis: int) -> Any:
        return self.cupy.moveaxis(flat.reshape(tuple(shape)), -1, axis)

    def numpy_specials(self, wire: Any, dtype_enum: int) -> Tuple[Any, Any]:
        rule = _dtypes.float_bits(dtype_enum)
        if rule is None:
            return None, None
        bits_type, sign, quiet_nan, exponent = rule
        bits = wire.view(bits_type)
        nan = (bits & bits_type(~sign & ((1 << (8 * bits.dtype.itemsize)) - 1))) > bits_type(exponent)
        negative_zero = bits == bits_type(sign)
        special = nan | negative_zero
        if not bool(special.any()):
            return None, None
        canonical = bits.copy()
        canonical[nan] = bits_type(quiet_nan)
        canonical[negative_zero] = bits_type(0)
        return special, canonical.view(wire.dtype)

    def repeat_starts(self, starts: "npt.NDArray[np.int64]", counts: "npt.NDArray[Any]") -> Any:
        with self.cupy.cuda.Device(self.device):
            return self.cupy.repeat(self.cupy.asarray(starts, dtype=np.int64), self.cupy.asarray(counts))


def _to_signed(value: int, width: int) -> int:
    """An unsigned bit pattern of `width` bytes as the signed integer with the same bits."""
    bits = 8 * width
    value &= (1 << bits) - 1
    return value - (1 << bits) if value >= 1 << (bits - 1) else value


class _Interface(_Torch):
    """Any other __cuda_array_interface__ object: C-contiguous, little-endian, last axis only; answers as
    DeviceArray. nan="numpy" and sort_with's values need GPU array operations it does not have."""

    can_gather = False

    def __init__(self, obj: Any) -> None:
        self.interface: Dict[str, Any] = obj.__cuda_array_interface__
        self.bfloat16 = False
        pointer = int(self.interface["data"][0])
        self.device = _cuda.device_of(pointer) if pointer else 0
        self.dtype = np.dtype(self.interface["typestr"])

    def wire(self, obj: Any, axis: int) -> Tuple[Any, "np.dtype[Any]", Optional[str]]:
        shape = self.shape(obj)
        strides = self.interface.get("strides")
        if strides is not None and tuple(strides) != _c_strides(shape, self.dtype.itemsize):
            raise ValueError("gpusort: a CUDA array other than torch's or CuPy's must be C-contiguous")
        if not shape or axis % len(shape) != len(shape) - 1:
            raise ValueError("gpusort: a CUDA array other than torch's or CuPy's is sorted along its last "
                             "axis only (axis=-1)")
        if self.dtype.byteorder == ">":
            raise ValueError("gpusort: a CUDA array must be little-endian")
        return obj, self.dtype.newbyteorder("="), None

    def shape(self, obj: Any) -> Tuple[int, ...]:
        return tuple(int(d) for d in obj.__cuda_array_interface__["shape"])

    def pointer(self, obj: Any) -> int:
        return int(obj.__cuda_array_interface__["data"][0])

    def wait(self, obj: Any) -> None:
        _cuda.wait_for(obj.__cuda_array_interface__.get("stream"), self.device)

    def empty(self, count: int, np_dtype: "npt.DTypeLike") -> Any:
        return DeviceArray((int(count),), np_dtype, self.device)

    def keys_back(self, flat: Any) -> Any:
        return flat

    def reshape_back(self, flat: Any, shape: Sequence[int], axis: int) -> Any:
        flat.shape = tuple(int(d) for d in shape)
        return flat

    def numpy_specials(self, wire: Any, dtype_enum: int) -> Tuple[Any, Any]:
        if _dtypes.float_bits(dtype_enum) is not None:
            raise ValueError("gpusort: nan='numpy' for CUDA arrays needs torch or CuPy arrays (NaNs are "
                             "re-coded on the GPU); use nan='total'")
        return None, None

    def flat(self, array: Any) -> Any:
        return array

    def gather(self, flat: Any, positions: Any) -> NoReturn:
        raise ValueError(SORT_WITH_NEEDS_GATHER)


SORT_WITH_NEEDS_GATHER = ("gpusort: sort_with for CUDA arrays needs torch or CuPy arrays (the values are "
                          "gathered on the GPU)")


def _c_strides(shape: Sequence[int], itemsize: int) -> Tuple[int, ...]:
    strides, step = [], itemsize
    for d in reversed(shape):
        strides.append(step)
        step *= d
    return tuple(reversed(strides))


def ops_for(obj: Any) -> _Torch:
    """The operations for a CUDA array of whichever library made it."""
    module = type(obj).__module__.split(".")[0]
    if module == "torch":
        return _Torch(obj)
    if module == "cupy":
        return _Cupy(obj)
    if hasattr(obj, "__cuda_array_interface__"):
        return _Interface(obj)
    raise ValueError("gpusort: %s is on a GPU but has no __cuda_array_interface__" % type(obj).__name__)

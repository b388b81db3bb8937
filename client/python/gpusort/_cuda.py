"""The CUDA driver, reached through ctypes, for the device-memory regions (sort.proto, "Device memory").

Only what the client needs: exportable allocations (cuMemCreate with a POSIX-descriptor handle, mapped
into this process and exported with cuMemExportToShareableHandle, the only device memory the server
takes), copies between device pointers, and the device a pointer lives on. No CUDA Python package is
needed: libcuda.so.1 comes with the driver on every GPU node. Every call runs with the device's primary
context pushed (the one torch and CuPy use) and popped again, so a caller's own current context is left
as it was.
"""
import ctypes
import threading
from typing import Any, Dict, Optional, cast

_CU_MEM_ALLOCATION_TYPE_PINNED = 1
_CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR = 1
_CU_MEM_LOCATION_TYPE_DEVICE = 1
_CU_MEM_ALLOC_GRANULARITY_MINIMUM = 0
_CU_MEM_ACCESS_FLAGS_PROT_READWRITE = 3
_CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL = 9
_CU_STREAM_LEGACY = 1  # the legacy default stream's special handle


class CudaError(RuntimeError):
    """A CUDA driver call failed (its name and the driver's error name in the message)."""


class _Location(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("id", ctypes.c_int)]


class _AllocFlags(ctypes.Structure):
    _fields_ = [("compressionType", ctypes.c_ubyte), ("gpuDirectRDMACapable", ctypes.c_ubyte),
                ("usage", ctypes.c_ushort), ("reserved", ctypes.c_ubyte * 4)]


class _AllocationProp(ctypes.Structure):  # CUmemAllocationProp (cuda.h)
    _fields_ = [("type", ctypes.c_int), ("requestedHandleTypes", ctypes.c_int), ("location", _Location),
                ("win32HandleMetaData", ctypes.c_void_p), ("allocFlags", _AllocFlags)]


class _AccessDesc(ctypes.Structure):  # CUmemAccessDesc
    _fields_ = [("location", _Location), ("flags", ctypes.c_int)]


_lock = threading.Lock()
_driver: Optional[ctypes.CDLL] = None
_load_error: Optional[str] = None


def _load() -> ctypes.CDLL:
    """libcuda with cuInit done, or CudaError saying why there is none."""
    global _driver, _load_error
    with _lock:
        if _driver is None and _load_error is None:
            try:
                lib = ctypes.CDLL("libcuda.so.1")
                if lib.cuInit(0) != 0:
                    raise OSError("cuInit failed (no usable GPU)")
                _driver = lib
            except OSError as error:
                _load_error = str(error)
        if _driver is None:
            raise CudaError("the CUDA driver is not usable here: %s" % _load_error)
        return _driver


def _check(result: int, what: str) -> None:
    if result != 0:
        name = ctypes.c_char_p()
        cast(ctypes.CDLL, _driver).cuGetErrorName(result, ctypes.byref(name))
        raise CudaError("%s: %s" % (what, (name.value or b"CUDA error %d" % result).decode()))


# device ordinal -> its primary context, retained once for the life of the process
_contexts: Dict[int, ctypes.c_void_p] = {}


def _primary_context(lib: ctypes.CDLL, device: int) -> ctypes.c_void_p:
    """Device `device`'s primary context, retained on first use and never released: a release that
    drops the last reference destroys the context and every allocation in it (a process without torch
    or CuPy holds no other reference)."""
    with _lock:
        context = _contexts.get(device)
        if context is None:
            handle = ctypes.c_int()
            _check(lib.cuDeviceGet(ctypes.byref(handle), device), "cuDeviceGet(%d)" % device)
            context = ctypes.c_void_p()
            _check(lib.cuDevicePrimaryCtxRetain(ctypes.byref(context), handle), "cuDevicePrimaryCtxRetain")
            _contexts[device] = context
        return context


class _OnDevice:
    """`with _OnDevice(d):` runs driver calls in device d's primary context (the one torch and CuPy use),
    then makes the caller's own context current again."""

    def __init__(self, device: int) -> None:
        self.device = int(device)

    def __enter__(self) -> ctypes.CDLL:
        lib = _load()
        _check(lib.cuCtxPushCurrent_v2(_primary_context(lib, self.device)), "cuCtxPushCurrent")
        return lib

    def __exit__(self, *exc: object) -> None:
        popped = ctypes.c_void_p()
        cast(ctypes.CDLL, _driver).cuCtxPopCurrent_v2(ctypes.byref(popped))


def device_of(pointer: int) -> int:
    """The ordinal of the GPU that device pointer `pointer` lives on (CudaError if it is not one). Any
    context answers for any pointer (unified addressing): device 0's is used."""
    with _OnDevice(0) as lib:
        ordinal = ctypes.c_int(-1)
        _check(lib.cuPointerGetAttribute(ctypes.byref(ordinal), _CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
                                         ctypes.c_uint64(pointer)),
               "cuPointerGetAttribute (is this device memory?)")
        return ordinal.value


def wait_for(stream: Optional[int], device: int) -> None:
    """Waits for the work a producer queued on `stream` (the CUDA array interface's "stream": None, 1
    legacy default, 2 per-thread default, else a handle) before its memory is read elsewhere."""
    if stream is None:
        return
    with _OnDevice(device) as lib:
        _check(lib.cuStreamSynchronize(ctypes.c_void_p(int(stream))), "cuStreamSynchronize")


def copy(device: int, destination: int, source: int, nbytes: int) -> None:
    """Copies nbytes between device pointers (either may live on any GPU that `device` can reach) and
    waits for it: the server works on its own streams, unordered with this process's."""
    if nbytes == 0:
        return
    with _OnDevice(device) as lib:
        _check(lib.cuMemcpyDtoDAsync_v2(ctypes.c_uint64(destination), ctypes.c_uint64(source),
                                        ctypes.c_size_t(nbytes), ctypes.c_void_p(_CU_STREAM_LEGACY)),
               "cuMemcpyDtoDAsync")
        _check(lib.cuStreamSynchronize(ctypes.c_void_p(_CU_STREAM_LEGACY)), "cuStreamSynchronize")


def to_host(device: int, destination_address: int, source: int, nbytes: int) -> None:
    """Copies nbytes from a device pointer to host memory at destination_address (a numpy array's)."""
    if nbytes == 0:
        return
    with _OnDevice(device) as lib:
        _check(lib.cuMemcpyDtoH_v2(ctypes.c_void_p(destination_address), ctypes.c_uint64(source),
                                   ctypes.c_size_t(nbytes)), "cuMemcpyDtoH")


def from_host(device: int, destination: int, source_address: int, nbytes: int) -> None:
    """Copies nbytes from host memory at source_address to a device pointer."""
    if nbytes == 0:
        return
    with _OnDevice(device) as lib:
        _check(lib.cuMemcpyHtoD_v2(ctypes.c_uint64(destination), ctypes.c_void_p(source_address),
                                   ctypes.c_size_t(nbytes)), "cuMemcpyHtoD")


class ExportableAllocation:
    """`size` bytes of device memory on GPU `device` that can be handed to another process as a
    descriptor: cuMemCreate'd, mapped read-write here at `.pointer`. close() (or garbage collection)
    unmaps and releases it; a server that imported it keeps the memory alive until it lets go too."""

    def __init__(self, size: int, device: int) -> None:
        self.device = int(device)
        self.pointer = 0
        self._handle = ctypes.c_uint64(0)
        self._mapped = 0
        with _OnDevice(self.device) as lib:
            prop = _AllocationProp()
            prop.type = _CU_MEM_ALLOCATION_TYPE_PINNED
            prop.requestedHandleTypes = _CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR
            prop.location = _Location(_CU_MEM_LOCATION_TYPE_DEVICE, self.device)
            granularity = ctypes.c_size_t()
            _check(lib.cuMemGetAllocationGranularity(ctypes.byref(granularity), ctypes.byref(prop),
                                                     _CU_MEM_ALLOC_GRANULARITY_MINIMUM),
                   "cuMemGetAllocationGranularity")
            step = max(1, granularity.value)
            mapped = (int(size) + step - 1) // step * step
            _check(lib.cuMemCreate(ctypes.byref(self._handle), ctypes.c_size_t(mapped), ctypes.byref(prop),
                                   ctypes.c_ulonglong(0)), "cuMemCreate (%d bytes on GPU %d)" % (mapped, self.device))
            address = ctypes.c_uint64(0)
            try:
                _check(lib.cuMemAddressReserve(ctypes.byref(address), ctypes.c_size_t(mapped), ctypes.c_size_t(0),
                                               ctypes.c_uint64(0), ctypes.c_ulonglong(0)), "cuMemAddressReserve")
                try:
                    _check(lib.cuMemMap(address, ctypes.c_size_t(mapped), ctypes.c_size_t(0), self._handle,
                                        ctypes.c_ulonglong(0)), "cuMemMap")
                    access = _AccessDesc(_Location(_CU_MEM_LOCATION_TYPE_DEVICE, self.device),
                                         _CU_MEM_ACCESS_FLAGS_PROT_READWRITE)
                    _check(lib.cuMemSetAccess(address, ctypes.c_size_t(mapped), ctypes.byref(access),
                                              ctypes.c_size_t(1)), "cuMemSetAccess")
                except CudaError:
                    lib.cuMemUnmap(address, ctypes.c_size_t(mapped))
                    lib.cuMemAddressFree(address, ctypes.c_size_t(mapped))
                    raise
            except CudaError:
                lib.cuMemRelease(self._handle)
                self._handle = ctypes.c_uint64(0)
                raise
        self.pointer = address.value
        self._mapped = mapped
        self.size = int(size)

    def export_fd(self) -> int:
        """A new descriptor for the allocation (the caller closes it)."""
        with _OnDevice(self.device) as lib:
            fd = ctypes.c_int(-1)
            _check(lib.cuMemExportToShareableHandle(ctypes.byref(fd), self._handle,
                                                    _CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, ctypes.c_ulonglong(0)),
                   "cuMemExportToShareableHandle")
            return fd.value

    def close(self) -> None:
        if self._handle.value == 0 or _driver is None:
            return
        with _OnDevice(self.device) as lib:
            if self.pointer:
                lib.cuMemUnmap(ctypes.c_uint64(self.pointer), ctypes.c_size_t(self._mapped))
                lib.cuMemAddressFree(ctypes.c_uint64(self.pointer), ctypes.c_size_t(self._mapped))
            lib.cuMemRelease(self._handle)
        self._handle = ctypes.c_uint64(0)
        self.pointer = 0

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass


class DeviceBuffer:
    """`size` bytes of plain device memory (cuMemAlloc) on GPU `device`, freed by close() or garbage
    collection: where answers for callers without torch or CuPy go."""

    def __init__(self, size: int, device: int) -> None:
        self.device = int(device)
        self.size = int(size)
        self.pointer = 0
        with _OnDevice(self.device) as lib:
            address = ctypes.c_uint64(0)
            _check(lib.cuMemAlloc_v2(ctypes.byref(address), ctypes.c_size_t(max(1, self.size))),
                   "cuMemAlloc (%d bytes on GPU %d)" % (self.size, self.device))
        self.pointer = address.value

    def close(self) -> None:
        if self.pointer and _driver is not None:
            with _OnDevice(self.device) as lib:
                lib.cuMemFree_v2(ctypes.c_uint64(self.pointer))
        self.pointer = 0

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass

"""Shared memory with a server on this host (sort.proto, "Shared memory"): a sealed memfd registered over
the server's --shm-socket, named by Sort and TopK requests instead of sending the arrays. Only the
requests and ExecutionInfo cross the gRPC socket; the arrays are copied into and out of the region
(one memcpy each way, against encoding them into messages)."""
import fcntl
import mmap
import os
import socket
import struct
import threading
from contextlib import contextmanager
from typing import Any, Iterator, List, Optional, Tuple

import grpc

from .errors import GpusortError, error_from
from .v1 import sort_pb2 as pb

_REQUEST = struct.Struct("<4sHHQQQ")
_REPLY_HEAD = struct.Struct("<4sHHII")


HOST_MEMORY = 1
DEVICE_MEMORY = 2


def register(socket_path: str, fd: int, size: int, kind: int, timeout: Optional[float]
             ) -> Tuple[socket.socket, str]:
    """Registers `size` bytes of the memory behind `fd` (kind HOST_MEMORY: a sealed memfd; DEVICE_MEMORY:
    an exported CUDA allocation) over the server's shared-memory socket. Returns (the open connection,
    which keeps the region registered, and the region id); GpusortError with the server's code when it
    refuses, UNAVAILABLE when the socket cannot be reached."""
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        connection.settimeout(timeout)
        connection.connect(socket_path)
        socket.send_fds(connection, [_REQUEST.pack(b"GSRQ", 1, kind, int(size), 0, 0)], [fd])
        reply = connection.recv(512)
    except OSError as error:
        connection.close()
        raise error_from(grpc.StatusCode.UNAVAILABLE,
                           "shared memory through %s: %s" % (socket_path, error)) from None
    if len(reply) < _REPLY_HEAD.size:
        connection.close()
        raise error_from(grpc.StatusCode.UNAVAILABLE, "the shared-memory socket closed without an answer")
    magic, _, _, code, length = _REPLY_HEAD.unpack_from(reply)
    text = reply[16:16 + min(length, 496)].decode("ascii", "replace")
    if magic != b"GSRP" or code != 0:
        connection.close()
        status = next((s for s in grpc.StatusCode if s.value[0] == code), grpc.StatusCode.UNKNOWN)
        what = "device memory" if kind == DEVICE_MEMORY else "shared memory"
        raise error_from(status, "registering %s: %s" % (what, text))
    return connection, text


class SharedRegion:
    """`size` bytes of memory shared with the server; registered while this object lives (closing the
    socket unregisters it)."""

    def __init__(self, socket_path: str, size: int, timeout: float = 10.0) -> None:
        if size < 1:
            raise ValueError("gpusort: a shared-memory region needs at least 1 byte")
        self.size = int(size)
        self._fd: Optional[int] = os.memfd_create("gpusort-region", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
        self._socket: Optional[socket.socket] = None
        self.buffer: Optional[mmap.mmap]  # None once closed
        try:
            os.ftruncate(self._fd, self.size)
            fcntl.fcntl(self._fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW)
            self.buffer = mmap.mmap(self._fd, self.size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
        except OSError as error:
            self.close()
            raise error_from(grpc.StatusCode.UNAVAILABLE, "shared memory: %s" % error) from None
        try:
            self._socket, self.region_id = register(socket_path, self._fd, self.size, HOST_MEMORY, timeout)
        except GpusortError:
            self.close()
            raise

    def ref(self, offset: int, length: int) -> Any:  # a pb.RegionRef (generated: untyped)
        return pb.RegionRef(region_id=self.region_id, offset=int(offset), length=int(length))

    def close(self) -> None:
        if self._socket is not None:
            self._socket.close()  # unregisters
            self._socket = None
        buffer = getattr(self, "buffer", None)  # unset when __init__ failed before the mmap
        if buffer is not None:
            buffer.close()
            self.buffer = None
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass


class RegionPool:
    """The registered regions of one Client's calls on shared memory. Each call in flight leases its own
    (a free one, replaced by a larger registration where too small), so threads sharing a Client do not
    wait on each other: with one region they waited, the server's time included. As many are kept as
    calls were ever in flight at once, each the size of the largest call it served."""

    def __init__(self, socket_path: str) -> None:
        self._socket_path = socket_path
        self._free: List[SharedRegion] = []
        self._lock = threading.Lock()
        self._closed = False

    @contextmanager
    def lease(self, size: int) -> Iterator[SharedRegion]:
        with self._lock:
            if self._closed:
                raise ValueError("gpusort: the client is closed")  # as a closed file's I/O is
            fitting = [r for r in self._free if r.size >= size]
            region = min(fitting, key=lambda r: r.size) if fitting else (self._free[-1] if self._free else None)
            if region is not None:
                self._free.remove(region)
        if region is None or region.size < size:
            if region is not None:
                region.close()
            region = SharedRegion(self._socket_path, max(size, 1 << 20))
        try:
            yield region
        finally:
            with self._lock:
                keep = not self._closed
                if keep:
                    self._free.append(region)
            if not keep:
                region.close()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            free, self._free = self._free, []
        for region in free:
            region.close()

"""Shared memory with a server on this host (sort.proto, "Shared memory"): a sealed memfd registered over
the server's --shm-socket, named by Sort and TopK requests instead of sending the arrays. Only the
requests and ExecutionInfo cross the gRPC socket; the arrays are copied into and out of the region
(one memcpy each way, against encoding them into messages)."""
import fcntl
import mmap
import os
import socket
import struct

import grpc

from .errors import GpusortError
from .v1 import sort_pb2 as pb

_REQUEST = struct.Struct("<4sHHQQQ")
_REPLY_HEAD = struct.Struct("<4sHHII")


class SharedRegion:
    """`size` bytes of memory shared with the server; registered while this object lives (closing the
    socket unregisters it)."""

    def __init__(self, socket_path, size, timeout=10.0):
        if size < 1:
            raise ValueError("gpusort: a shared-memory region needs at least 1 byte")
        self.size = int(size)
        self._fd = os.memfd_create("gpusort-region", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
        self._socket = None
        try:
            os.ftruncate(self._fd, self.size)
            fcntl.fcntl(self._fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW)
            self.buffer = mmap.mmap(self._fd, self.size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
            self._socket = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
            self._socket.settimeout(timeout)
            self._socket.connect(socket_path)
            socket.send_fds(self._socket, [_REQUEST.pack(b"GSRQ", 1, 1, self.size, 0, 0)], [self._fd])
            reply = self._socket.recv(512)
        except OSError as error:
            self.close()
            raise GpusortError(grpc.StatusCode.UNAVAILABLE,
                               "shared memory through %s: %s" % (socket_path, error)) from None
        if len(reply) < _REPLY_HEAD.size:
            self.close()
            raise GpusortError(grpc.StatusCode.UNAVAILABLE, "the shared-memory socket closed without an answer")
        magic, _, _, code, length = _REPLY_HEAD.unpack_from(reply)
        text = reply[16:16 + min(length, 496)].decode("ascii", "replace")
        if magic != b"GSRP" or code != 0:
            self.close()
            status = next((s for s in grpc.StatusCode if s.value[0] == code), grpc.StatusCode.UNKNOWN)
            raise GpusortError(status, "registering shared memory: " + text)
        self.region_id = text

    def ref(self, offset, length):
        return pb.RegionRef(region_id=self.region_id, offset=int(offset), length=int(length))

    def close(self):
        if self._socket is not None:
            self._socket.close()  # unregisters
            self._socket = None
        if getattr(self, "buffer", None) is not None:
            self.buffer.close()
            self.buffer = None
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

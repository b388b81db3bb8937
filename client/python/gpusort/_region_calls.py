"""Calls on the server's shared-memory socket (sort.proto, "Calls on the shared-memory socket"): a Sort or
TopK on registered regions sent as one record on the Unix socket instead of a gRPC call, which saves the
HTTP/2 round trip and the server's hop to a worker. Connections are kept for later calls, each carrying
one call at a time; calls from several threads take several."""
import socket
import struct
import threading
import time
from typing import List, Optional, Tuple

import grpc

from .errors import error_from

# magic, version, method, timeout_ms, token bytes, request-id bytes, request bytes, reserved u32, reserved u64
_CALL_HEAD = struct.Struct("<4sHHIHHIIQ")
# magic, version, flags, code, message bytes, response bytes, reserved u32, reserved u64
_ANSWER_HEAD = struct.Struct("<4sHHIIIIQ")
_MAX_ANSWER = 32 + 1024 + 65536
_CLOSED_NOT_RUN = 1  # flags bit 0: the connection is closed and the call did not run
_AFTER_REFUSAL = 1.0  # seconds calls past the connections the server took go over gRPC after a refusal
SORT, TOPK = 1, 2


def _status(code: int) -> "grpc.StatusCode":
    return next((s for s in grpc.StatusCode if s.value[0] == code), grpc.StatusCode.UNKNOWN)


class RegionCalls:
    def __init__(self, socket_path: str, token: Optional[str]) -> None:
        self._path = socket_path
        self._token = (token or "").encode()
        self._idle: List[socket.socket] = []  # kept connections
        self._open = 0  # kept and in use
        self._cap: Optional[int] = None  # open connections the server took at its last refusal
        self._ask_again = 0.0  # after a refusal: new connections from then on (time.monotonic())
        self._lock = threading.Lock()
        self._unsupported = False  # the server answered a call as a registration: it takes none

    def close(self) -> None:
        with self._lock:
            for connection in self._idle:
                connection.close()
            self._open -= len(self._idle)
            self._idle = []

    def _take(self) -> Tuple[Optional[socket.socket], bool]:
        """(connection, reused); (None, False) while the server's limits say gRPC."""
        with self._lock:
            if self._idle:
                return self._idle.pop(), True
            if self._cap is not None and self._open >= self._cap and time.monotonic() < self._ask_again:
                return None, False
            self._open += 1
        connection = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            connection.connect(self._path)
        except OSError:
            self._close(connection)
            raise
        return connection, False

    def _close(self, connection: socket.socket) -> None:
        connection.close()
        with self._lock:
            self._open -= 1

    def _refused(self, connection: socket.socket) -> None:
        connection.close()
        with self._lock:
            self._open -= 1
            self._cap = self._open
            self._ask_again = time.monotonic() + _AFTER_REFUSAL

    def _give(self, connection: socket.socket) -> None:
        with self._lock:
            self._idle.append(connection)

    def call(self, method: int, request: bytes, timeout: Optional[float]) -> Optional[bytes]:
        """The serialized response of `request` (bytes); None when the call must go over gRPC instead (the
        server takes no calls on its socket, or refused a new connection: the call did not run).
        GpusortError with the server's status when it answered one."""
        if self._unsupported:
            return None
        timeout_ms = 0 if timeout is None else min(max(1, int(timeout * 1000)), 2 ** 32 - 1)
        record = _CALL_HEAD.pack(b"GSCQ", 1, method, timeout_ms, len(self._token), 0, len(request), 0, 0)
        record += self._token + request
        for attempt in range(2):
            connection, reused = None, False
            try:
                connection, reused = self._take()
                if connection is None:
                    return None  # past the connections the server takes: gRPC
                connection.settimeout(None if timeout is None else timeout + 5)
                connection.send(record)
                answer = connection.recv(_MAX_ANSWER)
            except OSError as error:
                if connection is not None:
                    self._close(connection)
                if reused and attempt == 0 and isinstance(error, (BrokenPipeError, ConnectionResetError)):
                    continue  # closed while idle: once more on a new connection
                if isinstance(error, socket.timeout):
                    raise error_from(grpc.StatusCode.DEADLINE_EXCEEDED,
                                       "no answer from the server within the call's deadline") from None
                raise error_from(grpc.StatusCode.UNAVAILABLE,
                                   "shared-memory socket %s: %s" % (self._path, error)) from None
            if answer[:4] == b"GSRP":  # a registration reply: this server takes no calls there
                self._close(connection)
                self._unsupported = True
                return None
            if len(answer) < _ANSWER_HEAD.size:
                self._close(connection)
                raise error_from(grpc.StatusCode.UNAVAILABLE,
                                   "the server closed its shared-memory socket connection before answering")
            magic, version, flags, code, message, response, _, _ = _ANSWER_HEAD.unpack_from(answer)
            if magic != b"GSCP" or version != 1 or _ANSWER_HEAD.size + message + response != len(answer):
                self._close(connection)
                raise error_from(grpc.StatusCode.INTERNAL, "the server's answer is not an answer record")
            if flags & _CLOSED_NOT_RUN:
                if reused and attempt == 0:
                    self._close(connection)
                    continue  # closed while idle
                self._refused(connection)
                return None  # a new connection refused: gRPC takes the call
            self._give(connection)
            if code != 0:
                raise error_from(_status(code), answer[32:32 + message].decode("ascii", "replace"))
            return answer[32 + message:]
        return None

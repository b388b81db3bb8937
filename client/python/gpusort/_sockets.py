"""Sorts whose keys travel over the server's data port beside the gRPC call (transport="sockets";
sort.proto, "Sockets beside gRPC"): the options over gRPC, the keys and the answer over plain TCP
connections, one per part, side by side. The wire format is gpusort/v1/data_socket.h's."""
import socket
import struct
import threading
from typing import TYPE_CHECKING, Any, List, Optional, Tuple

import grpc
import numpy as np

from .errors import BadAnswerError, GpusortError, error_from
from .info import CallInfo
from .v1 import sort_pb2 as pb

if TYPE_CHECKING:
    import numpy.typing as npt  # for the annotations only: no import at run time

    from ._client import Client

_REQUEST = struct.Struct("<4sHHIIQ32sQ")  # magic, version, 0, index, 0, bytes, ticket, 0
_REPLY = struct.Struct("<4sHHIIQQ")  # magic, version, 0, code, text_length, key_bytes, index_bytes
_MIN_PART_BYTES = 1 << 20  # smaller parts cost more than they save
_MAX_PARTS = 64


def data_host(target: str) -> str:
    """Where the data port is: the gRPC target's host (loopback for a Unix socket)."""
    if target.startswith("unix:"):
        return "127.0.0.1"
    if target.startswith("dns:"):
        target = target.rsplit("/", 1)[-1]
    if target.startswith("["):
        return target[1:].split("]", 1)[0]
    return target.rsplit(":", 1)[0]


def _receive_into(conn: socket.socket, view: memoryview) -> None:
    while len(view):
        got = conn.recv_into(view)
        if got == 0:
            raise ConnectionError("the data connection ended before the part's answer did")
        view = view[got:]


def _run_part(host: str, port: int, ticket: bytes, index: int, keys_bytes: memoryview, keys_out: "npt.NDArray[Any]",
              indices_out: Optional["npt.NDArray[np.int64]"], timeout: Optional[float]) -> None:
    """One part: header and keys out, reply and answer in (straight into the output arrays)."""
    with socket.create_connection((host, port), timeout=timeout) as conn:
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            conn.sendall(_REQUEST.pack(b"GSDQ", 1, 0, index, 0, len(keys_bytes), ticket, 0))
            conn.sendall(keys_bytes)
        except OSError:
            pass  # a refusal may have come while the keys were going out: the reply says why
        header = bytearray(_REPLY.size)
        _receive_into(conn, memoryview(header))
        magic, version, _, code, text_length, key_bytes, index_bytes = _REPLY.unpack(header)
        if magic != b"GSDR" or version != 1:
            raise BadAnswerError("the data port answered something that is not a reply")
        if code != 0:
            reason = bytearray(min(text_length, 1024))
            _receive_into(conn, memoryview(reason))
            status = {c.value[0]: c for c in grpc.StatusCode}.get(code, grpc.StatusCode.UNKNOWN)
            raise error_from(status, "data port: " + reason.decode("ascii", "replace"))
        if key_bytes != keys_out.nbytes or index_bytes != (0 if indices_out is None else indices_out.nbytes):
            raise BadAnswerError("the data port's answer does not have the part's size")
        # The ignores: numpy's stubs (1.24) do not declare ndarray's buffer protocol, which memoryview takes.
        _receive_into(conn, memoryview(keys_out).cast("B"))  # type: ignore[arg-type]
        if indices_out is not None:
            _receive_into(conn, memoryview(indices_out).cast("B"))  # type: ignore[arg-type]


def sort(client: "Client", options: Any, keys: "npt.NDArray[Any]", with_indices: bool
         ) -> Tuple["npt.NDArray[Any]", Optional["npt.NDArray[np.int64]"]]:
    """The sorted keys (little-endian, keys.dtype) and, with_indices, their int64 positions."""
    n, width = keys.size, keys.dtype.itemsize
    raw = memoryview(np.ascontiguousarray(keys)).cast("B")  # type: ignore[arg-type]  # as in _run_part
    parts = max(1, min(client.socket_parts, _MAX_PARTS, len(raw) // _MIN_PART_BYTES))
    call = client._stub.SortOnSockets(pb.SocketSortRequest(options=options, total_keys=n, parts=parts),
                                      timeout=client.timeout, metadata=client._metadata)
    # A pb.SocketSortEvent (Any: generated, and narrowing does not reach run() below); a stream that ends
    # OK before its first event: None, not StopIteration.
    first: Any = next(call, None)
    if first is None:
        raise BadAnswerError("the server's SortOnSockets call ended without its first event")
    if len(first.ticket) != 32 or not 0 < first.port < 65536:
        call.cancel()
        raise BadAnswerError("the server's SortOnSockets answer has no ticket and port")
    keys_out = np.empty(n, dtype=keys.dtype)
    indices_out = np.empty(n, dtype="<i8") if with_indices else None
    # In the order they came: the first is the cause, later ones may follow from cancel().
    failures: List[Exception] = []
    lock = threading.Lock()
    host = data_host(client.target)

    def run(i: int) -> None:
        begin, end = n * i // parts, n * (i + 1) // parts
        try:
            _run_part(host, first.port, first.ticket, i, raw[begin * width:end * width], keys_out[begin:end],
                      None if indices_out is None else indices_out[begin:end], client.timeout)
        except (OSError, GpusortError) as error:
            with lock:
                failures.append(error)
            call.cancel()  # the server may never have heard of this part: do not leave it waiting

    threads = [threading.Thread(target=run, args=(i,)) for i in range(1, parts)]
    for t in threads:
        t.start()
    run(0)
    for t in threads:
        t.join()
    failure = failures[0] if failures else None
    try:
        for event in call:
            if event.HasField("info"):
                client.last_info = CallInfo.of(event.info)
    except grpc.RpcError as error:
        if failure is None or error.code() != grpc.StatusCode.CANCELLED:
            raise
    if isinstance(failure, GpusortError):
        raise failure
    if failure is not None:
        raise error_from(grpc.StatusCode.UNAVAILABLE, "data connection: %s" % failure)
    return keys_out, indices_out

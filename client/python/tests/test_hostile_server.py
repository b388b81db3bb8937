"""The client against servers that answer OK with what sort.proto does not allow (issue 41): each bad
answer must end in BadAnswerError (a GpusortError, DATA_LOSS), never numpy's ValueError or IndexError, a
StopIteration, wrong values gathered without a word, or an np.empty output handed back unfilled.

No gpusort-server is needed: a fake gRPC SortService runs in this process, and so do a fake
shared-memory socket (registrations and calls, writing answers into the caller's memfd) and a fake
device-memory path (numpy arrays standing in for CUDA ones). Each serves a correct answer unless the
test damages it, so the positive tests show the checks let right answers through.
"""
import contextlib
import ctypes
import mmap
import os
import socket
import struct
import tempfile
import threading
from concurrent import futures

import grpc
import numpy as np
import pytest

import gpusort
from gpusort import _answers, _cuda, _device, _device_calls
from gpusort.v1 import sort_pb2 as pb
from gpusort.v1 import sort_pb2_grpc as pb_grpc

CHUNK = 100  # elements per answer chunk of the fake's streams
INFO = pb.ExecutionInfo(algorithm=pb.ALGORITHM_CPU, backend=pb.BACKEND_CPU, device="fake", server_seconds=0.001)


# --- what a correct server answers (int32 keys, ascending sorts, largest-first top-k) ------------------

def _groups(segment_offsets, rows, n):
    """(starts, lengths) of the rows or segments a request cuts its n keys into."""
    if segment_offsets:
        o = np.frombuffer(segment_offsets, dtype="<u8").astype(np.int64)
        return o[:-1], np.diff(o)
    rows = max(1, rows)
    return np.arange(rows, dtype=np.int64) * (n // rows), np.full(rows, n // rows, dtype=np.int64)


def correct_sort(options, keys):
    """(sorted keys, int64 indices from each row's or segment's start)."""
    starts, lengths = _groups(options.segment_offsets, options.rows, keys.size)
    indices = np.concatenate([np.argsort(keys[s:s + l], kind="stable") for s, l in zip(starts, lengths)])
    indices = indices.astype(np.int64)
    return keys[np.repeat(starts, lengths) + indices], indices


def correct_topk(options, keys):
    """(values, int64 indices) of each row's or segment's k largest, ties to the earlier position."""
    starts, lengths = _groups(options.segment_offsets, options.rows, keys.size)
    k = int(options.k)
    picks = [np.argsort(-keys[s:s + l].astype(np.int64), kind="stable")[:k] for s, l in zip(starts, lengths)]
    indices = np.concatenate(picks).astype(np.int64)
    return keys[np.repeat(starts, np.minimum(lengths, k)) + indices], indices


def int32_keys(raw):
    return np.frombuffer(raw, dtype="<i4")


def sort_response(request):
    keys, indices = correct_sort(request.options, int32_keys(request.keys))
    response = pb.SortResponse(keys=keys.astype("<i4").tobytes(), info=INFO)
    if request.options.payload == pb.PAYLOAD_INDICES:
        response.indices = indices.astype("<i8").tobytes()
    return response


def topk_response(request):
    values, indices = correct_topk(request.options, int32_keys(request.keys))
    return pb.TopKResponse(values=values.astype("<i4").tobytes(), indices=indices.astype("<i8").tobytes(), info=INFO)


def stream_chunks(message_type, fields):
    """fields ({reply field: array}) cut into chunks of CHUNK elements at their offsets, `info` on the last."""
    count = next(iter(fields.values())).size
    chunks = []
    for offset in range(0, count, CHUNK):
        data = {name: array[offset:offset + CHUNK].tobytes() for name, array in fields.items()}
        chunks.append(message_type(offset=offset, **data))
    chunks[-1].info.CopyFrom(INFO)
    return chunks


def sort_stream(requests):
    options = requests[0].options
    keys, indices = correct_sort(options, int32_keys(b"".join(r.keys for r in requests)))
    fields = {"keys": keys.astype("<i4")}
    if options.payload == pb.PAYLOAD_INDICES:
        fields["indices"] = indices.astype("<i8")
    return stream_chunks(pb.SortStreamResponse, fields)


def topk_stream(requests):
    values, indices = correct_topk(requests[0].options, int32_keys(b"".join(r.keys for r in requests)))
    return stream_chunks(pb.TopKStreamResponse, {"values": values.astype("<i4"), "indices": indices.astype("<i8")})


class FakeSortService(pb_grpc.SortServiceServicer):
    """Correct answers, passed through `damage` (a unary response, or a stream's list of chunks) first."""

    def __init__(self):
        self.reset()

    def reset(self):
        self.damage = lambda answer: answer
        self.socket_events = []  # SortOnSockets: the events it sends, then it ends OK

    def Sort(self, request, context):
        return self.damage(sort_response(request))

    def TopK(self, request, context):
        return self.damage(topk_response(request))

    def SortStream(self, request_iterator, context):
        return iter(self.damage(sort_stream(list(request_iterator))))

    def TopKStream(self, request_iterator, context):
        return iter(self.damage(topk_stream(list(request_iterator))))

    def SortOnSockets(self, request, context):
        return iter(self.socket_events)


@pytest.fixture(scope="module")
def fake_server():
    service = FakeSortService()
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    pb_grpc.add_SortServiceServicer_to_server(service, server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        yield service, "127.0.0.1:%d" % port
    finally:
        server.stop(grace=None)


@pytest.fixture
def fake(fake_server):
    service, _ = fake_server
    service.reset()
    yield service
    service.reset()


@pytest.fixture(scope="module")
def unary(fake_server):
    with gpusort.Client(fake_server[1], timeout=10, transport="grpc") as client:
        yield client


@pytest.fixture(scope="module")
def streaming(fake_server):
    # max_unary_bytes=0: every call streams
    with gpusort.Client(fake_server[1], timeout=10, transport="grpc", max_unary_bytes=0) as client:
        yield client


def bad_answer(call, *args, **kwargs):
    """Runs the call: it must raise BadAnswerError (DATA_LOSS). Any other exception fails the test as it
    is; a call that returns fails it too."""
    with pytest.raises(gpusort.BadAnswerError) as caught:
        call(*args, **kwargs)
    assert isinstance(caught.value, gpusort.GpusortError)
    assert caught.value.code == grpc.StatusCode.DATA_LOSS
    return caught.value


def keys(n, seed=1):
    return np.random.default_rng(seed).integers(-1000, 1000, n).astype(np.int32)


def setter(field, transform):
    """A damage that replaces one field of a unary answer by transform(its bytes)."""
    def damage(response):
        setattr(response, field, transform(getattr(response, field)))
        return response
    return damage


def indices_set(position, value):
    """A damage that sets indices[position] of a unary answer to `value`."""
    def transform(raw):
        indices = np.frombuffer(raw, dtype="<i8").copy()
        indices[position] = value
        return indices.tobytes()
    return setter("indices", transform)


# --- correct answers pass -------------------------------------------------------------------------------

def test_correct_answers_pass(fake, unary, streaming):
    a = keys(1000)
    assert np.array_equal(unary.sort(a), np.sort(a))
    assert np.array_equal(unary.argsort(a, stable=True), np.argsort(a, kind="stable"))
    assert np.array_equal(streaming.sort(a), np.sort(a))
    assert np.array_equal(streaming.argsort(a, stable=True), np.argsort(a, kind="stable"))
    rows = a.reshape(4, 250)
    assert np.array_equal(unary.argsort(rows, stable=True), np.argsort(rows, axis=-1, kind="stable"))
    k, v = unary.sort_with(rows, np.arange(1000).reshape(4, 250), stable=True)
    order = np.argsort(rows, axis=-1, kind="stable")
    assert np.array_equal(v, order + np.arange(4)[:, None] * 250)
    offsets = [0, 10, 10, 400, 1000]
    want = np.concatenate([np.argsort(a[s:e], kind="stable") for s, e in zip(offsets, offsets[1:])])
    assert np.array_equal(unary.argsort(a, stable=True, offsets=offsets), want)
    for client in (unary, streaming):
        values, indices = client.topk(rows, 7)
        assert np.array_equal(indices, np.argsort(-rows.astype(np.int64), axis=-1, kind="stable")[:, :7])
        assert np.array_equal(values, np.take_along_axis(rows, indices, axis=-1))
    values, indices = unary.topk(a, 50, offsets=offsets)
    assert indices.size == 10 + 0 + 50 + 50
    assert unary.last_info.device == "fake"


# --- unary answers of the wrong length ------------------------------------------------------------------

@pytest.mark.parametrize("damage", [
    setter("keys", lambda raw: raw[:-4]),        # one key short
    setter("keys", lambda raw: raw + raw[:4]),   # one key too many
    setter("keys", lambda raw: raw[:-2]),        # ends inside a key
    setter("keys", lambda raw: b""),             # none at all
], ids=["short", "long", "partial", "empty"])
def test_sort_keys_of_the_wrong_length(fake, unary, damage):
    fake.damage = damage
    bad_answer(unary.sort, keys(1000).reshape(10, 100))


@pytest.mark.parametrize("damage", [
    setter("indices", lambda raw: raw[:-8]),
    setter("indices", lambda raw: raw + raw[:8]),
    setter("indices", lambda raw: raw[:-3]),
    setter("indices", lambda raw: b""),
], ids=["short", "long", "partial", "empty"])
def test_argsort_indices_of_the_wrong_length(fake, unary, damage):
    fake.damage = damage
    bad_answer(unary.argsort, keys(1000).reshape(10, 100))


@pytest.mark.parametrize("damage", [
    setter("values", lambda raw: raw[:-4]),
    setter("values", lambda raw: raw + raw[:4]),
    setter("indices", lambda raw: raw[:-8]),
    setter("indices", lambda raw: raw + raw[:8]),
    setter("indices", lambda raw: raw[:-1]),
], ids=["values-short", "values-long", "indices-short", "indices-long", "indices-partial"])
def test_topk_answers_of_the_wrong_length(fake, unary, damage):
    fake.damage = damage
    bad_answer(unary.topk, keys(1000).reshape(10, 100), 5)


# --- indices outside their row or segment --------------------------------------------------------------

@pytest.mark.parametrize("value", [1000, 10 ** 12, -1, -(2 ** 63)], ids=["n", "huge", "minus-one", "most-negative"])
def test_argsort_index_out_of_range(fake, unary, value):
    fake.damage = indices_set(17, value)
    bad_answer(unary.argsort, keys(1000))


def test_argsort_index_in_another_row(fake, unary):
    """Index 100 of a row of 100 lies inside the flat array: only a per-row check sees it."""
    fake.damage = indices_set(5, 100)
    bad_answer(unary.argsort, keys(1000).reshape(10, 100))


def test_argsort_index_past_its_segment(fake, unary):
    """Segment [10, 400) has 390 keys: index 390 would name key 400, of the next segment."""
    fake.damage = indices_set(10, 390)
    bad_answer(unary.argsort, keys(1000), offsets=[0, 10, 10, 400, 1000])


def test_sort_with_does_not_gather_from_another_row(fake, unary):
    """Without the check sort_with took row 1's value for row 0 and returned it as if nothing happened."""
    fake.damage = indices_set(0, 100)
    bad_answer(unary.sort_with, keys(1000).reshape(10, 100), np.arange(1000).reshape(10, 100))


@pytest.mark.parametrize("value", [1000, -5], ids=["past-end", "negative"])
def test_sort_with_and_numpy_nans_refuse_bad_indices(fake, unary, value):
    """The two gathers by the answer's positions: values (sort_with) and the caller's own floats
    (nan="numpy" re-codes NaNs and -0.0 and takes the keys back by position)."""
    fake.damage = indices_set(3, value)
    bad_answer(unary.sort_with, keys(1000), np.arange(1000))
    floats = keys(1000).astype(np.float32)
    floats[::7] = np.nan
    bad_answer(unary.sort, floats, nan="numpy")  # the fake orders their bits as int32: no matter


@pytest.mark.parametrize("value", [100, -1, 2 ** 40], ids=["m", "negative", "huge"])
def test_topk_index_out_of_its_row(fake, unary, value):
    fake.damage = indices_set(8, value)  # row 1's fourth result (k = 5)
    bad_answer(unary.topk, keys(1000).reshape(10, 100), 5)


def test_topk_index_past_its_segment(fake, unary):
    """Segment [0, 3) gives 3 results (k = 5): index 3 would be the next segment's first key."""
    fake.damage = indices_set(2, 3)
    bad_answer(unary.topk, keys(1000), 5, offsets=[0, 3, 3, 1000])


def test_topk_numpy_nans_refuse_bad_indices(fake, unary):
    """nan="numpy" top-k takes the caller's values back by the answer's positions."""
    fake.damage = indices_set(0, 100)
    floats = keys(1000).astype(np.float32).reshape(10, 100)
    floats[:, ::9] = np.nan
    bad_answer(unary.topk, floats, 5, nan="numpy")


# --- answer streams that skip, repeat or spill elements ----------------------------------------------

def _offsets_to(value):
    def damage(chunks):
        for chunk in chunks:
            chunk.offset = value
        return chunks
    return damage


def _shift(number, by):
    def damage(chunks):
        chunks[number].offset += by
        return chunks
    return damage


def _trim(number, field, nbytes):
    def damage(chunks):
        setattr(chunks[number], field, getattr(chunks[number], field)[:-nbytes])
        return chunks
    return damage


def _past_the_end(chunks):
    extra = type(chunks[0])(offset=chunks[-1].offset + CHUNK)
    extra.keys = chunks[0].keys
    return chunks + [extra]


STREAM_DAMAGES = {
    "no-chunks": lambda chunks: [pb.SortStreamResponse(info=INFO)],
    "half": lambda chunks: chunks[:len(chunks) // 2],
    "all-at-zero": _offsets_to(0),
    "overlap": _shift(1, -1),
    "gap": _shift(1, +1),
    "out-of-range": _shift(9, 10 ** 6),
    "odd-sized": _trim(3, "keys", 2),
    "past-the-end": _past_the_end,
    "last-missing": lambda chunks: chunks[:-1],
}


@pytest.mark.parametrize("name", sorted(STREAM_DAMAGES))
def test_sort_stream_must_cover_every_element_once(fake, streaming, name):
    fake.damage = STREAM_DAMAGES[name]
    bad_answer(streaming.sort, keys(1000))


@pytest.mark.parametrize("damage", [
    _trim(2, "indices", 8),   # the chunk's indices hold one element fewer than its keys
    _trim(4, "indices", 3),   # its indices end inside an element
    _offsets_to(0),
], ids=["fields-disagree", "odd-indices", "all-at-zero"])
def test_argsort_stream_checks_indices_too(fake, streaming, damage):
    fake.damage = damage
    bad_answer(streaming.argsort, keys(1000))


def test_argsort_stream_index_out_of_range(fake, streaming):
    def damage(chunks):
        indices = np.frombuffer(chunks[2].indices, dtype="<i8").copy()
        indices[0] = -3
        chunks[2].indices = indices.tobytes()
        return chunks
    fake.damage = damage
    bad_answer(streaming.argsort, keys(1000))


@pytest.mark.parametrize("damage", [
    lambda chunks: chunks[:len(chunks) // 2],
    lambda chunks: [pb.TopKStreamResponse(info=INFO)],
    _offsets_to(0),
    _trim(1, "values", 4),
], ids=["half", "no-chunks", "all-at-zero", "fields-disagree"])
def test_topk_stream_must_cover_every_result_once(fake, streaming, damage):
    fake.damage = damage
    bad_answer(streaming.topk, keys(1000).reshape(5, 200), 200)  # 1000 results: 10 chunks


# --- SortOnSockets ----------------------------------------------------------------------------------

def test_sort_on_sockets_without_a_first_event(fake, fake_server):
    fake.socket_events = []  # the call ends OK having sent nothing
    with gpusort.Client(fake_server[1], timeout=10, transport="sockets") as sockets:
        bad_answer(sockets.sort, keys(1000))
        fake.socket_events = [pb.SocketSortEvent(ticket=b"short", port=1)]
        bad_answer(sockets.sort, keys(1000))


# --- shared memory: answers written into the caller's regions ---------------------------------------

def _region_bytes(memory, ref):
    return np.frombuffer(memory[ref.region_id], dtype=np.uint8, count=ref.length, offset=ref.offset)


def answer_in_regions(method, request, memory, damage_indices):
    """What a server does for a call on regions: reads the keys, writes the answer (its indices passed
    through damage_indices) where the request says. memory: {region id: writable buffer}."""
    keys_in = _region_bytes(memory, request.keys_region).view("<i4")
    if method == 1:  # Sort
        sorted_keys, indices = correct_sort(request.options, keys_in.copy())
        _region_bytes(memory, request.output_region)[:] = sorted_keys.astype("<i4").view(np.uint8)
        if request.HasField("indices_region"):
            indices = damage_indices(indices)
            _region_bytes(memory, request.indices_region)[:] = indices.astype("<i8").view(np.uint8)
        return pb.SortResponse(info=INFO)
    values, indices = correct_topk(request.options, keys_in.copy())
    _region_bytes(memory, request.values_region)[:] = values.astype("<i4").view(np.uint8)
    _region_bytes(memory, request.indices_region)[:] = damage_indices(indices).astype("<i8").view(np.uint8)
    return pb.TopKResponse(info=INFO)


class FakeShmSocket:
    """A server's --shm-socket: registers memfds (mapping them) and answers calls on them."""

    _CALL_HEAD = struct.Struct("<4sHHIHHIIQ")

    def __init__(self, path):
        self.path = path
        self.memory = {}
        self.damage_indices = lambda indices: indices
        self.garbage = None  # bytes to answer instead of a response
        self.park = None  # (parked, release) Events: the next call sets parked, then waits for release
        self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self._listener.bind(path)
        self._listener.listen(16)
        threading.Thread(target=self._accept, daemon=True).start()

    def close(self):
        self._listener.close()

    def _accept(self):
        while True:
            try:
                connection, _ = self._listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(connection,), daemon=True).start()

    def _serve(self, connection):
        with connection:
            while True:
                try:
                    message, fds, _, _ = socket.recv_fds(connection, 1 << 18, 4)
                except OSError:
                    return
                if not message:
                    return
                if message[:4] == b"GSRQ":
                    self._register(connection, message, fds[0])
                else:
                    for fd in fds:
                        os.close(fd)
                    self._call(connection, message)

    def _register(self, connection, message, fd):
        size = struct.unpack_from("<Q", message, 8)[0]
        region_id = "%032x" % (len(self.memory) + 1)
        self.memory[region_id] = mmap.mmap(fd, size)
        os.close(fd)
        connection.send(struct.pack("<4sHHII", b"GSRP", 1, 0, 0, 32) + region_id.encode().ljust(496, b"\0"))

    def _call(self, connection, message):
        _, _, method, _, token, request_id, length, _, _ = self._CALL_HEAD.unpack_from(message)
        raw = message[32 + token + request_id:32 + token + request_id + length]
        request = (pb.SortRequest if method == 1 else pb.TopKRequest).FromString(raw)
        park, self.park = self.park, None
        if park is not None:
            park[0].set()
            park[1].wait(20)
        if self.garbage is not None:
            response = self.garbage
        else:
            response = answer_in_regions(method, request, self.memory, self.damage_indices).SerializeToString()
        connection.send(struct.pack("<4sHHIIIIQ", b"GSCP", 1, 0, 0, 0, len(response), 0, 0) + response)


@pytest.fixture
def shm():
    work = tempfile.mkdtemp(prefix="gpusort-hostile-")
    server = FakeShmSocket(os.path.join(work, "shm.sock"))
    # The gRPC target is never reached: calls on regions go as records on the socket.
    with gpusort.Client("127.0.0.1:1", shm_socket=server.path, timeout=10) as client:
        yield server, client
    server.close()
    os.unlink(server.path)
    os.rmdir(work)


def test_shared_memory_correct_answers_pass(shm):
    _, client = shm
    a = keys(1000).reshape(4, 250)
    assert np.array_equal(client.argsort(a, stable=True), np.argsort(a, axis=-1, kind="stable"))
    values, indices = client.topk(a, 6)
    assert np.array_equal(indices, np.argsort(-a.astype(np.int64), axis=-1, kind="stable")[:, :6])


def test_a_call_the_server_holds_does_not_hold_up_another_thread_on_the_same_client(shm):
    """One thread's call parked at the server; another thread's call on the same Client is answered
    meanwhile, from its own region (one region for the Client made the second wait for the first), and
    the parked call's answer is its own once released."""
    server, client = shm
    parked, release = threading.Event(), threading.Event()
    server.park = (parked, release)
    held = keys(999, seed=5)
    answers = []
    first = threading.Thread(target=lambda: answers.append(client.sort(held)), daemon=True)
    first.start()
    assert parked.wait(10)
    other = keys(1000, seed=6)
    second = threading.Thread(target=lambda: answers.append(client.sort(other)), daemon=True)
    second.start()
    second.join(5)
    finished_while_parked = not second.is_alive()
    release.set()
    first.join(10)
    second.join(10)
    assert finished_while_parked
    assert len(answers) == 2
    assert np.array_equal(answers[0], np.sort(other)) and np.array_equal(answers[1], np.sort(held))


@pytest.mark.parametrize("value", [250, -1], ids=["m", "negative"])
def test_shared_memory_indices_out_of_their_row(shm, value):
    server, client = shm

    def damage(indices):
        indices[260] = value  # row 1's eleventh
        return indices
    server.damage_indices = damage
    bad_answer(client.argsort, keys(1000).reshape(4, 250))
    bad_answer(client.sort_with, keys(1000).reshape(4, 250), np.arange(1000).reshape(4, 250))


def test_shared_memory_topk_index_out_of_its_row(shm):
    server, client = shm

    def damage(indices):
        indices[7] = 250
        return indices
    server.damage_indices = damage
    bad_answer(client.topk, keys(1000).reshape(4, 250), 6)


def test_shared_memory_answer_that_does_not_parse(shm):
    server, client = shm
    server.garbage = b"\x0a\xff\xff\xff\xff\x0f"  # field 1, a length past the end of the bytes
    bad_answer(client.sort, keys(1000))
    bad_answer(client.topk, keys(1000), 3)


# --- device memory: the client's checks before it gathers on the GPU ------------------------------

class NumpyOps:
    """_device's operations on numpy arrays, standing in for torch's or CuPy's on a GPU."""

    can_gather = True
    device = 0
    bfloat16 = False

    def wire(self, array, axis):
        moved = np.ascontiguousarray(np.moveaxis(array, axis, -1))
        return moved, moved.dtype, None

    def shape(self, array):
        return tuple(array.shape)

    def pointer(self, array):
        return array.ctypes.data

    def wait(self, array):
        pass

    def empty(self, count, np_dtype):
        return np.empty(int(count), dtype=np_dtype)

    def keys_back(self, flat):
        return flat

    def reshape_back(self, flat, shape, axis):
        return np.moveaxis(flat.reshape(tuple(shape)), -1, axis)

    def numpy_specials(self, wire, dtype_enum):
        return None, None

    def flat(self, array):
        return array.reshape(-1)

    def repeat_starts(self, starts, counts):
        return np.repeat(np.asarray(starts, dtype=np.int64), np.asarray(counts))

    def gather(self, flat, positions):
        return flat[positions]


class FakeDeviceRegions:
    """Client._device_regions with host memory for the device region."""

    def __init__(self):
        self.memory = {}

    def take(self, socket_path, device, size):
        region_id = "%032x" % (len(self.memory) + 1)
        buffer = np.zeros(size, dtype=np.uint8)
        self.memory[region_id] = buffer
        region = type("Region", (), {})()
        region.device, region.pointer, region.buffer = 0, buffer.ctypes.data, buffer
        region.ref = lambda offset, length: pb.RegionRef(region_id=region_id, offset=int(offset), length=int(length))
        return contextlib.nullcontext(region)

    def close(self):
        self.memory.clear()


@pytest.fixture
def device(monkeypatch):
    """A client whose device path runs on host memory: numpy ops, memmove for the GPU's copies, and a
    fake server that writes its answer into the region (its indices through `damage`)."""
    monkeypatch.setattr(_device, "ops_for", lambda array: NumpyOps())
    monkeypatch.setattr(_device, "is_cuda", lambda array: True)
    monkeypatch.setattr(_cuda, "copy", lambda device, to, source, nbytes: ctypes.memmove(to, source, nbytes))
    client = gpusort.Client("127.0.0.1:1", shm_socket="/nonexistent/gpusort-test.sock", timeout=10)
    regions = FakeDeviceRegions()
    client._device_regions = regions
    state = {"damage": lambda indices: indices}

    def region_call(method, stub_method, reply_type, request):
        return answer_in_regions(method, request, regions.memory, lambda i: state["damage"](i))

    client._region_call = region_call
    yield client, state
    client.close()


def _device_sort(client, a, offsets=None, values=None, want_indices=True):
    return _device_calls.sort(client, a, -1, False, True, None, None, None, offsets, values, want_indices)


def _device_topk(client, a, k, offsets=None):
    return _device_calls.topk(client, a, k, -1, True, True, None, None, None, offsets)


def test_device_correct_answers_pass(device):
    client, _ = device
    a = keys(1000).reshape(4, 250)
    _, indices, _ = _device_sort(client, a)
    assert np.array_equal(indices, np.argsort(a, axis=-1, kind="stable"))
    _, _, moved = _device_sort(client, a, values=np.arange(1000).reshape(4, 250), want_indices=False)
    assert np.array_equal(moved, np.argsort(a, axis=-1, kind="stable") + np.arange(4)[:, None] * 250)
    _, indices = _device_topk(client, keys(1000), 4, offsets=[0, 2, 2, 1000])
    assert indices.size == 2 + 4


def _set(position, value):
    def damage(indices):
        indices[position] = value
        return indices
    return damage


@pytest.mark.parametrize("value", [250, -1], ids=["m", "negative"])
def test_device_sort_indices_out_of_their_row(device, value):
    client, state = device
    state["damage"] = _set(300, value)
    bad_answer(_device_sort, client, keys(1000).reshape(4, 250))
    bad_answer(_device_sort, client, keys(1000).reshape(4, 250), values=np.arange(1000).reshape(4, 250),
               want_indices=False)


def test_device_sort_index_past_its_segment(device):
    client, state = device
    state["damage"] = _set(10, 390)  # segment [10, 400) has 390 keys
    bad_answer(_device_sort, client, keys(1000), offsets=[0, 10, 10, 400, 1000])


def test_device_topk_indices_out_of_their_row_or_segment(device):
    client, state = device
    state["damage"] = _set(4, 250)
    bad_answer(_device_topk, client, keys(1000).reshape(4, 250), 3)
    state["damage"] = _set(1, 2)  # segment [0, 2) gives 2 results; index 2 is the next segment's
    bad_answer(_device_topk, client, keys(1000), 4, offsets=[0, 2, 2, 1000])


# --- the checks themselves ------------------------------------------------------------------------

def test_bad_answer_error_is_a_gpusort_error():
    assert issubclass(gpusort.BadAnswerError, gpusort.GpusortError)
    error = gpusort.BadAnswerError("x")
    assert error.code == grpc.StatusCode.DATA_LOSS and "DATA_LOSS" in str(error)


def test_check_indices_by_group():
    counts, limits = np.array([2, 0, 3]), np.array([5, 0, 3])
    _answers.check_indices(np.array([4, 0, 2, 1, 0]), limits, counts)
    with pytest.raises(gpusort.BadAnswerError):
        _answers.check_indices(np.array([4, 5, 2, 1, 0]), limits, counts)  # 5 in a group of 5
    with pytest.raises(gpusort.BadAnswerError):
        _answers.check_indices(np.array([4, 0, 3, 1, 0]), limits, counts)  # 3 in a group of 3
    with pytest.raises(gpusort.BadAnswerError):
        _answers.check_indices(np.array([4, 0, 2, 1]), limits, counts)  # one short
    _answers.check_indices(np.zeros(0, dtype=np.int64), 0)
    _answers.check_device_indices(np.array([0, 2, 1]), np.array([1, 3, 2]))
    with pytest.raises(gpusort.BadAnswerError):
        _answers.check_device_indices(np.array([0, 3, 1]), np.array([1, 3, 2]))

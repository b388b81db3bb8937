"""gpusort.Client against numpy: every dtype, byte orders and layouts, rows along any axis, segments,
stable argsort and sort_with, top-k as torch.topk defines it (ties to the earlier position), both NaN
orders, sizes that stream, and errors as GpusortError with the gRPC code."""
import threading

import grpc
import numpy as np
import pytest

import gpusort

from reference import DTYPES, SIZES, make, reference_topk, same  # noqa: F401


@pytest.mark.parametrize("dtype", DTYPES)
def test_sort_and_stable_argsort_match_numpy(client, dtype):
    for n in SIZES:
        for pattern in ("random", "few", "sorted", "reversed", "equal"):
            a = make(dtype, n, n + 1, pattern)
            same(client.sort(a), np.sort(a))
            same(client.argsort(a, stable=True), np.argsort(a, kind="stable").astype(np.int64))
            d = client.sort(a, descending=True)
            same(d, np.sort(a)[::-1] if a.dtype.kind != "f" else d)  # floats: checked below
            if a.dtype.kind == "f" and n:
                assert np.all(d[:-1] >= d[1:])


@pytest.mark.parametrize("dtype", DTYPES)
def test_rows_along_any_axis_and_byte_order(client, dtype):
    a = make(dtype, 6 * 7 * 5, 3).reshape(6, 7, 5)
    for axis in (0, 1, 2, -1):
        same(client.sort(a, axis=axis), np.sort(a, axis=axis))
        same(client.argsort(a, axis=axis, stable=True), np.argsort(a, axis=axis, kind="stable").astype(np.int64))
    swapped = a.astype(a.dtype.newbyteorder(">"))
    got = client.sort(swapped, axis=1)
    assert got.dtype == swapped.dtype
    same(got.astype(a.dtype), np.sort(a, axis=1))
    strided = a[:, ::2, :]  # not contiguous
    same(client.sort(strided, axis=1), np.sort(strided, axis=1))


def test_float_specials_in_both_nan_orders(client):
    for dtype in (np.float16, np.float32, np.float64):
        bits = {np.float16: np.uint16, np.float32: np.uint32, np.float64: np.uint64}[dtype]
        specials = np.array([np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 5e-324 if dtype == np.float64 else 1e-45],
                            dtype=dtype)
        negative_nan_payload = np.array([np.nan], dtype=dtype).view(bits) | bits(1) | (bits(1) << bits(8 * specials.itemsize - 1))
        a = np.concatenate([specials, negative_nan_payload.view(dtype), make(dtype, 1000, 4), specials])
        np.random.default_rng(1).shuffle(a)
        # numpy order: NaNs last, -0.0 == +0.0; stable argsort equals numpy's exactly.
        same(client.sort(a, nan="numpy"), np.sort(a))
        same(client.argsort(a, nan="numpy", stable=True), np.argsort(a, kind="stable").astype(np.int64))
        # total order: -NaN first, +NaN last, -0.0 before +0.0; the keys come back bit for bit.
        total = client.sort(a, nan="total")
        signs = np.signbit(total)
        assert np.isnan(total[0]) and signs[0] and np.isnan(total[-1]) and not signs[-1]
        zeros = np.flatnonzero(total == 0)
        assert signs[zeros].tolist() == sorted(signs[zeros].tolist(), reverse=True)
        assert sorted(total.view(bits).tolist()) == sorted(a.view(bits).tolist())


def test_sort_with_values_moves_them_with_their_keys(client):
    keys = make(np.int32, 50000, 5, "few")
    values = np.arange(50000, dtype=np.float64) * 1.5
    k, v = client.sort_with(keys, values, stable=True)
    order = np.argsort(keys, kind="stable")
    same(k, keys[order])
    same(v, values[order])
    rows = make(np.float32, 40 * 30, 6).reshape(40, 30)
    records = np.zeros((40, 30), dtype=[("a", "<i4"), ("b", "S3")])
    records["a"] = np.arange(1200).reshape(40, 30)
    k, v = client.sort_with(rows, records, axis=0, stable=True)
    order = np.argsort(rows, axis=0, kind="stable")
    same(k, np.take_along_axis(rows, order, axis=0))
    assert np.array_equal(v, np.take_along_axis(records, order, axis=0))
    for shape in ((0,), (3, 0), (0, 4)):  # empty arrays (sort_with raised ZeroDivisionError on them)
        empty_keys = np.zeros(shape, dtype=np.float32)
        k, v = client.sort_with(empty_keys, np.zeros(shape, dtype=np.int16))
        same(k, empty_keys)
        same(v, np.zeros(shape, dtype=np.int16))


def test_segments(client):
    a = make(np.float32, 1000, 7)
    offsets = [0, 0, 1, 100, 100, 999, 1000]
    got = client.sort(a, offsets=offsets)
    want = np.concatenate([np.sort(a[s:e]) for s, e in zip(offsets, offsets[1:])])
    same(got, want)
    values, indices = client.topk(a, 3, offsets=offsets)
    for (s, e), start in zip(zip(offsets, offsets[1:]), np.cumsum([0] + [min(3, e - s) for s, e in zip(offsets, offsets[1:])])):
        seg = a[s:e]
        want_idx = np.argsort(-seg, kind="stable")[:3]
        assert indices[start:start + len(want_idx)].tolist() == want_idx.tolist()


@pytest.mark.parametrize("dtype", DTYPES)
def test_topk_matches_torch_rule(client, dtype):
    a = make(dtype, 64 * 300, 8, "few" if dtype in (np.int8, np.uint8) else "random").reshape(64, 300)
    for k in (1, 5, 300):
        for largest in (True, False):
            values, indices = client.topk(a, k, largest=largest)
            want_v, want_i = reference_topk(a, k, largest)
            same(indices, want_i)
            same(values, want_v)
    values, indices = client.topk(a, 4, axis=0)
    want_v, want_i = reference_topk(a.T.copy(), 4, True)
    same(values, want_v.T)
    same(indices, want_i.T)


def test_topk_nan_is_largest_in_numpy_order(client):
    a = np.array([1.0, np.nan, 3.0, -np.nan, 2.0, np.inf], dtype=np.float32)
    values, indices = client.topk(a, 3, nan="numpy")
    assert indices.tolist() == [1, 3, 5]
    assert np.isnan(values[:2]).all() and values[2] == np.inf
    values, indices = client.topk(a, 2, nan="total")  # +NaN largest, -NaN smallest
    assert indices.tolist() == [1, 5]


def test_large_arrays_stream_without_message_limits(client):
    a = make(np.float32, 3_000_000, 9)  # 12 MB: over gRPC's default 4 MB receive limit
    same(client.sort(a), np.sort(a))
    small = gpusort.Client(client.target, max_unary_bytes=1 << 20, chunk_bytes=1 << 18, timeout=120)
    same(small.sort(a), np.sort(a))  # streams
    same(small.argsort(a, stable=True), np.argsort(a, kind="stable").astype(np.int64))
    values, indices = small.topk(a.reshape(30, 100000), 1000)
    want_v, want_i = reference_topk(a.reshape(30, 100000), 1000, True)
    same(indices, want_i)
    small.close()


def test_errors_carry_the_grpc_code(client):
    with pytest.raises(ValueError, match="k = 0"):
        client.topk(np.arange(10), 0)
    with pytest.raises(ValueError, match="supported"):
        client.sort(np.array([1 + 2j]))
    with pytest.raises(ValueError, match="unknown algorithm"):
        client.sort(np.arange(10), algorithm="bogo")
    with pytest.raises(gpusort.GpusortError) as error:
        client.sort(np.arange(10, dtype=np.int32), algorithm="small_k")  # a top-k kernel for a sort
    assert error.value.code in (grpc.StatusCode.UNIMPLEMENTED, grpc.StatusCode.INVALID_ARGUMENT)
    dead = gpusort.Client("127.0.0.1:1", timeout=2)
    with pytest.raises(gpusort.GpusortError) as error:
        dead.sort(np.arange(10))
    assert error.value.code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED)
    with pytest.raises(ValueError, match="not a URL"):
        gpusort.Client("http://127.0.0.1:50051")
    with pytest.raises(getattr(np, "exceptions", np).AxisError):  # numpy 2 has it in np.exceptions only
        client.sort(np.arange(10), axis=1)


def test_module_functions_use_gpusort_server(server_target, monkeypatch):
    monkeypatch.setenv("GPUSORT_SERVER", server_target)
    a = make(np.uint16, 5000, 10)
    same(gpusort.sort(a), np.sort(a))
    values, _ = gpusort.topk(a, 3)
    same(values, np.sort(a)[::-1][:3])


def test_bfloat16_bits(client):
    f = make(np.float32, 2000, 11)
    bits = (f.view(np.uint32) >> 16).astype(np.uint16)  # bfloat16: the upper half
    got = client.sort(bits, dtype="bfloat16")
    as_float = (got.astype(np.uint32) << 16).view(np.float32)
    assert np.all(as_float[:-1] <= as_float[1:])
    with pytest.raises(ValueError, match="2-byte"):
        client.sort(f, dtype="bfloat16")


def test_shared_memory_transport(server_target, shm_socket):
    """Arrays through a registered memfd instead of gRPC messages: the same answers as numpy, a region
    that grows for a larger call, and the refusals said clearly."""
    with gpusort.Client(server_target, shm_socket=shm_socket, timeout=60) as shm:
        assert shm.use_shm
        for dtype in (np.int8, np.uint16, np.float32, np.float64):
            a = make(dtype, 40000, 12).reshape(8, 5000)
            same(shm.sort(a), np.sort(a))
            same(shm.argsort(a, stable=True), np.argsort(a, kind="stable").astype(np.int64))
            values, indices = shm.topk(a, 9)
            want_v, want_i = reference_topk(a, 9, True)
            same(indices, want_i)
            same(values, want_v)
        big = make(np.float32, 2_000_000, 13)  # 8 MB: past the first 1 MiB region
        same(shm.sort(big), np.sort(big))
        k, v = shm.sort_with(big[:1000], np.arange(1000), stable=True)
        same(v, np.argsort(big[:1000], kind="stable"))
    with pytest.raises(ValueError, match="shm_socket"):
        gpusort.Client(server_target, transport="shm")
    with pytest.raises(gpusort.GpusortError) as error:
        gpusort.Client(server_target, shm_socket=shm_socket + ".missing").sort(np.arange(10))
    assert error.value.code == grpc.StatusCode.UNAVAILABLE


def test_shared_memory_calls_go_on_the_socket(server_target, shm_socket):
    """With shm_calls="socket" (the default) the calls on regions go as records on the shared-memory
    socket: they are answered even where the gRPC target is unreachable; with "grpc" they are not. A bad
    request's status comes back the same way, and the same client's gRPC path gives the same answers."""
    del server_target
    a = make(np.float32, 30000, 31)
    with gpusort.Client("127.0.0.1:1", shm_socket=shm_socket, timeout=20) as on_socket:
        same(on_socket.sort(a), np.sort(a))
        values, indices = on_socket.topk(a.reshape(3, 10000), 5)
        want_v, want_i = reference_topk(a.reshape(3, 10000), 5, True)
        same(values, want_v)
        same(indices, want_i)
        assert on_socket.last_info.server_seconds > 0
        with pytest.raises(gpusort.GpusortError) as error:
            on_socket.sort(a, algorithm="odd_even")  # the server's refusal (CPU: none; CUDA: too large)
        assert error.value.code in (grpc.StatusCode.UNIMPLEMENTED, grpc.StatusCode.INVALID_ARGUMENT), error.value
    with gpusort.Client("127.0.0.1:1", shm_socket=shm_socket, timeout=2, shm_calls="grpc") as on_grpc:
        with pytest.raises(gpusort.GpusortError) as error:
            on_grpc.sort(a)
        assert error.value.code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED)
    with pytest.raises(ValueError, match="shm_calls"):
        gpusort.Client("127.0.0.1:1", shm_socket=shm_socket, shm_calls="tcp")


def test_threads_sharing_a_shared_memory_client_get_their_own_answers(server_target, shm_socket):
    """Eight threads on one Client, each sorting, arg-sorting and selecting its own arrays of sizes that
    grow past one another's (regions are leased a call each and replaced when too small): every answer
    is the thread's own; after close() a call is refused."""
    del server_target
    client = gpusort.Client("127.0.0.1:1", shm_socket=shm_socket, timeout=60)
    failures = []

    def calls(seed):
        try:
            for round_ in range(6):
                a = make(np.float64, 1000 * (seed + 1) * (round_ + 1) + seed, seed * 100 + round_)
                same(client.sort(a), np.sort(a, kind="stable"))
                same(client.argsort(a), np.argsort(a, kind="stable"))
                values, indices = client.topk(a, 7)
                want_v, want_i = reference_topk(a.reshape(1, -1), 7, True)
                same(values, want_v.reshape(-1))
                same(indices, want_i.reshape(-1))
        except BaseException as error:  # noqa: B902 (reported by the main thread)
            failures.append((seed, error))
    threads = [threading.Thread(target=calls, args=(seed,)) for seed in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not any(t.is_alive() for t in threads)
    assert not failures, failures
    client.close()
    with pytest.raises(ValueError, match="closed"):
        client.sort(make(np.float64, 100, 1))
    unused = gpusort.Client("127.0.0.1:1", shm_socket=shm_socket, timeout=60)
    unused.close()  # before any call: a region made after it would be left behind
    with pytest.raises(ValueError, match="closed"):
        unused.sort(make(np.float64, 100, 1))


def test_sockets_transport(server_target, shm_socket):
    """Sorts whose keys cross the server's data port: the same answers as numpy in parts of 1 MiB and
    more, small arrays in one part, argsort, and what the data port does not carry going over gRPC."""
    del shm_socket  # only to skip where the server was not started here (its --data-port is unknown)
    with gpusort.Client(server_target, transport="sockets", socket_parts=4, timeout=60) as sockets:
        for dtype in (np.uint32, np.int64, np.float32, np.float64, np.float16, np.int8):
            a = make(dtype, 1_500_000, 21)
            same(sockets.sort(a), np.sort(a))
            same(sockets.argsort(a, stable=True), np.argsort(a, kind="stable").astype(np.int64))
        small = make(np.uint16, 1000, 22).reshape(10, 100)
        same(sockets.sort(small), np.sort(small))
        assert sockets.last_info.server_seconds > 0
        values, indices = sockets.topk(small, 3)  # TopK goes over gRPC
        want_v, want_i = reference_topk(small, 3, True)
        same(values, want_v)
        same(indices, want_i)
    with pytest.raises(ValueError, match="sockets"):
        gpusort.Client(server_target, transport="socket")


def test_last_info_names_backend_and_algorithm_as_enums(client):
    client.sort(make(np.int32, 5000, 12), algorithm="cpu")
    info = client.last_info
    assert isinstance(info, gpusort.CallInfo)
    assert info.backend is gpusort.Backend.CPU and info.backend == gpusort._client.pb.BACKEND_CPU
    assert info.algorithm is gpusort.Algorithm.CPU and info.algorithm.name == "CPU"
    assert info.server_seconds > 0 and info.request_id and info.device
    assert [s.name for s in info.stages][-1] == "sort" and all(s.seconds >= 0 for s in info.stages)

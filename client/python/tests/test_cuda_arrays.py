"""CUDA arrays through the server's device-memory regions, against numpy: every dtype, sizes around
powers of two, rows and segments for top-k, answers left on the GPU, the caller's keys untouched, and
the refusals said clearly. Needs a GPU and a server on the CUDA backend (GPUSORT_TEST_BACKEND=cuda, as
scripts/python-device-test.sh runs it on the GPU machine); skips and says why otherwise.

The arrays here are plain device allocations with __cuda_array_interface__ (no torch or CuPy needed);
torch tensors have their own tests (test_torch.py). The client here orders floats as the service does
(nan="total"): nan="numpy", the default, re-codes NaN and -0.0 on the GPU with the array library's own
operations, which a bare __cuda_array_interface__ object does not have (test_refusals)."""
import os

import grpc
import numpy as np
import pytest

import gpusort
from gpusort import _cuda
from reference import DTYPES, make, reference_topk, same


def _cuda_or_skip():
    try:
        _cuda._load()
    except _cuda.CudaError as error:
        pytest.skip(str(error))
    if os.environ.get("GPUSORT_TEST_BACKEND", "cpu") != "cuda":
        pytest.skip("the test server runs on the CPU backend, which refuses device memory "
                    "(set GPUSORT_TEST_BACKEND=cuda on a GPU machine)")


@pytest.fixture(scope="module")
def gpu(server_target, shm_socket):
    _cuda_or_skip()
    with gpusort.Client(server_target, shm_socket=shm_socket, timeout=120, nan="total") as c:
        yield c


class CudaArray:
    """A numpy array copied into plain device memory, seen through __cuda_array_interface__ only."""

    def __init__(self, host, device=0):
        self.host = np.ascontiguousarray(host)
        self.buffer = _cuda.DeviceBuffer(self.host.nbytes, device)
        _cuda.from_host(device, self.buffer.pointer, self.host.ctypes.data, self.host.nbytes)

    @property
    def __cuda_array_interface__(self):
        return {"shape": self.host.shape, "typestr": self.host.dtype.str, "data": (self.buffer.pointer, False),
                "version": 3, "strides": None, "stream": 1}


def host(answer):
    assert isinstance(answer, gpusort.DeviceArray), type(answer)
    assert _cuda.device_of(answer.pointer) == answer.device  # the answer is device memory
    return answer.get()


SIZES = [1, 2, 1023, 1025, 65535, 65537, (1 << 20) + 3]


@pytest.mark.parametrize("dtype", DTYPES)
def test_sort_and_argsort_every_dtype(gpu, dtype):
    for n in SIZES:
        for pattern in ("random", "few", "sorted", "reversed", "equal"):
            a = make(dtype, n, n, pattern)
            same(host(gpu.sort(CudaArray(a))), np.sort(a))
            same(host(gpu.argsort(CudaArray(a), stable=True)), np.argsort(a, kind="stable").astype(np.int64))
            same(host(gpu.sort(CudaArray(a), descending=True, stable=True)), np.sort(a)[::-1])
            assert gpu.last_info.backend == gpusort._client.pb.BACKEND_CUDA


def test_float_specials_in_total_order(gpu):
    specials = np.array([np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-40, -1e-40, 3.0, -3.0],
                        dtype=np.float32)
    payloads = np.array([0x7FC00001, 0xFFC00002, 0x7F800003], dtype=np.uint32).view(np.float32)
    a = np.concatenate([specials, payloads, make(np.float32, 5000, 3)])
    got = host(gpu.sort(CudaArray(a)))
    # The proto's total order is the order of the sign-folded bits.
    bits = a.view(np.uint32)
    folded = np.where(bits >> 31 == 1, ~bits, bits | np.uint32(1 << 31))
    same(got.view(np.uint32), a[np.argsort(folded, kind="stable")].view(np.uint32))


def test_topk_rows_and_segments(gpu):
    for dtype in (np.float16, np.float32, np.int8, np.uint16, np.int64):
        a = make(dtype, 64 * 3000, 5, "few" if dtype in (np.int8,) else "random").reshape(64, 3000)
        for k in (1, 50, 3000):
            for largest in (True, False):
                values, indices = gpu.topk(CudaArray(a), k, largest=largest)
                want_v, want_i = reference_topk(a, k, largest)
                same(host(indices), want_i)
                same(host(values), want_v)
        flat = a.reshape(-1)
        offsets = [0, 0, 1, 1000, 1000, 70000, flat.size]  # empty, one element, longer than any tile
        values, indices = gpu.topk(CudaArray(flat), 7, offsets=offsets)
        got_v, got_i = host(values), host(indices)
        at = 0
        for s, e in zip(offsets, offsets[1:]):
            if e == s:
                continue
            want_v, want_i = reference_topk(flat[s:e].reshape(1, -1), min(7, e - s), True)
            same(got_i[at:at + want_i.size], want_i.reshape(-1))
            same(got_v[at:at + want_v.size], want_v.reshape(-1))
            at += want_i.size
        assert at == got_i.size


def test_bfloat16_bits(gpu):
    f = make(np.float32, 100000, 11)
    bits = (f.view(np.uint32) >> 16).astype(np.uint16)
    as_float = (bits.astype(np.uint32) << 16).view(np.float32)
    got = host(gpu.sort(CudaArray(bits), dtype="bfloat16"))
    same((got.astype(np.uint32) << 16).view(np.float32), np.sort(as_float))
    values, indices = gpu.topk(CudaArray(bits.reshape(10, 10000)), 50, dtype="bfloat16")
    want_v, want_i = reference_topk(as_float.reshape(10, 10000), 50, True)
    same(host(indices), want_i)


def test_large_top_k_and_a_region_that_grows(gpu):
    a = make(np.float32, 32 << 20, 17)  # 128 MiB: past every earlier call's region
    values, indices = gpu.topk(CudaArray(a), 100)
    want_v, want_i = reference_topk(a.reshape(1, -1), 100, True)
    same(host(indices), want_i.reshape(-1))
    same(host(values), want_v.reshape(-1))
    small = make(np.uint32, 1000, 18)
    same(host(gpu.sort(CudaArray(small))), np.sort(small))


def test_the_callers_keys_stay_as_they_were(gpu):
    a = make(np.int32, 100000, 19)
    keys = CudaArray(a)
    gpu.sort(keys)
    gpu.topk(keys, 10)
    back = np.empty_like(a)
    _cuda.to_host(0, back.ctypes.data, keys.buffer.pointer, a.nbytes)
    same(back, a)


def test_rows_and_segments_sort_on_the_gpu(gpu):
    for dtype in (np.float32, np.int16, np.uint64):
        a = make(dtype, 512 * 300, 21, "few" if dtype == np.int16 else "random").reshape(512, 300)
        same(host(gpu.sort(CudaArray(a))), np.sort(a, axis=-1))
        same(host(gpu.argsort(CudaArray(a), stable=True)), np.argsort(a, axis=-1, kind="stable").astype(np.int64))
        flat = a.reshape(-1)
        offsets = [0, 0, 1, 5000, 5000, 9096, flat.size]  # empty, one element, longer than a tile
        got = host(gpu.sort(CudaArray(flat), offsets=offsets, descending=True, stable=True))
        want = np.concatenate([np.sort(flat[s:e], kind="stable")[::-1] for s, e in zip(offsets, offsets[1:])])
        same(got, want)


def test_refusals(gpu, server_target):
    a = make(np.float32, 4000, 20).reshape(4, 1000)
    with pytest.raises(gpusort.GpusortError) as error:  # the server's device-memory rules
        gpu.sort(CudaArray(a[0]), algorithm="merge")
    assert error.value.code == grpc.StatusCode.UNIMPLEMENTED
    with pytest.raises(ValueError, match="nan='numpy'"):
        gpu.sort(CudaArray(a[0]), nan="numpy")
    with pytest.raises(ValueError, match="last"):
        gpu.topk(CudaArray(a), 2, axis=0)
    with pytest.raises(ValueError, match="sort_with"):
        gpu.sort_with(CudaArray(a[0]), CudaArray(a[0]))
    with pytest.raises(ValueError, match="both"):
        gpu.sort_with(np.arange(3), CudaArray(np.arange(3)))
    with pytest.raises(ValueError, match="both"):
        gpu.sort_with(CudaArray(np.arange(3)), np.arange(3))
    with pytest.raises(ValueError, match="shm_socket"):
        gpusort.Client(server_target).sort(CudaArray(a[0]))

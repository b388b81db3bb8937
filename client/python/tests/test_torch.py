"""torch tensors through the Python client (issue 43), against numpy and torch's own sort and topk.

CPU tensors go in and out without copies wherever numpy arrays do: the client reads the tensor's own
memory (Tensor.numpy() is a view) and hands the answer back as a tensor over the answer's numpy memory
(torch.from_numpy). CUDA tensors are sorted and selected where they lie, through the server's
device-memory regions, and come back as CUDA tensors on the same GPU with the same dtype.

Needs torch: the GPU machine's image has it (with grpcio beside it); scripts/python-device-test.sh
runs this file there on the image's own Python. The CUDA cases also need a server on the CUDA backend
(GPUSORT_TEST_BACKEND=cuda); where torch is missing the whole file skips and says so.
"""
import os

import numpy as np
import pytest

import gpusort
from gpusort import _arrays
from reference import make, order_bits, reference_topk, same

torch = pytest.importorskip("torch")

# numpy dtype -> torch dtype, for the dtypes both have (torch's unsigned 16/32/64-bit tensors exist from
# torch 2.3 on, with few operations: the client only moves them)
TORCH_OF = {np.int8: torch.int8, np.uint8: torch.uint8, np.int16: torch.int16, np.int32: torch.int32,
            np.int64: torch.int64, np.float16: torch.float16, np.float32: torch.float32, np.float64: torch.float64}
for _name in ("uint16", "uint32", "uint64"):
    if hasattr(torch, _name):
        TORCH_OF[getattr(np, _name)] = getattr(torch, _name)
DTYPES = list(TORCH_OF)
SIZES = [0, 1, 2, 1023, 1025, 65537]


def with_specials(dtype, n, seed):
    """`n` keys of `dtype`; floats with NaN of both signs and several payloads, +-0.0, +-inf and
    subnormals spread through them (numpy's order, which the client's default nan="numpy" follows)."""
    a = make(dtype, n, seed, "few" if n % 2 else "random")
    if np.dtype(dtype).kind != "f" or n < 16:
        return a
    width = np.dtype(dtype).itemsize
    bits_type = np.dtype("u%d" % width)
    top = 8 * width - 1
    exponent_bits = {2: 5, 4: 8, 8: 11}[width]
    quiet = ((1 << exponent_bits) - 1) << (top - exponent_bits) | 1 << (top - exponent_bits - 1)
    specials = np.array([quiet, quiet | 1 << top, quiet | 5, (quiet | 3) | 1 << top, 0, 1 << top, 1, 1 | 1 << top],
                        dtype=bits_type).view(dtype)
    specials = np.concatenate([specials, np.array([np.inf, -np.inf], dtype=dtype)])
    rng = np.random.default_rng(seed)
    a[rng.integers(0, n, 4 * len(specials))] = np.resize(specials, 4 * len(specials))
    return a


def tensor_of(a, device="cpu"):
    return torch.from_numpy(np.ascontiguousarray(a)).to(device)


def host(t):
    assert isinstance(t, torch.Tensor), type(t)
    return t.cpu().numpy()


# --- CPU tensors ----------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES)
def test_cpu_tensors_in_and_out_without_copies(dtype):
    t = tensor_of(make(dtype, 1000, 1))
    converted = _arrays.to_numpy(t)
    assert converted.array.ctypes.data == t.data_ptr()  # the tensor's own memory is what is sent
    answer = np.sort(converted.array)
    back = converted.back(answer)
    assert isinstance(back, torch.Tensor) and back.dtype == t.dtype
    assert back.data_ptr() == answer.ctypes.data  # the answer is a view of the numpy answer


@pytest.mark.parametrize("dtype", DTYPES)
def test_cpu_tensors_sorted_and_selected_as_numpy_and_torch(client, dtype):
    for n in SIZES:
        a = with_specials(dtype, n, n + 3)
        t = tensor_of(a)
        got = client.sort(t)
        assert isinstance(got, torch.Tensor) and got.dtype == t.dtype and got.device.type == "cpu"
        same(host(got), np.sort(a))
        positions = client.argsort(t)
        assert isinstance(positions, torch.Tensor) and positions.dtype == torch.int64  # as torch.argsort
        same(host(positions), np.argsort(a, kind="stable").astype(np.int64))
        keys, moved = client.sort_with(t, t.to(torch.float64))
        same(host(keys), np.sort(a))
        assert isinstance(moved, torch.Tensor) and moved.dtype == torch.float64
        same(host(moved), a[np.argsort(a, kind="stable")].astype(np.float64))
        if n and t.dtype in (torch.int8, torch.uint8, torch.int16, torch.int32, torch.int64, torch.float16,
                             torch.float32, torch.float64):
            same(host(client.argsort(t)), torch.sort(t, stable=True).indices.numpy())
        if n:
            k = min(n, 17)
            values, indices = client.topk(t.reshape(1, -1), k)
            want_v, want_i = reference_topk(a.reshape(1, -1), k, True)
            same(host(indices), want_i)
            same(host(values), want_v)


def test_cpu_bfloat16_tensors(client):
    f = torch.from_numpy(with_specials(np.float32, 50000, 9))
    t = f.to(torch.bfloat16)
    got = client.sort(t)
    assert got.dtype == torch.bfloat16
    same(host(got.float()), np.sort(host(t.float())))
    values, _ = client.topk(t.reshape(10, 5000), 20)
    want_v, _ = reference_topk(host(t.float()).reshape(10, 5000), 20, True)
    same(host(values.float()), want_v)


# --- CUDA tensors -----------------------------------------------------------------------------------

def _cuda_server_or_skip():
    if not torch.cuda.is_available():
        pytest.skip("torch sees no CUDA device here")
    if os.environ.get("GPUSORT_TEST_BACKEND", "cpu") != "cuda":
        pytest.skip("the test server runs on the CPU backend, which refuses device memory "
                    "(set GPUSORT_TEST_BACKEND=cuda on a GPU machine)")


@pytest.fixture(scope="module")
def gpu(server_target, shm_socket):
    _cuda_server_or_skip()
    with gpusort.Client(server_target, shm_socket=shm_socket, timeout=120) as c:
        yield c


def on_gpu(t, like):
    assert isinstance(t, torch.Tensor), type(t)
    assert t.device == like.device, (t.device, like.device)
    return t.cpu().numpy()


@pytest.mark.parametrize("dtype", DTYPES)
def test_cuda_tensors_sorted_where_they_lie(gpu, dtype):
    for n in SIZES + [(1 << 20) + 3]:
        a = with_specials(dtype, n, n + 5)
        t = tensor_of(a, "cuda")
        got = gpu.sort(t)
        assert got.dtype == t.dtype
        same(on_gpu(got, t), np.sort(a))
        if n:  # (an empty array makes no call)
            assert gpu.last_info.backend == gpusort.Backend.CUDA
        same(on_gpu(gpu.argsort(t), t), np.argsort(a, kind="stable").astype(np.int64))
        # descending and stable: largest first (NaN the largest), equal keys (NaN among NaN, -0.0 and
        # +0.0) in their order in `a`
        same(on_gpu(gpu.sort(t, descending=True), t), a[np.argsort(~order_bits(a), kind="stable")])
        same(on_gpu(t, t), a)  # the caller's keys as they were


@pytest.mark.parametrize("dtype", DTYPES)
def test_cuda_tensors_selected_where_they_lie(gpu, dtype):
    a = with_specials(dtype, 64 * 3001, 7).reshape(64, 3001)
    t = tensor_of(a, "cuda")
    for k in (1, 100, 1000):
        for largest in (True, False):
            values, indices = gpu.topk(t, k, largest=largest)
            assert values.dtype == t.dtype and indices.dtype == torch.int64
            want_v, want_i = reference_topk(a, k, largest)
            same(on_gpu(indices, t), want_i)
            same(on_gpu(values, t), want_v)


def test_cuda_tensors_match_torch_itself(gpu):
    t = torch.randn(1 << 22, device="cuda")
    t[::97] = float("nan")
    t[5::101] = -0.0
    got = gpu.sort(t)
    want = torch.sort(t, stable=True)
    assert torch.equal(got.view(torch.int32), want.values.view(torch.int32))  # bit for bit, NaN and -0.0 too
    assert torch.equal(gpu.argsort(t), want.indices)
    keys, moved = gpu.sort_with(t, torch.arange(t.numel(), device="cuda"))
    assert torch.equal(moved, want.indices)
    logits = torch.randn(128, 4096, device="cuda").to(torch.bfloat16)
    values, indices = gpu.topk(logits, 50)
    assert values.dtype == torch.bfloat16 and values.device == logits.device
    assert torch.equal(values, torch.topk(logits, 50).values)
    assert torch.equal(torch.gather(logits, 1, indices), values)


def test_cuda_tensors_on_any_axis_and_layout(gpu):
    base = torch.randn(300, 500, device="cuda", dtype=torch.float64)
    for t in (base, base.t(), base[:, ::3], base.reshape(30, 10, 500).permute(2, 0, 1)):
        for axis in range(t.dim()):
            got = gpu.sort(t, axis=axis)
            assert got.shape == t.shape and got.is_cuda
            assert torch.equal(got, torch.sort(t, dim=axis, stable=True).values)
            values, indices = gpu.topk(t, 3, axis=axis)
            want = torch.topk(t, 3, dim=axis)
            assert torch.equal(values, want.values)
            assert torch.equal(torch.gather(t, axis, indices), values)
    assert torch.equal(gpu.sort(base, axis=None), torch.sort(base.reshape(-1)).values)


def test_cuda_tensors_that_require_grad_and_errors(gpu):
    t = torch.randn(1000, device="cuda", requires_grad=True)
    assert torch.equal(gpu.sort(t), torch.sort(t.detach()).values)
    with pytest.raises(ValueError, match="both"):
        gpu.sort_with(t, torch.arange(1000))  # keys on the GPU, values on the host
    with pytest.raises(ValueError, match="outside"):
        gpu.topk(torch.arange(10, device="cuda"), 11)
    with pytest.raises(ValueError, match="shm_socket"):
        gpusort.Client(gpu.target).sort(t)

"""The client's defaults are numpy's (issue 43): sort, argsort and topk equal np.sort,
np.argsort(kind="stable") and the stable selection bit for bit on every dtype, NaN of both signs and
several payloads and -0.0 included, with no option given; axis=None flattens; an axis or k that is not an
integer is a TypeError; and what the service answers raises exceptions that are also Python's own."""
import time

import grpc
import numpy as np
import pytest

import gpusort

from reference import DTYPES, make, reference_topk  # noqa: F401

FLOAT_BITS = {np.dtype(np.float16): np.uint16, np.dtype(np.float32): np.uint32, np.dtype(np.float64): np.uint64}


def with_specials(dtype, n, seed):
    """n keys of `dtype`; floats get NaNs of both signs and several payloads, +-0.0, +-inf and subnormals
    scattered among them (a fifth of the array)."""
    rng = np.random.default_rng(seed)
    a = make(dtype, n, seed, "few" if seed % 2 else "random")
    if a.dtype.kind != "f":
        return a
    bits = FLOAT_BITS[a.dtype]
    width = 8 * a.itemsize
    quiet_nan = np.array([np.nan], dtype=a.dtype).view(bits)[0]
    sign = bits(1) << bits(width - 1)
    specials = np.array([quiet_nan, quiet_nan | sign, quiet_nan | bits(1), quiet_nan | bits(5) | sign,
                         quiet_nan | bits(2)], dtype=bits).view(a.dtype)
    specials = np.concatenate([specials, np.array([0.0, -0.0, np.inf, -np.inf], dtype=a.dtype),
                               np.array([bits(1), bits(1) | sign], dtype=bits).view(a.dtype)])  # the smallest subnormals
    where = rng.choice(n, size=n // 5, replace=False) if n >= 5 else np.arange(0)
    a[where] = specials[rng.integers(0, specials.size, where.size)]
    return a


def bits_of(a):
    return a.view(FLOAT_BITS[a.dtype]) if a.dtype.kind == "f" else a


def same_bits(got, want):
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, want.dtype, got.shape, want.shape)
    assert np.array_equal(bits_of(got), bits_of(want))


@pytest.mark.parametrize("dtype", DTYPES)
def test_defaults_are_numpys_bit_for_bit(client, dtype):
    for n, seed in ((0, 1), (1, 2), (2, 3), (33, 4), (1000, 5), (4097, 6), (70001, 7)):
        a = with_specials(dtype, n, seed)
        same_bits(client.sort(a), np.sort(a, kind="stable"))
        assert np.array_equal(client.argsort(a), np.argsort(a, kind="stable"))
        if n:
            k = min(n, 17)
            values, indices = client.topk(a, k)
            want_values, want_indices = reference_topk(a.reshape(1, -1), k, True)
            same_bits(values, want_values.reshape(-1))
            assert np.array_equal(indices, want_indices.reshape(-1))
            values, indices = client.topk(a, k, largest=False)
            want_values, want_indices = reference_topk(a.reshape(1, -1), k, False)
            same_bits(values, want_values.reshape(-1))
            assert np.array_equal(indices, want_indices.reshape(-1))


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64, np.int32])
def test_rows_and_axis_none_as_numpy(client, dtype):
    a = with_specials(dtype, 4 * 6 * 5, 8).reshape(4, 6, 5)
    for axis in (0, 1, -1, None):
        same_bits(client.sort(a, axis=axis), np.sort(a, axis=axis, kind="stable"))
        assert np.array_equal(client.argsort(a, axis=axis), np.argsort(a, axis=axis, kind="stable"))
    # axis=None flattens in C order, whatever the array's layout (numpy's rule).
    fortran = np.asfortranarray(a)
    same_bits(client.sort(fortran, axis=None), np.sort(fortran, axis=None, kind="stable"))
    values, indices = client.topk(a, 5, axis=None)
    want_values, want_indices = reference_topk(a.reshape(1, -1), 5, True)
    same_bits(values, want_values.reshape(-1))
    assert np.array_equal(indices, want_indices.reshape(-1))
    keys, moved = client.sort_with(a, np.arange(a.size).reshape(a.shape), axis=None)
    order = np.argsort(a, axis=None, kind="stable")
    same_bits(keys, a.reshape(-1)[order])
    assert np.array_equal(moved, order)
    with pytest.raises(ValueError, match="keys' shape"):
        client.sort_with(a, np.arange(a.size).reshape(6, 4, 5), axis=None)
    scalar = np.array(3.5, dtype=np.float32)
    same_bits(client.sort(scalar, axis=None), np.sort(scalar, axis=None))


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_one_special_anywhere_is_found(client, dtype):
    """The client looks for NaN and -0.0 slice by slice (64K elements) and stops at the first: one
    special alone, at either end of a slice or of the array, among +-inf, +0.0 and subnormals (which are
    none), must still be found, or the total order would answer for it."""
    bits = FLOAT_BITS[np.dtype(dtype)]
    width = 8 * np.dtype(dtype).itemsize
    sign = bits(1) << bits(width - 1)
    quiet_nan = np.array([np.nan], dtype=dtype).view(bits)[0]
    n = 3 * 65536 + 5
    base = np.random.default_rng(21).standard_normal(n).astype(dtype)
    base[[7, 70000, 140000]] = [np.inf, -np.inf, 0.0]
    base.view(bits)[[9, 70001]] = [bits(1), bits(1) | sign]  # the smallest subnormals of both signs
    same_bits(client.sort(base), np.sort(base, kind="stable"))
    specials = [np.array([-0.0], dtype=dtype).view(bits)[0], quiet_nan | sign | bits(3), quiet_nan | bits(1)]
    for position in (0, 65535, 65536, 2 * 65536 + 17, n - 1):
        for special in specials:
            a = base.copy()
            a.view(bits)[position] = special
            same_bits(client.sort(a), np.sort(a, kind="stable"))
            values, indices = client.topk(a, 4, largest=not special & sign)
            want_values, want_indices = reference_topk(a.reshape(1, -1), 4, not special & sign)
            same_bits(values, want_values.reshape(-1))
            assert np.array_equal(indices, want_indices.reshape(-1))


def test_the_total_order_is_still_there_when_asked(client):
    a = with_specials(np.float32, 1000, 9)
    total = client.sort(a, nan="total")
    ordered = total.view(np.uint32)
    # IEEE totalOrder on the bits: negative ones (sign set) by descending magnitude, then positive ones.
    key = np.where(ordered >> 31 == 1, ~ordered, ordered | np.uint32(1 << 31))
    assert np.all(key[:-1] <= key[1:])
    assert sorted(total.view(np.uint32).tolist()) == sorted(a.view(np.uint32).tolist())
    numpy_client = gpusort.Client(client.target, nan="total")
    assert np.array_equal(numpy_client.sort(a).view(np.uint32), ordered)
    numpy_client.close()


def test_axis_and_k_must_be_integers(client):
    a = np.arange(10, dtype=np.int32)
    for bad in (2.5, "3", 2.0, None):
        with pytest.raises(TypeError):
            client.topk(a, bad)
    assert client.topk(a, np.int64(3))[1].tolist() == [9, 8, 7]
    for bad in (1.0, "0"):
        with pytest.raises(TypeError):
            client.sort(a, axis=bad)
        with pytest.raises(TypeError):
            client.argsort(a, axis=bad)
    assert client.sort(a[::-1], axis=np.int8(0)).tolist() == list(range(10))


def test_errors_are_also_pythons_own(client, server_target):
    with pytest.raises(gpusort.UnimplementedError) as error:  # a top-k kernel asked for a sort
        client.sort(np.arange(10, dtype=np.int32), algorithm="small_k")
    assert isinstance(error.value, (NotImplementedError, ValueError))
    assert isinstance(error.value, gpusort.GpusortError)
    assert error.value.code in (grpc.StatusCode.UNIMPLEMENTED, grpc.StatusCode.INVALID_ARGUMENT)

    with gpusort.Client("127.0.0.1:1", timeout=2) as dead:  # nothing listens there
        with pytest.raises(ConnectionError) as error:
            dead.sort(np.arange(10))
    assert isinstance(error.value, gpusort.UnavailableError)
    assert error.value.code == grpc.StatusCode.UNAVAILABLE

    with gpusort.Client(server_target, timeout=1e-6) as hurried:
        with pytest.raises(TimeoutError) as error:
            hurried.sort(make(np.float32, 1 << 20, 3))
    assert isinstance(error.value, gpusort.DeadlineExceededError)
    assert error.value.code == grpc.StatusCode.DEADLINE_EXCEEDED


def test_error_classes_by_code():
    cases = {
        grpc.StatusCode.INVALID_ARGUMENT: (gpusort.InvalidArgumentError, ValueError),
        grpc.StatusCode.OUT_OF_RANGE: (gpusort.InvalidArgumentError, ValueError),
        grpc.StatusCode.FAILED_PRECONDITION: (gpusort.InvalidArgumentError, ValueError),
        grpc.StatusCode.UNAVAILABLE: (gpusort.UnavailableError, ConnectionError),
        grpc.StatusCode.DEADLINE_EXCEEDED: (gpusort.DeadlineExceededError, TimeoutError),
        grpc.StatusCode.RESOURCE_EXHAUSTED: (gpusort.ResourceExhaustedError, MemoryError),
        grpc.StatusCode.UNAUTHENTICATED: (gpusort.PermissionDeniedError, PermissionError),
        grpc.StatusCode.PERMISSION_DENIED: (gpusort.PermissionDeniedError, PermissionError),
        grpc.StatusCode.UNIMPLEMENTED: (gpusort.UnimplementedError, NotImplementedError),
    }
    for code, (cls, builtin) in cases.items():
        error = gpusort.errors.error_from(code, "why", "req-1")
        assert type(error) is cls and isinstance(error, builtin) and isinstance(error, gpusort.GpusortError)
        assert error.code == code and error.details == "why" and error.request_id == "req-1"
        assert str(error) == "%s: why (request req-1)" % code.name
    for code in (grpc.StatusCode.INTERNAL, grpc.StatusCode.CANCELLED, grpc.StatusCode.DATA_LOSS):
        assert type(gpusort.errors.error_from(code, "why")) is gpusort.GpusortError
    import pickle

    again = pickle.loads(pickle.dumps(gpusort.errors.error_from(grpc.StatusCode.UNAVAILABLE, "down", "r")))
    assert type(again) is gpusort.UnavailableError and again.details == "down" and again.request_id == "r"
    bad = pickle.loads(pickle.dumps(gpusort.BadAnswerError("short", "r2")))
    assert type(bad) is gpusort.BadAnswerError and bad.code == grpc.StatusCode.DATA_LOSS and bad.details == "short"

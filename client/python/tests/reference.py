"""Reference arrays and answers the Python client's tests compare against: numpy's sort and argsort,
and torch.topk's rule (rank by key, NaN the largest, ties to the earlier position)."""
import numpy as np

DTYPES = [np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64,
          np.float16, np.float32, np.float64]
SIZES = [0, 1, 2, 31, 1023, 1025, 4097, 65537]


def make(dtype, n, seed, pattern="random"):
    rng = np.random.default_rng(seed)
    dtype = np.dtype(dtype)
    if pattern == "few":
        return rng.integers(0, 4, n).astype(dtype)
    if pattern == "sorted":
        return np.sort(make(dtype, n, seed))
    if pattern == "reversed":
        return np.sort(make(dtype, n, seed))[::-1].copy()
    if pattern == "equal":
        return np.full(n, 7, dtype=dtype)
    if dtype.kind == "f":
        return (rng.standard_normal(n) * 1000).astype(dtype)
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True)


def same(a, b):
    """Equal arrays (NaNs equal to NaNs), dtype and shape included."""
    assert a.dtype == b.dtype, (a.dtype, b.dtype)
    assert a.shape == b.shape, (a.shape, b.shape)
    if a.dtype.kind == "f":
        assert np.array_equal(a, b, equal_nan=True)
    else:
        assert np.array_equal(a, b)


def order_bits(a):
    """Unsigned integers whose ascending order is numpy's order of `a` (floats: NaN above +inf, -0.0 equal
    to +0.0), as the reference of both top-k rules."""
    width = a.dtype.itemsize
    unsigned = np.dtype("u%d" % width)
    sign = unsigned.type(1) << unsigned.type(8 * width - 1)
    if a.dtype.kind == "u":
        return a.copy()
    if a.dtype.kind == "i":
        return a.view(unsigned) ^ sign
    canonical = np.where(np.isnan(a), np.array(np.inf, a.dtype), a)
    canonical = np.where(canonical == 0, np.array(0, a.dtype), canonical)
    bits = canonical.view(unsigned).copy()
    nan = np.isnan(a)
    negative = (bits & sign) != 0
    bits = np.where(negative, ~bits, bits | sign)
    bits[nan] = np.iinfo(unsigned).max  # above +inf's bits
    return bits


def reference_topk(a, k, largest):
    """torch.topk's rule on a 2-D array: rank by key (NaN the largest), ties to the earlier position."""
    bits = order_bits(a)
    key = (np.iinfo(bits.dtype).max - bits) if largest else bits
    idx = np.argsort(key, axis=-1, kind="stable")[:, :k]
    return np.take_along_axis(a, idx, axis=-1), idx.astype(np.int64)

#!/usr/bin/env python3
"""Issue 17's acceptance, by hand: the Python client sorts, argsorts and takes per-row top-k of numpy
arrays from 1K to 100M elements, every dtype, each answer equal to numpy's (nan="numpy") or to the
service's total order (nan="total"), against a running server. Too slow for CI (100M elements of 12
dtypes); the suite's python.client covers every dtype up to 65537 elements and 3M streamed.

  GPUSORT_SERVER=127.0.0.1:50051 python3 scripts/python-large-check.py [--sizes 1000,1000003,100000000]

Floats carry NaNs of both signs and several payloads, +-0.0, +-inf and subnormals; integers their full
range (8- and 16-bit ones are full of ties). bfloat16 goes as its bits (uint16) with dtype="bfloat16".
Prints a line per dtype and size with each call's time beside numpy's; exits 1 on the first mismatch.
"""
import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "client", "python", "tests"))
import gpusort  # noqa: E402
from reference import order_bits, reference_topk  # noqa: E402

DTYPES = ["int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64", "float16", "bfloat16",
          "float32", "float64"]


def make(name, n, seed):
    rng = np.random.default_rng(seed)
    if name == "bfloat16":  # bits of float32 values, rounded by truncation (any bits are keys)
        bits = make("float32", n, seed).view(np.uint32) >> 16
        return bits.astype(np.uint16)
    dtype = np.dtype(name)
    if dtype.kind != "f":
        info = np.iinfo(dtype)
        return rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True)
    a = (rng.standard_normal(n) * 1000).astype(dtype)
    unsigned = np.dtype("u%d" % dtype.itemsize)
    specials = np.array([np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, np.finfo(dtype).tiny / 4,
                         -np.finfo(dtype).tiny / 4, np.finfo(dtype).max, np.finfo(dtype).min], dtype=dtype)
    where = rng.integers(0, n, max(1, n // 100))
    a[where] = specials[rng.integers(0, len(specials), len(where))]
    # NaNs with other payloads, of both signs
    nan_bits = np.array(np.nan, dtype).view(unsigned)
    some = rng.integers(0, n, max(1, n // 1000))
    a.view(unsigned)[some] = nan_bits | unsigned.type(3) | (rng.integers(0, 2, len(some)).astype(unsigned)
                                                            << unsigned.type(8 * dtype.itemsize - 1))
    return a


def as_numpy_float(bits):  # bfloat16 bits -> float32 values, numpy's view of the keys
    return (bits.astype(np.uint32) << 16).view(np.float32)


def timed(f):
    t = time.perf_counter()
    r = f()
    return r, time.perf_counter() - t


def check(name, n, client, rows):
    a = make(name, n, n)
    dtype = "bfloat16" if name == "bfloat16" else None
    view = as_numpy_float(a) if name == "bfloat16" else a
    # sort, stable, numpy's order: the caller's own bits in numpy's stable order
    got, t_sort = timed(lambda: client.sort(a, stable=True, dtype=dtype, nan="numpy"))
    order, t_np = timed(lambda: np.argsort(view, kind="stable"))
    if not np.array_equal(got.view(np.uint8), a[order].view(np.uint8)):
        return "sort (nan='numpy', stable) differs from numpy's"
    # argsort, stable
    got_idx, t_arg = timed(lambda: client.argsort(a, stable=True, dtype=dtype, nan="numpy"))
    if not np.array_equal(got_idx, order):
        return "argsort differs from numpy.argsort(kind='stable')"
    # the service's total order: ascending ordered bits, every NaN by sign and payload
    total = client.sort(a, dtype=dtype, nan="total")
    if name in ("float16", "float32", "float64", "bfloat16"):
        width = a.dtype.itemsize
        unsigned = np.dtype("u%d" % width)
        sign = unsigned.type(1) << unsigned.type(8 * width - 1)
        bits = a.view(unsigned)
        ordered = np.where((bits & sign) != 0, ~bits, bits | sign)
        if not np.array_equal(total.view(unsigned), a.view(unsigned)[np.argsort(ordered, kind="stable")]):
            return "sort (nan='total') is not the total order"
    elif not np.array_equal(total, np.sort(a)):
        return "sort differs from numpy.sort"
    # per-row top-k, torch.topk's rule (NaN the largest, ties to the earlier position)
    m = n // rows
    two_d = a[: rows * m].reshape(rows, m)
    (values, indices), t_topk = timed(lambda: client.topk(two_d, 10, dtype=dtype, nan="numpy"))
    ref_view = view[: rows * m].reshape(rows, m)
    bits = order_bits(ref_view)
    ref_idx = np.argsort(np.iinfo(bits.dtype).max - bits, axis=-1, kind="stable")[:, :10]
    if not np.array_equal(indices, ref_idx):
        return "top-k indices differ from the reference"
    if not np.array_equal(values.view(np.uint8), np.take_along_axis(two_d, ref_idx, axis=-1).view(np.uint8)):
        return "top-k values differ from the reference"
    print(f"{name:9s} {n:>11,} ok: sort {t_sort:7.3f} s (numpy argsort {t_np:7.3f} s), argsort {t_arg:7.3f} s, "
          f"top-10 of {rows} rows {t_topk:7.3f} s", flush=True)
    return None


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,1000003,100000000")
    parser.add_argument("--dtypes", default=",".join(DTYPES))
    args = parser.parse_args()
    client = gpusort.Client(os.environ.get("GPUSORT_SERVER", "127.0.0.1:50051"), timeout=600)
    for n in [int(s) for s in args.sizes.split(",")]:
        for name in args.dtypes.split(","):
            problem = check(name, n, client, rows=max(1, min(1000, n // 1000)))
            if problem:
                print(f"{name} {n}: {problem}", flush=True)
                return 1
    print("every answer equal to the reference")
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/python3
"""Writes the seed corpora of npy_reader_fuzzer (files from NumPy's own writer: every dtype the CLI reads,
1-D, 2-D, 0-d, empty, format versions 1.0 and 2.0, and a few it must refuse) and text_reader_fuzzer
(first byte: the dtype's index, i32 u32 i64 u64 f32 f64; then the file). Run once by hand; the output is
checked in. usage: npy_seeds.py CORPUS_DIR"""
import io
import os
import sys

import numpy as np

root = sys.argv[1]


def write(target, name, data):
    os.makedirs(os.path.join(root, target), exist_ok=True)
    with open(os.path.join(root, target, name), "wb") as f:
        f.write(data)


def npy(array, version=None):
    out = io.BytesIO()
    np.lib.format.write_array(out, array, version=version)
    return out.getvalue()


for dtype in ["<i4", "<u4", "<i8", "<u8", "<f4", "<f8"]:
    write("npy_reader_fuzzer", dtype[1:] + "_1d", npy(np.arange(5, dtype=dtype)))
write("npy_reader_fuzzer", "f8_2d", npy(np.arange(6, dtype="<f8").reshape(2, 3)))
write("npy_reader_fuzzer", "i4_empty", npy(np.zeros(0, dtype="<i4")))
write("npy_reader_fuzzer", "u8_0d", npy(np.array(7, dtype="<u8")))
write("npy_reader_fuzzer", "f4_v2", npy(np.arange(3, dtype="<f4"), version=(2, 0)))
# Refused: big-endian, Fortran order, three dimensions, a byte short.
write("npy_reader_fuzzer", "bad_big_endian", npy(np.arange(2, dtype=">i4")))
write("npy_reader_fuzzer", "bad_fortran", npy(np.asfortranarray(np.arange(4, dtype="<i8").reshape(2, 2))))
write("npy_reader_fuzzer", "bad_3d", npy(np.zeros((1, 1, 2), dtype="<u4")))
write("npy_reader_fuzzer", "bad_short", npy(np.arange(2, dtype="<f8"))[:-1])

texts = {
    0: b"1\n-2\n  3  \n# a comment\n\n2147483647\n-2147483648\n",
    1: b"4294967295\r\n0\r\n+7\r\n",
    2: b"-9223372036854775808\n9223372036854775807\n",
    3: b"18446744073709551615\n18446744073709551616\n",
    4: b"nan\n-nan\ninf\n-inf\n-0\n1e-45\n3.4028235e+38\n0.1\n",
    5: b"1e-310\n-0.0\n+1.5\n1.7976931348623157e308\nseven\n",
}
for index, text in texts.items():
    write("text_reader_fuzzer", "dtype%d" % index, bytes([index]) + text)

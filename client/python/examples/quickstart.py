"""Sort, argsort and per-row top-k of numpy arrays on a gpusort server ($GPUSORT_SERVER, default
127.0.0.1:50051), each checked against numpy. From the checkout (scripts/demo.sh runs it):

    /usr/bin/python3 client/python/examples/quickstart.py

or with the package installed (pip install --no-build-isolation ./client/python): python3 quickstart.py
"""
import os
import sys

try:
    import gpusort
except ImportError:  # run from the checkout: the package next door, its stubs generated first
    package_root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    sys.path.insert(0, package_root)
    import build_protos

    build_protos.generate(package_root)
    import gpusort

import numpy as np

rng = np.random.default_rng(0)
client = gpusort.Client()  # $GPUSORT_SERVER or 127.0.0.1:50051

a = rng.standard_normal(1_000_000).astype(np.float32)
a[::1000] = np.nan
s = client.sort(a)  # numpy's order by default: NaNs last
print("sort of 1M float32 with NaNs equals numpy.sort:", np.array_equal(s, np.sort(a), equal_nan=True))
print("  served by", client.last_info.backend.name, client.last_info.algorithm.name,
      "in %.2f ms of server time" % (client.last_info.server_seconds * 1e3))

i = client.argsort(a)  # numpy.argsort(a, kind="stable")
print("stable argsort equals numpy's:", np.array_equal(i, np.argsort(a, kind="stable")))

scores = rng.standard_normal((512, 4096)).astype(np.float16)
values, indices = client.topk(scores, 10)  # per row, like torch.topk(scores, 10)
want = np.argsort(-scores.astype(np.float32), axis=-1, kind="stable")[:, :10]
print("top 10 of each of 512 float16 rows: indices", indices.shape, "equal to the reference:",
      np.array_equal(indices, want))

ids = rng.integers(0, 1 << 40, 200_000, dtype=np.int64)
payload = np.arange(ids.size, dtype=np.float64)
sorted_ids, moved = client.sort_with(ids, payload, stable=True)
print("sort_with keeps each value with its key:", np.array_equal(ids[moved.astype(np.int64)], sorted_ids))

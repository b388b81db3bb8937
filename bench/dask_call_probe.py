#!/usr/bin/env python3
"""Where one gpusort.dask block's time goes (issue 45): a server started here, a 16M float64 block,
top-100 and a sort carrying int64 values, from one caller on the shared-memory socket and over gRPC,
AUTO and named kernels, with the server's own CallInfo beside the caller's wall time; then 16 threads
at once. The caller's time less the server's is the Python client's own work on the keys.

  python bench/dask_call_probe.py SERVER_BINARY [cuda|cpu]
  (GPU machine: build/dask-device/python bench/dask_call_probe.py build/dask-device/gpusort-server cuda)
"""
import os
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "client", "python"))

import numpy as np  # noqa: E402

import gpusort  # noqa: E402
from dask_bench import start_server  # noqa: E402


def timed(client, work):
    start = time.perf_counter()
    work()
    wall = time.perf_counter() - start
    info = client.last_info
    return "caller %.4f s, server %.4f s (%s, %s)" % (wall, info.server_seconds, info.backend.name, info.algorithm.name)


def main():
    binary, backend = sys.argv[1], (sys.argv[2] if len(sys.argv) > 2 else "cuda")
    process, target, socket_path = start_server(binary, backend)
    try:
        keys = np.round(np.random.default_rng(1).standard_normal(16 << 20) * 1e6)
        values = np.arange(keys.size, dtype=np.int64)
        algorithms = (None, "RADIX_SELECT") if backend == "cuda" else (None,)
        for name, options in (("shm", {"shm_socket": socket_path}), ("grpc", {})):
            client = gpusort.Client(target, timeout=600, **options)
            for algorithm in algorithms:
                for _ in range(3):
                    print(name, "topk", algorithm or "AUTO", timed(client, lambda: client.topk(keys, 100, algorithm=algorithm)))
            for _ in range(2):
                print(name, "sort_with", timed(client, lambda: client.sort_with(keys, values)))
        start = time.perf_counter()
        np.argpartition(keys, -100)[-100:]
        print("numpy argpartition %.4f s" % (time.perf_counter() - start))
        for algorithm in algorithms:
            seconds = []

            def calls():
                client = gpusort.Client(target, timeout=600, shm_socket=socket_path)
                for _ in range(4):
                    start = time.perf_counter()
                    client.topk(keys, 100, algorithm=algorithm)
                    seconds.append(time.perf_counter() - start)
            threads = [threading.Thread(target=calls) for _ in range(16)]
            start = time.perf_counter()
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            print("16 threads x 4 topk %s: wall %.3f s, a call's median %.3f s"
                  % (algorithm or "AUTO", time.perf_counter() - start, sorted(seconds)[len(seconds) // 2]))
    finally:
        process.terminate()
        process.wait()


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""gpusort.dask beside Dask's own path, on one distributed cluster, the same data (issue 45).

Workloads, each timed as the wall clock of .persist() and a wait on a dataset already persisted on the
workers (generation not timed), median of --repeats, every answer checked against the other path's:
  sort_values: a frame of float64 keys (ties, no NaN) and an int64 row column, by the keys:
               gpusort.dask.sort_values against ddf.sort_values (Dask's sampled shuffle, pandas'
               sort per partition);
  nlargest:    the 100 largest rows: gpusort.dask.nlargest against ddf.nlargest;
  topk:        the 100 largest float64 keys of a dask array: gpusort.dask.topk against
               dask.array.topk.
Where the time goes: the tasks' compute time summed by task (distributed's task stream) and the bytes
the workers spent moving data between them.

  /usr/bin/python3 bench/dask_bench.py --keys 16M [--chunks 16] [--workers 2] [--threads 1]
        [--repeats 3] (--servers host:port,... | --server-bin build/bin/gpusort-server [--backend cpu]
        [--server-count 2])
The data is made on the workers (each partition from its own seed), so 1G keys never pass the client.
On the GPU machine: scripts/dask-device-bundle.sh (its Python has no dask).
"""
import argparse
import gc
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "client", "python"))


def size(text):
    scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1].upper(), 1)
    return int(text[:-1] if scale > 1 else text) * scale


def start_server(binary, backend):
    work = tempfile.mkdtemp(prefix="dask-bench-")
    port_file = os.path.join(work, "port")
    process = subprocess.Popen([binary, "--backend", backend, "--listen", "127.0.0.1:0", "--metrics-listen",
                                "127.0.0.1:0", "--port-file", port_file,
                                "--log-level", "warn", "--shm-socket", os.path.join(work, "shm.sock")],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(600):
        if os.path.exists(port_file):
            for line in open(port_file):
                if line.startswith("grpc_port="):
                    return process, "127.0.0.1:%s" % line.split("=")[1].strip(), os.path.join(work, "shm.sock")
        time.sleep(0.05)
    raise RuntimeError("the server did not start")


def timed(client, make, fetch, repeats):
    """Median seconds of make().persist() and its wait, the last answer as fetch pulls it to the client,
    and the last run's task stream. Each result is released before the next run (Dask's own graphs have
    the same keys each time and would be found done) and after its answer is fetched, so one sort's
    output at a time lives on the workers."""
    import distributed

    seconds, answer, tasks = [], None, None
    for _ in range(repeats):
        time.sleep(0.5)
        with distributed.get_task_stream(client) as stream:
            start = time.perf_counter()
            result = make().persist()
            distributed.wait(result)
            seconds.append(time.perf_counter() - start)
        answer, tasks = fetch(result), stream.data
        del result
        gc.collect()  # a collection's futures can sit in reference cycles: release them now
    return statistics.median(seconds), answer, tasks


def where(tasks):
    """Compute seconds by task name, and seconds of transfers, summed over the workers."""
    from distributed.utils import key_split

    by_name, moved_s = {}, 0.0
    for t in tasks:
        name = key_split(t["key"])
        for part in t.get("startstops", ()):
            span = part["stop"] - part["start"]
            if part["action"] == "compute":
                by_name[name] = by_name.get(name, 0.0) + span
            elif part["action"] == "transfer":
                moved_s += span
    top = sorted(by_name.items(), key=lambda kv: -kv[1])[:5]
    return ", ".join("%s %.2f s" % kv for kv in top) + "; transfers %.2f s" % moved_s


def made_on_workers(n, chunks):
    """A frame of float64 keys (rounded normal: ties, no NaN) and an int64 row column, made per partition."""
    import dask
    import dask.dataframe as dd
    import numpy as np
    import pandas as pd

    def part(index, start, stop):
        keys = np.round(np.random.default_rng(index + 1).standard_normal(stop - start) * 1e6)
        return pd.DataFrame({"key": keys, "row": np.arange(start, stop)}, index=pd.RangeIndex(start, stop))

    step = -(-n // chunks)
    starts = list(range(0, n, step))
    parts = [dask.delayed(part)(i, s, min(n, s + step)) for i, s in enumerate(starts)]
    meta = pd.DataFrame({"key": np.empty(0, np.float64), "row": np.empty(0, np.int64)})
    return dd.from_delayed(parts, meta=meta, divisions=starts + [n - 1])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--keys", default="16M")
    parser.add_argument("--chunks", type=int, default=16)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--servers", default="")
    parser.add_argument("--server-bin", default="")
    parser.add_argument("--backend", default="cpu")
    parser.add_argument("--server-count", type=int, default=2)
    parser.add_argument("--memory-limit", default="auto",
                        help="each worker's (distributed's memory_limit); 0: no limit, no spilling to disk")
    args = parser.parse_args()
    import dask.array as da
    import distributed
    import numpy as np

    import gpusort.dask as gd

    started = []
    n = size(args.keys)
    try:
        if args.server_bin:
            for _ in range(args.server_count):
                started.append(start_server(args.server_bin, args.backend))
            servers = gd.Servers([s[1] for s in started], shm_sockets={s[1]: s[2] for s in started}, timeout=3600)
        else:
            servers = gd.Servers(args.servers.split(","), timeout=3600)
        with distributed.LocalCluster(n_workers=args.workers, threads_per_worker=args.threads, processes=True,
                                      memory_limit=0 if args.memory_limit == "0" else args.memory_limit,
                                      dashboard_address=None, silence_logs=40) as cluster, \
                distributed.Client(cluster) as client:
            ddf = made_on_workers(n, args.chunks).persist()
            darr = ddf["key"].to_dask_array(lengths=True).persist()
            distributed.wait([ddf, darr])
            print("dask_bench: %d float64 keys (%.1f MiB), %d partitions, %d workers x %d threads, servers %s"
                  % (n, n * 8 / 2**20, args.chunks, args.workers, args.threads, servers))
            # Selections first: they need little memory, so their figures land even where a sort of 1G rows
            # does not fit.
            key_column = lambda frame: frame["key"].compute().to_numpy()  # noqa: E731
            cases = [
                ("topk 100", lambda: gd.topk(darr, 100, servers)[0], lambda: da.topk(darr, 100),
                 lambda r: np.asarray(r.compute())),
                ("nlargest 100", lambda: gd.nlargest(ddf, 100, "key", servers), lambda: ddf.nlargest(100, "key"),
                 key_column),
                ("sort_values", lambda: gd.sort_values(ddf, "key", servers=servers),
                 lambda: ddf.sort_values("key"), key_column),
            ]
            for name, ours, theirs, fetch in cases:
                ours_s, a, ours_tasks = timed(client, ours, fetch, args.repeats)
                theirs_s, b, theirs_tasks = timed(client, theirs, fetch, args.repeats)
                same = np.array_equal(a, b) and (name != "sort_values" or len(a) == n)
                print("%-13s gpusort.dask %.3f s  dask %.3f s  ratio %.2fx  %s" %
                      (name, ours_s, theirs_s, theirs_s / ours_s, "same answer" if same else "DIFFERENT ANSWER"))
                print("    gpusort.dask: %s" % where(ours_tasks))
                print("    dask:         %s" % where(theirs_tasks))
                del a, b
    finally:
        for process, _, _ in started:
            process.terminate()
            process.wait()


if __name__ == "__main__":
    main()

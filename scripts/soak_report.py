#!/usr/bin/env python3
"""Judges a soak (scripts/soak.sh): no failed or wrong answer in any workload, and the server's memory,
descriptors and threads flat. Prints the figures, then PASS or each failure; exits 1 on a failure.

Flat means: after a warm-up of the first quarter of the samples, RSS over the second half of the rest
stays within 25% + 64 MiB of the highest RSS of its first half (allocator caches and the CUDA pool grow
to a working set early, then must stop growing),
descriptors within 16 of the first half's highest, threads within 8 of it, and the device pool's used
bytes back near zero once the load has stopped.
usage: soak_report.py OUT_DIR BACKEND SECONDS"""
import csv
import glob
import json
import os
import sys


def main():
    out, backend, seconds = sys.argv[1], sys.argv[2], float(sys.argv[3])
    failures = []
    total_ok = total_keys = 0
    print(f"soak: backend {backend}, {seconds:.0f} s of load")
    print(f"{'workload':<22} {'ok':>9} {'errors':>7} {'wrong':>6} {'req/s':>9} {'p99 ms':>9}")
    for path in sorted(glob.glob(os.path.join(out, "bench-*.json"))):
        name = os.path.basename(path)[len("bench-"):-len(".json")]
        with open(path) as f:
            rows = json.load(f)["rows"]
        for row in rows:
            wrong = row["errors_by_code"].get("WRONG_ANSWER", 0)
            total_ok += row["requests"]
            total_keys += row["requests"] * row["count"]
            print(f"{name:<22} {row['requests']:>9} {row['errors']:>7} {wrong:>6} "
                  f"{row['requests_per_s']:>9.1f} {row['latency_ms']['p99']:>9.2f}")
            if row["errors"]:
                failures.append(f"{name}: {row['errors']} failed calls {row['errors_by_code']} "
                                f"{row['error_messages']}")
            if row["requests"] == 0:
                failures.append(f"{name}: no call was answered")
    with open(os.path.join(out, "samples.csv")) as f:
        samples = [r for r in csv.DictReader(f) if r["rss_kib"]]
    if len(samples) < 4:
        failures.append(f"only {len(samples)} resource samples")
    else:
        # The first quarter is the warm-up (allocator caches, the CUDA pool and gRPC's buffers grow to
        # their working set); the rest is split in halves, and the second must not outgrow the first.
        # The last sample is taken after the load stopped.
        loaded = samples[len(samples) // 4:-1] or samples
        half = max(1, len(loaded) // 2)
        first, second = loaded[:half], loaded[half:] or loaded

        def top(rows, key):
            return max(float(r[key]) for r in rows)

        rss1, rss2 = top(first, "rss_kib") / 1024, top(second, "rss_kib") / 1024
        fd1, fd2 = top(first, "fds"), top(second, "fds")
        th1, th2 = top(first, "threads"), top(second, "threads")
        print(f"RSS MiB: first half max {rss1:.0f}, second half max {rss2:.0f}, last {float(samples[-1]['rss_kib'])/1024:.0f}")
        print(f"descriptors: first half max {fd1:.0f}, second half max {fd2:.0f}, last {samples[-1]['fds']}")
        print(f"threads: first half max {th1:.0f}, second half max {th2:.0f}, last {samples[-1]['threads']}")
        if rss2 > rss1 * 1.25 + 64:
            failures.append(f"RSS grew: {rss1:.0f} MiB in the first half, {rss2:.0f} MiB in the second")
        if fd2 > fd1 + 16:
            failures.append(f"descriptors grew: {fd1:.0f} -> {fd2:.0f}")
        if th2 > th1 + 8:
            failures.append(f"threads grew: {th1:.0f} -> {th2:.0f}")
        dev = [float(r["device_used_bytes"]) for r in samples if r["device_used_bytes"]]
        pool = [float(r["pool_used_bytes"]) for r in samples if r["pool_used_bytes"]]
        if dev:
            print(f"device used MiB: first {dev[0]/2**20:.0f}, max {max(dev)/2**20:.0f}, last {dev[-1]/2**20:.0f}")
            dev_loaded = dev[len(dev) // 4:-1] or dev
            mid = max(1, len(dev_loaded) // 2)
            d1, d2 = max(dev_loaded[:mid]), max(dev_loaded[mid:] or dev_loaded)
            if d2 > d1 * 1.10 + 256 * 2**20:
                failures.append(f"device memory grew: {d1/2**20:.0f} -> {d2/2**20:.0f} MiB")
        if pool:
            print(f"pool used MiB at the end (no load): {pool[-1]/2**20:.1f}")
            if pool[-1] > 0:
                failures.append(f"{pool[-1]:.0f} bytes of the device pool still held after the load")
    print(f"answered calls: {total_ok}, keys: {total_keys}")
    if failures:
        for f in failures:
            print("FAIL:", f)
        sys.exit(1)
    print("PASS")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Markdown tables from scripts/service-bench.sh's JSON files (and kernel_bench's JSON for kernel time).

  python3 bench/service_report.py DIR [--kernel kernel.json]

Tables: (1) by size, the median end-to-end time of sort and echo over unary, streaming and shared
memory, beside the CUB kernel alone and plain loopback TCP moving the same bytes (bench/tcp_floor:
store-and-forward on one connection and on the streamed sort's connections); (2) streaming chunk sizes at 16M keys; (3) 1000-key sorts at 64 in
flight beside echo. Python 3 standard library only.
"""

import argparse
import glob
import json
import os

SIZES = {"1K": 1 << 10, "64K": 1 << 16, "1M": 1 << 20, "4M": 1 << 22, "16M": 1 << 24, "64M": 1 << 26,
         "256M": 1 << 28}


def load_rows(directory):
    rows = {}
    for path in glob.glob(os.path.join(directory, "*.json")):
        name = os.path.basename(path)[:-5]
        try:
            with open(path) as f:
                document = json.load(f)
        except (OSError, json.JSONDecodeError):
            continue
        if isinstance(document, dict) and document.get("rows"):
            rows[name] = document["rows"][0]
    return rows


def p50(row):
    return None if row is None or row.get("requests", 0) == 0 else row["latency_ms"]["p50"]


def fmt(value):
    if value is None:
        return "—"
    return f"{value:.3f}" if value < 10 else f"{value:.1f}"


def ratio(a, b):
    return "—" if a is None or b is None or b <= 0 else f"{a / b:.2f}"


def kernel_times(path):
    if not path or not os.path.exists(path):
        return {}
    with open(path) as f:
        document = json.load(f)
    records = document if isinstance(document, list) else document.get("records", [])
    return {r["n"]: r["median_ms"] for r in records
            if r.get("case") == "u32_random" and r.get("method") == "cub_direct"}


def size_table(rows, kernel):
    print("| keys | sort unary ms | echo unary ms | sort stream ms | echo stream ms | stream sort/echo "
          "| unary/stream sort | sort shm ms | CUB kernel ms | TCP store x1 ms | TCP store, stream's conns ms "
          "| stream sort/TCP floor |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for label, n in SIZES.items():
        get = lambda kind: p50(rows.get(f"size-{label}-{kind}"))
        su, eu, ss, es, sh = (get("sort-unary"), get("echo-unary"), get("sort-stream"), get("echo-stream"),
                              get("sort-shm"))
        if all(v is None for v in (su, eu, ss, es, sh)):
            continue
        tcp1 = p50(rows.get(f"size-{label}-x1-tcp-store"))
        tcp8 = p50(rows.get(f"size-{label}-x8-tcp-store"))
        floor = tcp8 if tcp8 is not None else tcp1
        print(f"| {label} | {fmt(su)} | {fmt(eu)} | {fmt(ss)} | {fmt(es)} | {ratio(ss, es)} | {ratio(su, ss)} "
              f"| {fmt(sh)} | {fmt(kernel.get(n))} | {fmt(tcp1)} | {fmt(tcp8)} | {ratio(ss, floor)} |")


def chunk_table(rows):
    chunks = [c for c in ("256K", "1M", "4M", "16M") if f"chunk-{c}-sort" in rows]
    if not chunks:
        return
    print()
    print("| chunk | sort stream ms | echo stream ms | sort/echo |")
    print("|---:|---:|---:|---:|")
    for c in chunks:
        s, e = p50(rows.get(f"chunk-{c}-sort")), p50(rows.get(f"chunk-{c}-echo"))
        print(f"| {c} | {fmt(s)} | {fmt(e)} | {ratio(s, e)} |")


def small_table(rows):
    names = sorted(n for n in rows if n.startswith("small-") and "-tcp-" not in n)
    if not names:
        return
    print()
    print("| run | req/s | p50 ms | p99 ms | errors | req/s vs echo | p99 vs echo |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name in names:
        r = rows[name]
        conns = name.split("-")[2]
        echo = rows.get(f"small-c64-{conns}-echo")
        lat = r["latency_ms"]
        rel_rate = ratio(r["requests_per_s"], echo["requests_per_s"]) if echo else "—"
        rel_p99 = ratio(lat["p99"], echo["latency_ms"]["p99"]) if echo else "—"
        print(f"| {name} | {r['requests_per_s']:.0f} | {lat['p50']:.3f} | {lat['p99']:.3f} | {r['errors']} "
              f"| {rel_rate} | {rel_p99} |")
    for pattern in ("echo", "store"):
        floor = rows.get(f"small-tcp-{pattern}")
        if floor:
            print(f"| plain TCP {pattern}, 4000 bytes, one at a time | {floor['requests_per_s']:.0f} "
                  f"| {floor['latency_ms']['p50']:.3f} | {floor['latency_ms']['p99']:.3f} | 0 | | |")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("directory")
    parser.add_argument("--kernel", help="kernel_bench JSON, for the CUB kernel column")
    args = parser.parse_args()
    rows = load_rows(args.directory)
    size_table(rows, kernel_times(args.kernel))
    chunk_table(rows)
    small_table(rows)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Markdown tables from scripts/auto-routing-bench.sh's JSON files (issue 18).

  python3 bench/auto_routing_report.py DIR

Grid: for each size and concurrency, requests/s and p99 of the CPU-only server, GPU-only routing, and
the size and load routings (each the median over the script's rounds); then each routing's requests/s against the better of the two anchors (the
issue's bar: at least 0.95x) and its p99 against that anchor's p99 (at most 1.2x). Top-k: p50 and
requests/s per transport and server. Python 3 standard library only.
"""
import argparse
import glob
import json
import os

SIZES = ["1K", "16K", "64K", "256K", "1M", "16M"]
SERVERS = ["cpu", "gpu", "size", "load"]


def rows_of(directory, name):
    try:
        with open(os.path.join(directory, name + ".json")) as f:
            return json.load(f).get("rows", [])
    except (OSError, json.JSONDecodeError):
        return []


def by_concurrency(rows):
    return {r["concurrency"]: r for r in rows if r.get("concurrency")}


def median(values):
    values = sorted(values)
    mid = len(values) // 2
    return values[mid] if len(values) % 2 else (values[mid - 1] + values[mid]) / 2


def cells_of(directory, server, n):
    """Per concurrency, requests/s and p99 of one server and size: one file, or the median of the rounds'
    files (grid-SERVER-N-rK.json, as scripts/auto-routing-bench.sh alternates servers round by round)."""
    names = [f"grid-{server}-{n}"] + sorted(os.path.basename(p)[:-5] for p in
                                            glob.glob(os.path.join(directory, f"grid-{server}-{n}-r*.json")))
    per_concurrency = {}
    for name in names:
        for c, row in by_concurrency(rows_of(directory, name)).items():
            if row["requests"]:
                per_concurrency.setdefault(c, []).append(row)
    return {c: {"requests_per_s": median([r["requests_per_s"] for r in rows]),
                "p99": median([r["latency_ms"]["p99"] for r in rows]),
                "rounds": len(rows)}
            for c, rows in per_concurrency.items()}


def grid(directory):
    print("| keys | in flight | cpu req/s | gpu req/s | size req/s | load req/s | cpu p99 | gpu p99 | size p99 "
          "| load p99 | size vs best: req/s, p99 | load vs best: req/s, p99 |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|")
    met = {"size": [0, 0], "load": [0, 0]}
    for n in SIZES:
        runs = {s: cells_of(directory, s, n) for s in SERVERS}
        for c in (1, 4, 16, 64):
            r = {s: runs[s].get(c) for s in SERVERS}
            if not any(r.values()):
                continue
            rate = {s: (r[s]["requests_per_s"] if r[s] else None) for s in SERVERS}
            p99 = {s: (r[s]["p99"] if r[s] else None) for s in SERVERS}
            anchors = [s for s in ("cpu", "gpu") if rate[s]]
            best = max(anchors, key=lambda s: rate[s]) if anchors else None
            cells = []
            for s in ("size", "load"):
                if best is None or rate[s] is None:
                    cells.append("—")
                    continue
                ratio_rate, ratio_p99 = rate[s] / rate[best], p99[s] / p99[best]
                ok = ratio_rate >= 0.95 and ratio_p99 <= 1.2
                met[s][0] += ok
                met[s][1] += 1
                cells.append(f"{ratio_rate:.2f}x, {ratio_p99:.2f}x{'' if ok else ' **miss**'}")
            fmt = lambda v, f: "—" if v is None else f.format(v)
            print(f"| {n} | {c} | " + " | ".join(fmt(rate[s], "{:.0f}") for s in SERVERS) + " | "
                  + " | ".join(fmt(p99[s], "{:.3f}") for s in SERVERS) + f" | {cells[0]} | {cells[1]} |")
    for s in ("size", "load"):
        print(f"\n{s}: the bar met in {met[s][0]} of {met[s][1]} cells")


def controls(directory):
    """Servers named ROUTING-SUFFIX (gpu-b): a second server of a routing, against the first, cell by
    cell: how far two servers that route alike differ in the same run, the noise the bar's 0.95x and
    1.2x must clear."""
    names = sorted({os.path.basename(p).split("-")[1] + "-" + os.path.basename(p).split("-")[2]
                    for p in glob.glob(os.path.join(directory, "grid-*-*-*-r*.json"))})
    for control in names:
        routing = control.split("-")[0]
        print(f"\n| keys | in flight | {routing} req/s | {control} req/s | {control} vs {routing}: req/s, p99 |")
        print("|---:|---:|---:|---:|---|")
        for n in SIZES:
            first, second = cells_of(directory, routing, n), cells_of(directory, control, n)
            for c in (1, 4, 16, 64):
                if c in first and c in second:
                    a, b = first[c], second[c]
                    print(f"| {n} | {c} | {a['requests_per_s']:.0f} | {b['requests_per_s']:.0f} | "
                          f"{b['requests_per_s'] / a['requests_per_s']:.2f}x, {b['p99'] / a['p99']:.2f}x |")


def topk(directory):
    names = sorted(os.path.basename(p)[:-5] for p in glob.glob(os.path.join(directory, "topk-*.json")))
    if not names:
        return
    print("\n| top-100 f32 | in flight | p50 ms | p99 ms | req/s | served by |")
    print("|---|---:|---:|---:|---:|---|")
    for name in names:
        for row in rows_of(directory, name):
            if not row.get("requests"):
                continue
            stages = ", ".join(f"{k} {v:.3f}" for k, v in row.get("server_stage_p50_ms", {}).items())
            print(f"| {name[5:]} | {row['concurrency']} | {row['latency_ms']['p50']:.3f} | {row['latency_ms']['p99']:.3f} "
                  f"| {row['requests_per_s']:.0f} | {stages} |")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("directory")
    args = parser.parse_args()
    grid(args.directory)
    controls(args.directory)
    topk(args.directory)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Markdown tables from top_k_bench's JSON and (optionally) top_k_anchor.py's JSON.

cub_topk_anchor's JSON (--cub: cub::DeviceTopK of CCCL main) joins each case's table as one more row.

First the bench's failures, if any (a method whose answer was wrong, or that returned an error: it has no
timings, and this script then exits 1). Then one table per case: every method's median and min ms, its
bandwidth, its bandwidth over the copy's, and its time over torch.topk's and over the full sort's. Then
issue 7's targets, one line per case: the fastest gpusort kernel against the target, PASS or MISS
(MISSING when no gpusort kernel was measured; REPORTED where the issue sets no target). The last line
counts them (the GPU loop's summary shows it). Python 3 standard library only.

Bandwidth: a method's GB/s is the input's bytes (4 per key, read once) over its median time; copy_d2d's
is the bytes it moves (read + write: twice the input's) over its time, as CUDA's bandwidthTest counts a
copy. "/ copy" is a method's GB/s over copy_d2d's (1.00: it reads its input as fast as a copy moves
bytes).

  python3 bench/top_k_report.py --bench topk.json [--torch topk_torch.json] [--cub topk_cub.json] [--strict]
"""

import argparse
import json
import os
import sys

M = 1 << 20

# Issue 7: torch.topk as the issue measured it on the H100, and the target for our fastest kernel (ms).
TARGETS = {
    "f32_256M_k10": ("5.2-5.4", 0.6),
    "f32_256M_k100": ("5.2-5.4", 0.6),
    "f32_256M_k1000": ("5.2-5.4", 0.6),
    "f32_256M_k100000": ("5.2-5.4", 0.6),
    "f32_16M_k100": ("0.384", 0.1),
    "f32_rows_1024x4096_k10": ("0.135", 0.09),
    "f32_rows_4096x1024_k32": ("0.169", 0.11),
    "f32_rows_65536x256_k10": (None, None),  # an extra row: reported, no target
}
COPY = "copy_d2d"
FULL_SORT = "cub_full_sort"
THREAD_LISTS = "gpusort_thread_lists"
TORCH = "torch_topk"
CUB_TOPK = "cub_device_topk"


def load(path):
    with open(path) as f:
        return json.load(f)


def ms(value):
    if value is None:
        return "—"
    return f"{value:.1f}" if value >= 100 else f"{value:.3f}" if value >= 0.1 else f"{value:.4f}"


def ratio(numerator, denominator):
    if numerator is None or denominator is None or denominator <= 0:
        return "—"
    return f"{numerator / denominator:.2f}"


def size(n):
    for shift, suffix in ((30, "G"), (20, "M"), (10, "K")):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return f"{n >> shift}{suffix}"
    return str(n)


def shape(record):
    rows = record.get("rows", 1)
    return size(record["n"]) if rows == 1 else f"{rows} x {record['row_length']}"


def gb_per_s(record):
    """GB/s as the legend says: input bytes read once, or for the copy the bytes it moves."""
    median = record.get("median_ms")
    if not median:
        return None
    read = record["n"] * 4 / (median * 1e-3) / 1e9
    return 2 * read if record["method"] == COPY else read


def group(records):
    """{case: {method: record}}, cases and methods in the order they first appear."""
    out = {}
    for r in records:
        out.setdefault(r["case"], {})[r["method"]] = r
    return out


def same_shape(a, b):
    return all(a.get(f) == b.get(f) for f in ("n", "rows", "row_length", "k"))


def print_tables(by_case, torch_by_case, cub_by_case=None):
    for case, methods in by_case.items():
        first = next(iter(methods.values()))
        torch = torch_by_case.get(case)
        if torch and not same_shape(torch, first):
            print(f"WARNING: torch's {case} has another shape or k; left out of this table")
            torch = None
        cub = (cub_by_case or {}).get(case)
        if cub and not same_shape(cub, first):
            print(f"WARNING: cub_topk_anchor's {case} has another shape or k; left out of this table")
            cub = None
        copy = methods.get(COPY)
        full = methods.get(FULL_SORT)
        copy_gbps = gb_per_s(copy) if copy else None
        print(f"### {case}: {shape(first)}, k = {first['k']}")
        print()
        header = ["method", "median ms", "min ms", "GB/s", "/ copy", "/ torch", f"/ {FULL_SORT}", "runs"]
        print("| " + " | ".join(header) + " |")
        print("|---|" + "---:|" * (len(header) - 1))
        rows = list(methods.values()) + ([torch] if torch else []) + ([cub] if cub else [])
        for r in rows:
            median = r.get("median_ms")
            gbps = gb_per_s(r)
            cells = [r["method"], ms(median), ms(r.get("min_ms")), "—" if gbps is None else f"{gbps:.0f}",
                     ratio(gbps, copy_gbps), ratio(median, torch["median_ms"]) if torch else "—",
                     ratio(median, full["median_ms"]) if full else "—",
                     f"{r.get('runs', '?')}"]
            print("| " + " | ".join(cells) + " |")
        print()


def print_targets(by_case, torch_by_case):
    """One line per case: the fastest gpusort kernel against issue 7's target. Returns the verdicts."""
    print("### Issue 7 targets (the fastest gpusort kernel of each case)")
    print()
    header = ["case", "fastest gpusort", "ms", "/ copy", "thread_lists ms", "full sort ms", "torch ms",
              "/ torch", "torch (issue)", "target ms", "verdict"]
    print("| " + " | ".join(header) + " |")
    print("|---|---|" + "---:|" * (len(header) - 3) + "---|")
    verdicts = []
    for case, (torch_issue, target) in TARGETS.items():
        methods = by_case.get(case, {})
        ours = [r for m, r in methods.items() if m.startswith("gpusort_")]
        best = min(ours, key=lambda r: r["median_ms"]) if ours else None
        torch = torch_by_case.get(case)
        copy = methods.get(COPY)
        if best is None:
            verdict = "MISSING"
        elif target is None:
            verdict = "REPORTED"
        else:
            verdict = "PASS" if best["median_ms"] <= target else "MISS"
        verdicts.append(verdict)
        best_ms = best["median_ms"] if best else None
        cells = [case, best["method"] if best else "—", ms(best_ms),
                 ratio(gb_per_s(best), gb_per_s(copy)) if best and copy else "—",
                 ms(methods[THREAD_LISTS]["median_ms"]) if THREAD_LISTS in methods else "—",
                 ms(methods[FULL_SORT]["median_ms"]) if FULL_SORT in methods else "—",
                 ms(torch["median_ms"]) if torch else "—",
                 ratio(best_ms, torch["median_ms"]) if torch else "—",
                 torch_issue or "—", "—" if target is None else f"{target}", f"**{verdict}**"]
        print("| " + " | ".join(cells) + " |")
    print()
    return verdicts


def main():
    parser = argparse.ArgumentParser(description="top_k_bench and top_k_anchor.py JSON as markdown")
    parser.add_argument("--bench", required=True, help="top_k_bench --json output")
    parser.add_argument("--torch", help="top_k_anchor.py --json output (optional)")
    parser.add_argument("--cub", help="cub_topk_anchor --json output (optional; CCCL main's DeviceTopK)")
    parser.add_argument("--strict", action="store_true", help="exit 1 when a target is MISS or MISSING")
    args = parser.parse_args()

    if not os.path.exists(args.bench):
        print(f"top_k_report: {args.bench} is missing: top_k_bench did not finish (see its log); no tables")
        return 1
    bench = load(args.bench)
    torch_doc = load(args.torch) if args.torch and os.path.exists(args.torch) else {"records": []}
    device = bench.get("device", "?")
    print(f"top_k_bench device: {device} (CUDA runtime {bench.get('cuda_runtime', '?')}, "
          f"CUB {bench.get('cub_version', '?')})")
    print(f"keys: {bench.get('input', '?')}")
    print(f"median and min of {bench.get('runs', '?')} runs after {bench.get('warmup', '?')} warm-up "
          f"({bench.get('slow_runs', '?')} runs for {FULL_SORT} from 64M keys and for calls over "
          f"{bench.get('slow_ms', '?')} ms), L2 flushed before each call")
    if args.torch:
        if torch_doc.get("skipped"):
            print(f"torch anchor: skipped ({torch_doc['skipped']})")
        elif not torch_doc.get("records"):
            print("torch anchor: no records")
        else:
            torch_device = torch_doc.get("device", "?")
            print(f"torch anchor device: {torch_device} (torch {torch_doc.get('torch_version', '?')}, "
                  f"median of {torch_doc.get('runs', '?')} after {torch_doc.get('warmup', '?')} warm-up)")
            if torch_device != device:
                print("WARNING: the two files come from different devices; the torch ratios mean little")
    print()

    failures = bench.get("failures", [])
    if failures:
        print(f"## FAILED: {len(failures)} method(s) gave a wrong answer or an error (no timings for them)")
        print()
        for line in failures:
            print(f"- **FAIL** {line}")
        print()

    print("Device time (CUDA events) in ms. GB/s: input bytes read once / median (copy_d2d: bytes moved, read + "
          "write). `/ copy`: GB/s over copy_d2d's. `/ torch`, `/ cub_full_sort`: time over theirs (< 1: faster).")
    print()
    by_case = group(bench.get("records", []))
    torch_by_case = {r["case"]: r for r in torch_doc.get("records", []) if r.get("method") == TORCH}
    cub_doc = load(args.cub) if args.cub and os.path.exists(args.cub) else {"records": []}
    if args.cub:
        print(f"cub::DeviceTopK anchor: CCCL {cub_doc.get('cccl_version', '?')} on {cub_doc.get('device', '?')}"
              f" ({len(cub_doc.get('records', []))} cases; unsorted output, not deterministic)")
        print()
    cub_by_case = {r["case"]: r for r in cub_doc.get("records", []) if r.get("method") == CUB_TOPK}
    print_tables(by_case, torch_by_case, cub_by_case)
    verdicts = print_targets(by_case, torch_by_case)
    counts = {}
    for v in verdicts:
        counts[v] = counts.get(v, 0) + 1
    line = ", ".join(f"{counts[v]} {v}" for v in ("PASS", "MISS", "MISSING", "REPORTED") if v in counts)
    print(f"acceptance: {line}" + (f"; {len(failures)} FAIL (wrong answers)" if failures else ""))
    if failures:
        return 1
    if args.strict and (counts.get("MISS") or counts.get("MISSING")):
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Markdown tables from kernel_bench's JSON and (optionally) torch_anchor.py's JSON.

One row per kernel_bench case: gpusort AUTO (kernels::RadixSort over the varying bits) beside a direct
CUB call, and torch's sort of the same case where torch_anchor.py measured it. AUTO/CUB < 1 means
gpusort is faster than CUB; torch/AUTO > 1 means gpusort is faster than torch. Torch-only records
(top-k) follow in a second table. Python 3 standard library only.

  python3 bench/kernel_report.py --kernel kernel.json [--torch torch.json]
"""

import argparse
import json
import sys


def load(path):
    with open(path) as f:
        return json.load(f)


def records_of(document):
    # A bare list of records is accepted too.
    return document if isinstance(document, list) else document.get("records", [])


def ms(value):
    return "—" if value is None else f"{value:.3f}" if value >= 0.1 else f"{value:.4f}"


def ratio(numerator, denominator):
    if numerator is None or denominator is None or denominator <= 0:
        return "—"
    return f"{numerator / denominator:.2f}"


def size(n):
    for shift, suffix in ((30, "G"), (20, "M"), (10, "K")):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return f"{n >> shift}{suffix}"
    return str(n)


def kernel_rows(records):
    """{(case, n): {method: record}} in the order the cases first appear."""
    rows = {}
    for r in records:
        rows.setdefault((r["case"], r["n"]), {})[r["method"]] = r
    return rows


def print_sort_table(kernel_records, torch_records):
    torch_sorts = {(r["case"], r["n"]): r for r in torch_records if r.get("method") == "torch_sort"}
    print("| case | n | gpusort AUTO ms | CUB ms | AUTO/CUB | torch ms | torch/AUTO | AUTO bits |")
    print("|---|---:|---:|---:|---:|---:|---:|---|")
    for (case, n), methods in kernel_rows(kernel_records).items():
        auto = methods.get("gpusort_auto")
        cub = methods.get("cub_direct")
        torch = torch_sorts.get((case, n))
        auto_ms = auto["median_ms"] if auto else None
        cub_ms = cub["median_ms"] if cub else None
        torch_ms = torch["median_ms"] if torch else None
        bits = f"[{auto['begin_bit']}, {auto['end_bit']})" if auto and "begin_bit" in auto else "—"
        print(f"| {case} | {size(n)} | {ms(auto_ms)} | {ms(cub_ms)} | {ratio(auto_ms, cub_ms)} | "
              f"{ms(torch_ms)} | {ratio(torch_ms, auto_ms)} | {bits} |")


def print_torch_only_table(kernel_records, torch_records):
    measured = {(r["case"], r["n"]) for r in kernel_records}
    others = [r for r in torch_records if (r["case"], r["n"]) not in measured]
    if not others:
        return
    print()
    print("Torch only (no kernel_bench counterpart):")
    print()
    print("| case | method | n | k | torch ms |")
    print("|---|---|---:|---:|---:|")
    for r in others:
        print(f"| {r['case']} | {r['method']} | {size(r['n'])} | {r.get('k', '—')} | {ms(r['median_ms'])} |")


def main():
    parser = argparse.ArgumentParser(description="kernel_bench and torch_anchor.py JSON as markdown")
    parser.add_argument("--kernel", required=True, help="kernel_bench --json output")
    parser.add_argument("--torch", help="torch_anchor.py --json output (optional)")
    args = parser.parse_args()

    kernel = load(args.kernel)
    torch = load(args.torch) if args.torch else {"records": []}
    kernel_device = kernel.get("device", "?") if isinstance(kernel, dict) else "?"
    print(f"kernel_bench device: {kernel_device}")
    if args.torch:
        if isinstance(torch, dict) and torch.get("skipped"):
            print(f"torch anchor: skipped ({torch['skipped']})")
        else:
            torch_device = torch.get("device", "?") if isinstance(torch, dict) else "?"
            version = torch.get("torch_version", "?") if isinstance(torch, dict) else "?"
            print(f"torch anchor device: {torch_device} (torch {version})")
            if torch_device != kernel_device:
                print("WARNING: the two files come from different devices; the torch ratios mean little")
    print()
    print("Median ms of device time (CUDA events); AUTO/CUB < 1: gpusort faster than CUB; "
          "torch/AUTO > 1: gpusort faster than torch.sort (which also returns int64 indices).")
    print()
    print_sort_table(records_of(kernel), records_of(torch))
    print_torch_only_table(records_of(kernel), records_of(torch))
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Markdown tables from comparison_bench's JSON and (optionally) comparison_anchor.py's JSON.

One table per case (u32_random, the adversarial inputs, odd_even_u32, rows_u32, ...): every method's
median ms, its ratio to each CUB method of that case (< 1: faster than CUB) and to torch.sort of the
same case where comparison_anchor.py measured it (< 1: faster than torch). Then the acceptance checks
of issue 6, each PASS or MISS (MISSING when the bench did not measure it):
  QUICKSORT   1M random keys in at most 3 ms
  MERGE       16M random keys at 0.8x cub_merge's throughput or better
  BITONIC     rows 65536 x 256 in at most 1.0 ms and 16384 x 1024 in at most 0.6 ms (keys only)
  ODD_EVEN    its time at its limit (kOddEvenMaxKeys): reported; PASS/MISS only with --odd-even-max-ms
The last line counts them (the GPU loop's summary shows it). Python 3 standard library only.

  python3 bench/comparison_report.py --bench comparison.json [--torch comparison_torch.json]
                                     [--odd-even-max-ms MS] [--strict]
"""

import argparse
import json
import sys

M = 1 << 20


def load(path):
    with open(path) as f:
        return json.load(f)


def records_of(document):
    return document if isinstance(document, list) else document.get("records", [])


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
    if rows > 1:
        return f"{rows} x {record.get('row_length', record['n'] // rows)}"
    return size(record["n"])


def key(record):
    """A record's size: n and rows (65536 x 256 and 16384 x 1024 are both 16M keys)."""
    return record["n"], record.get("rows", 1)


def group(records):
    """{case: {(n, rows): {method: record}}}, cases, sizes and methods in the order they first appear."""
    out = {}
    for r in records:
        out.setdefault(r["case"], {}).setdefault(key(r), {})[r["method"]] = r
    return out


def print_tables(bench_records, torch_records):
    torch_sorts = {(r["case"],) + key(r): r for r in torch_records if r.get("method") == "torch_sort"}
    for case, sizes in group(bench_records).items():
        cub_methods = []
        for methods in sizes.values():
            cub_methods += [m for m in methods if m.startswith("cub_") and m not in cub_methods]
        has_torch = any((case,) + k in torch_sorts for k in sizes)
        header = ["n" if all(rows == 1 for _, rows in sizes) else "rows x length",
                  "method", "median ms", "min ms", "Gkeys/s"]
        header += [f"/ {m}" for m in cub_methods]
        if has_torch:
            header += ["/ torch"]
        print(f"### {case}")
        print()
        print("| " + " | ".join(header) + " |")
        print("|---|---|" + "---:|" * (len(header) - 2))
        for k, methods in sizes.items():
            torch = torch_sorts.get((case,) + k)
            rows = list(methods.values())
            if torch:
                rows.append(torch)
            for r in rows:
                median = r.get("median_ms")
                gkeys = r.get("gkeys_per_s")
                if gkeys is None and median:
                    gkeys = r["n"] / (median * 1e-3) / 1e9
                cells = [shape(r), r["method"], ms(median), ms(r.get("min_ms")),
                         "—" if gkeys is None else f"{gkeys:.3f}"]
                cells += [ratio(median, methods[c]["median_ms"]) if c in methods else "—" for c in cub_methods]
                if has_torch:
                    cells.append(ratio(median, torch["median_ms"]) if torch else "—")
                print("| " + " | ".join(cells) + " |")
        print()


class Checks:
    def __init__(self, records):
        self.index = {(r["case"],) + key(r) + (r["method"],): r for r in records}
        self.results = []  # (verdict, line)

    def get(self, case, n, method, rows=1):
        return self.index.get((case, n, rows, method))

    def add(self, verdict, line):
        self.results.append((verdict, line))
        print(f"- **{verdict}** {line}")

    def at_most(self, label, case, n, method, limit_ms, extra="", rows=1):
        r = self.get(case, n, method, rows)
        if r is None:
            self.add("MISSING", f"{label}: no {method} record for {case} n={size(n)}")
            return
        verdict = "PASS" if r["median_ms"] <= limit_ms else "MISS"
        self.add(verdict, f"{label}: {ms(r['median_ms'])} ms (limit {limit_ms} ms){extra}")


def print_checks(bench, args):
    records = records_of(bench)
    checks = Checks(records)
    print("### Acceptance (issue 6)")
    print()

    # QUICKSORT: 1M random keys in at most 3 ms; the write-up's quicksort beside it.
    extra = ""
    qs = checks.get("u32_random", M, "gpusort_quicksort")
    writeup = checks.get("u32_random", M, "writeup_quicksort")
    if qs and writeup:
        extra = f"; the write-up's quicksort {ms(writeup['median_ms'])} ms, {writeup['median_ms'] / qs['median_ms']:.0f}x slower"
    checks.at_most("QUICKSORT 1M random", "u32_random", M, "gpusort_quicksort", 3.0, extra)

    # MERGE: 16M random keys at >= 0.8x cub_merge's throughput (= cub_ms / merge_ms >= 0.8).
    merge = checks.get("u32_random", 16 * M, "gpusort_merge")
    cub = checks.get("u32_random", 16 * M, "cub_merge")
    if merge is None or cub is None:
        checks.add("MISSING", "MERGE 16M: no gpusort_merge or cub_merge record for u32_random n=16M")
    else:
        throughput = cub["median_ms"] / merge["median_ms"]
        checks.add("PASS" if throughput >= 0.8 else "MISS",
                   f"MERGE 16M: {ms(merge['median_ms'])} ms vs cub_merge {ms(cub['median_ms'])} ms = "
                   f"{throughput:.2f}x its throughput (at least 0.8x)")
    merge_pos = checks.get("merge_positions_u32", 16 * M, "gpusort_merge_positions")
    cub_pos = checks.get("merge_positions_u32", 16 * M, "cub_merge")
    if merge_pos and cub_pos:
        print(f"- info: MERGE 16M with positions: {ms(merge_pos['median_ms'])} ms vs cub_merge SortPairs "
              f"{ms(cub_pos['median_ms'])} ms = {cub_pos['median_ms'] / merge_pos['median_ms']:.2f}x its throughput")

    # BITONIC over rows, keys only (the positions variant as information).
    for rows, length, limit in ((65536, 256, 1.0), (16384, 1024, 0.6)):
        n = rows * length
        cub = checks.get("rows_u32", n, "cub_segmented", rows)
        extra = f"; cub_segmented {ms(cub['median_ms'])} ms" if cub else ""
        checks.at_most(f"BITONIC rows {rows} x {length}", "rows_u32", n, "gpusort_bitonic_rows", limit, extra,
                       rows)
        with_positions = checks.get("rows_u32_positions", n, "gpusort_bitonic_rows", rows)
        if with_positions:
            print(f"- info: BITONIC rows {rows} x {length} with positions: {ms(with_positions['median_ms'])} ms")

    # ODD_EVEN at its limit.
    limit_n = bench.get("odd_even_max_keys") if isinstance(bench, dict) else None
    odd_even = [r for r in records if r["case"] == "odd_even_u32" and r["method"] == "gpusort_odd_even"]
    if limit_n is None and odd_even:
        limit_n = max(r["n"] for r in odd_even)
    r = checks.get("odd_even_u32", limit_n, "gpusort_odd_even") if limit_n else None
    if r is None:
        checks.add("MISSING", "ODD_EVEN at its limit: no gpusort_odd_even record")
    else:
        others = []
        for method in ("gpusort_bitonic", "cub_radix"):
            o = checks.get("odd_even_u32", limit_n, method)
            if o:
                others.append(f"{method} {ms(o['median_ms'])} ms")
        extra = f" ({', '.join(others)})" if others else ""
        label = f"ODD_EVEN at its limit ({limit_n} keys)"
        if args.odd_even_max_ms is not None:
            checks.at_most(label, "odd_even_u32", limit_n, "gpusort_odd_even", args.odd_even_max_ms, extra)
        else:
            checks.add("REPORTED", f"{label}: {ms(r['median_ms'])} ms{extra}")
    print()
    counts = {}
    for verdict, _ in checks.results:
        counts[verdict] = counts.get(verdict, 0) + 1
    order = ("PASS", "MISS", "MISSING", "REPORTED")
    print("acceptance: " + ", ".join(f"{counts[v]} {v}" for v in order if v in counts))
    return counts


def main():
    parser = argparse.ArgumentParser(description="comparison_bench and comparison_anchor.py JSON as markdown")
    parser.add_argument("--bench", required=True, help="comparison_bench --json output")
    parser.add_argument("--torch", help="comparison_anchor.py --json output (optional)")
    parser.add_argument("--odd-even-max-ms", type=float, help="a limit for ODD_EVEN at its limit (default: none)")
    parser.add_argument("--strict", action="store_true", help="exit 1 when a check is MISS or MISSING")
    args = parser.parse_args()

    bench = load(args.bench)
    torch = load(args.torch) if args.torch else {"records": []}
    bench_device = bench.get("device", "?") if isinstance(bench, dict) else "?"
    print(f"comparison_bench device: {bench_device}")
    if isinstance(bench, dict) and "runs" in bench:
        print(f"median of {bench['runs']} runs after {bench.get('warmup', '?')} warm-up "
              "(writeup_quicksort: 1 warm-up, at most 3 runs from 64K keys)")
    if args.torch:
        if isinstance(torch, dict) and torch.get("skipped"):
            print(f"torch anchor: skipped ({torch['skipped']})")
        else:
            torch_device = torch.get("device", "?") if isinstance(torch, dict) else "?"
            version = torch.get("torch_version", "?") if isinstance(torch, dict) else "?"
            print(f"torch anchor device: {torch_device} (torch {version})")
            if torch_device != bench_device:
                print("WARNING: the two files come from different devices; the torch ratios mean little")
    print()
    print("Median ms of device time (CUDA events). `/ cub_x` and `/ torch`: this method's time over theirs "
          "(< 1: faster). torch.sort sorts int32 and also returns int64 indices.")
    print()
    print_tables(records_of(bench), records_of(torch))
    counts = print_checks(bench, args)
    if args.strict and (counts.get("MISS") or counts.get("MISSING")):
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

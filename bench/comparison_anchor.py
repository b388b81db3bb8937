#!/usr/bin/env python3
"""PyTorch's GPU sort on the cases of comparison_bench, as an outside anchor for its numbers.

Runs on the GPU machine (needs torch with CUDA); anywhere else it says why and exits 0, writing a JSON
file with no records when --json is given, so that comparison_report.py still runs.

Timing is torch_anchor.py's (its Timer, imported): CUDA events around the torch call only, 3 warm-up
calls, median of 15, inputs rotated among 3 tensors, L2 flushed before every call outside the events,
every call queued before the host waits. torch.sort does not modify its input, so nothing is reset.

What torch sorts, per comparison_bench case (case and n join the two files):
  u32_random, u32_sorted, u32_reversed, u32_all_equal, u32_organ_pipe, u32_few_distinct16, odd_even_u32
      int32 (torch has no uint32 sort): the bench's unsigned keys shifted by -2^31, which keeps their
      order and so the shape of the adversarial inputs (the random ones are drawn anew, not the same).
  rows_u32              a (rows, row_length) int32 tensor sorted along dim=1
  rows_u32_positions    the same with stable=True (the row-relative indices torch always returns are
                        the positions)
  merge_positions_u32   stable=True over one int32 vector
torch.sort always returns int64 indices too, so every torch sort is a key + int64 index sort; the
bench's key-only cases move no positions. That is part of what the ratio measures.

  python3 bench/comparison_anchor.py --json PATH [--max-keys N] [--quick] [--only SUBSTRING]
                                     [--runs N] [--warmup N]
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_anchor  # noqa: E402  (the Timer, parse_count, write_json and run_guarded helpers)

K = 1 << 10
M = 1 << 20
ODD_EVEN_MAX_KEYS = 4096  # kernels::kOddEvenMaxKeys (comparison_sorts.h)

ADVERSARIAL = ("u32_sorted", "u32_reversed", "u32_all_equal", "u32_organ_pipe", "u32_few_distinct16")
ROW_SHAPES = ((65536, 256), (16384, 1024))


def cases(args):
    """(case, rows, row_length, stable) as comparison_bench lists them, after --quick and --max-keys."""
    out = []
    for n in (K, 64 * K, M, 16 * M, 64 * M):
        if not (args.quick and n > 16 * M):
            out.append(("u32_random", 1, n, False))
    for n in (M, 16 * M):
        if not (args.quick and n > M):
            out.extend((name, 1, n, False) for name in ADVERSARIAL)
    out.extend(("odd_even_u32", 1, n, False) for n in (K, 2 * K, ODD_EVEN_MAX_KEYS))
    for positions in (False, True):
        for rows, length in ROW_SHAPES:
            out.append(("rows_u32_positions" if positions else "rows_u32", rows, length, positions))
    out.append(("merge_positions_u32", 1, 16 * M, True))
    return [c for c in out if c[1] * c[2] <= args.max_keys and (not args.only or args.only in c[0])]


def unsigned_keys(torch, case, n, seed):
    """comparison_bench's unsigned keys for `case` as int64 in [0, 2^32) (random ones drawn by torch)."""
    if case in ("u32_random", "odd_even_u32", "rows_u32", "rows_u32_positions", "merge_positions_u32"):
        generator = torch.Generator(device="cuda")
        generator.manual_seed(seed)
        return torch.randint(0, 1 << 32, (n,), dtype=torch.int64, device="cuda", generator=generator)
    if case == "u32_few_distinct16":
        generator = torch.Generator(device="cuda")
        generator.manual_seed(seed)
        return torch.randint(0, 16, (n,), dtype=torch.int64, device="cuda", generator=generator) * 0x11111111
    offset = seed % 1000  # the bench's structured inputs differ only by the input's index
    stride = max(1, (1 << 32) // (n + 1))
    i = torch.arange(n, dtype=torch.int64, device="cuda")
    if case == "u32_sorted":
        return i * stride + offset
    if case == "u32_reversed":
        return (n - 1 - i) * stride + offset
    if case == "u32_all_equal":
        return torch.full((n,), 0x9E3779B9 + offset, dtype=torch.int64, device="cuda")
    if case == "u32_organ_pipe":
        return torch.minimum(i, n - 1 - i) * stride + offset
    raise ValueError(f"unknown case {case}")


def time_case(torch, timer, case, rows, row_length, stable):
    n = rows * row_length
    inputs = []
    for r in range(torch_anchor.INPUTS):
        keys = (unsigned_keys(torch, case, n, 1000 + r) - (1 << 31)).to(torch.int32)  # order kept
        inputs.append(keys.view(rows, row_length) if rows > 1 else keys)
    if rows > 1:
        def call(x):
            return torch.sort(x, dim=1, stable=stable)
    else:
        def call(x):
            return torch.sort(x, stable=stable)
    ms = timer.median_ms(call, inputs)
    note = "int32 stands in for uint32; sort also returns int64 indices"
    if rows > 1:
        note += "; 2-D tensor sorted along dim=1"
    if stable:
        note += "; stable=True (the indices are the positions)"
    return {"case": case, "n": n, "rows": rows, "row_length": row_length, "positions": stable,
            "method": "torch_sort", "torch_dtype": "int32", "median_ms": ms,
            "gkeys_per_s": n / (ms * 1e-3) / 1e9 if ms > 0 else 0.0, "note": note}


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", help="write the records here")
    parser.add_argument("--max-keys", type=torch_anchor.parse_count, default=64 * M,
                        help="skip cases with more keys (K/M/G suffixes allowed)")
    parser.add_argument("--quick", action="store_true",
                        help="as comparison_bench --quick: no 64M, adversarial inputs at 1M only")
    parser.add_argument("--only", default="", help="only the cases whose name contains this")
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--warmup", type=int, default=3)
    return parser.parse_args()


def main():
    args = parse_args()
    try:
        import torch
    except ImportError as error:
        print(f"comparison_anchor: torch is not available ({error}); nothing measured")
        torch_anchor.write_json(args.json, {"skipped": f"torch unavailable: {error}", "records": []})
        return 0
    if not torch.cuda.is_available():
        print("comparison_anchor: torch sees no CUDA device; nothing measured")
        torch_anchor.write_json(args.json, {"skipped": "no CUDA device", "records": []})
        return 0

    timer = torch_anchor.Timer(torch, args)
    device = torch.cuda.get_device_name(0)
    print(f"device: {device}, torch {torch.__version__}, CUDA {torch.version.cuda}")
    print(f"median of {args.runs} runs after {args.warmup} warm-up, {torch_anchor.INPUTS} rotating inputs, "
          f"L2 flushed ({timer.flush.numel() >> 20} MiB) before each")
    records = []
    with torch.no_grad():
        for case, rows, row_length, stable in cases(args):
            what = f"{case} {rows}x{row_length}"
            records.append(torch_anchor.run_guarded(
                torch, what, lambda: time_case(torch, timer, case, rows, row_length, stable)))
    torch_anchor.write_json(args.json, {
        "device": device, "torch_version": torch.__version__, "cuda": torch.version.cuda,
        "runs": args.runs, "warmup": args.warmup, "rotating_inputs": torch_anchor.INPUTS,
        "l2_flush_bytes": timer.flush.numel(), "records": [r for r in records if r]})
    return 0


if __name__ == "__main__":
    sys.exit(main())

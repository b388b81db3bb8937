#!/usr/bin/env python3
"""torch.topk on the cases of top_k_bench, as an outside anchor for its numbers.

Runs on the GPU machine (needs torch with CUDA); anywhere else it says why and exits 0, writing a JSON
file with no records when --json is given, so that top_k_report.py still runs.

What torch selects, per top_k_bench case (the case names join the two files): torch.rand float32
tensors of the case's shape (one vector, or rows x row_length selected along dim=-1: the same
distribution as the bench's keys, not the same values), torch.topk(x, k, dim=-1, largest=True,
sorted=True), which returns the values and int64 indices. torch takes the floats as they are; the bench
hands its kernels ordered bits made before timing, so neither side pays for a key transform.

Timing as top_k_bench (and torch_anchor.py, whose L2 flush buffer it uses): CUDA events around the
torch call only, 3 warm-up calls, then median and min of 20, inputs rotated among 3 tensors, the L2
flushed before every call outside the events, every call queued before the host waits.

  python3 bench/top_k_anchor.py --json PATH [--max-keys N] [--quick] [--only NAME[,NAME...]]
                                [--runs N] [--warmup N]
"""

import argparse
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_anchor  # noqa: E402  (the Timer's L2 flush, parse_count, write_json and run_guarded)

M = 1 << 20


def all_cases():
    """(case, rows, row_length, k) exactly as top_k_bench's AllCases lists them."""
    out = [(f"f32_256M_k{k}", 1, 256 * M, k) for k in (10, 100, 1000, 100000)]
    out.append(("f32_16M_k100", 1, 16 * M, 100))
    for rows, length, k in ((1024, 4096, 10), (4096, 1024, 32), (65536, 256, 10)):
        out.append((f"f32_rows_{rows}x{length}_k{k}", rows, length, k))
    out.append(("bf16_256M_k100", 1, 256 * M, 100))
    for rows, length, k in ((128, 131072, 50), (1024, 32000, 50)):
        out.append((f"bf16_rows_{rows}x{length}_k{k}", rows, length, k))
    for rows, length, k in ((128, 131072, 50), (1024, 32000, 50)):
        out.append((f"f16_rows_{rows}x{length}_k{k}", rows, length, k))
    return out


def cases(args):
    """The cases top_k_bench runs with the same --quick, --max-keys and --only."""
    everything = all_cases()
    names = {c[0] for c in everything}
    items = [item for item in args.only.split(",") if item]

    def selected(name):
        # An item that is a full case name selects that case only; any other item, every case containing it.
        return not items or any(name == item if item in names else item in name for item in items)

    return [c for c in everything
            if not (args.quick and c[2] == 256 * M) and c[1] * c[2] <= args.max_keys and selected(c[0])]


def time_ms(torch, flush, call, inputs, warmup, runs):
    """call(input) queued warmup + runs times, L2 flushed before each; (median, min) of the timed ms."""
    events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
              for _ in range(warmup + runs)]
    for i, (start, stop) in enumerate(events):
        flush.fill_(i & 0xFF)
        start.record()
        call(inputs[i % len(inputs)])
        stop.record()
    torch.cuda.synchronize()
    ms = [start.elapsed_time(stop) for start, stop in events[warmup:]]
    return statistics.median(ms), min(ms)


def time_case(torch, flush, args, case, rows, row_length, k):
    shape = (row_length,) if rows == 1 else (rows, row_length)
    dtype_name = "bfloat16" if case.startswith("bf16") else "float16" if case.startswith("f16") else "float32"
    dtype = getattr(torch, dtype_name)
    inputs = []
    for r in range(torch_anchor.INPUTS):
        generator = torch.Generator(device="cuda")
        generator.manual_seed(1000 + r)
        inputs.append(torch.rand(shape, dtype=dtype, device="cuda", generator=generator))

    def call(x):
        return torch.topk(x, k, dim=-1, largest=True, sorted=True)

    median, minimum = time_ms(torch, flush, call, inputs, args.warmup, args.runs)
    n = rows * row_length
    return {"case": case, "n": n, "rows": rows, "row_length": row_length, "k": k, "method": "torch_topk",
            "torch_dtype": dtype_name, "median_ms": median, "min_ms": minimum,
            "read_gb_per_s": n * (4 if dtype_name == "float32" else 2) / (median * 1e-3) / 1e9 if median > 0 else 0.0,
            "warmup": args.warmup, "runs": args.runs,
            "note": f"torch.topk(largest=True, sorted=True) on torch.rand {dtype_name}; returns int64 indices"}


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", help="write the records here")
    parser.add_argument("--max-keys", type=torch_anchor.parse_count, default=256 * M,
                        help="skip cases with more keys (K/M/G suffixes allowed)")
    parser.add_argument("--quick", action="store_true", help="as top_k_bench --quick: no 256M cases")
    parser.add_argument("--only", default="", help="as top_k_bench --only: NAME[,NAME...]")
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=3)
    return parser.parse_args()


def main():
    args = parse_args()
    try:
        import torch
    except ImportError as error:
        print(f"top_k_anchor: torch is not available ({error}); nothing measured")
        torch_anchor.write_json(args.json, {"skipped": f"torch unavailable: {error}", "records": []})
        return 0
    if not torch.cuda.is_available():
        print("top_k_anchor: torch sees no CUDA device; nothing measured")
        torch_anchor.write_json(args.json, {"skipped": "no CUDA device", "records": []})
        return 0

    flush = torch_anchor.Timer(torch, args).flush
    device = torch.cuda.get_device_name(0)
    print(f"device: {device}, torch {torch.__version__}, CUDA {torch.version.cuda}")
    print(f"median and min of {args.runs} runs after {args.warmup} warm-up, {torch_anchor.INPUTS} rotating "
          f"inputs, L2 flushed ({flush.numel() >> 20} MiB) before each")
    records = []
    with torch.no_grad():
        for case, rows, row_length, k in cases(args):
            records.append(torch_anchor.run_guarded(
                torch, case, lambda: time_case(torch, flush, args, case, rows, row_length, k)))
    torch_anchor.write_json(args.json, {
        "device": device, "torch_version": torch.__version__, "cuda": torch.version.cuda,
        "runs": args.runs, "warmup": args.warmup, "rotating_inputs": torch_anchor.INPUTS,
        "l2_flush_bytes": flush.numel(), "records": [r for r in records if r]})
    return 0


if __name__ == "__main__":
    sys.exit(main())

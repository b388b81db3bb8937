#!/usr/bin/env python3
"""PyTorch's GPU sort and top-k on the cases of kernel_bench, as an outside anchor for its numbers.

Runs on the GPU machine (needs torch with CUDA); anywhere else it says why and exits 0, writing a JSON
file with no records when --json is given, so that kernel_report.py still runs.

Timing matches kernel_bench: CUDA events around the torch call only, 3 warm-up calls, median of 15,
inputs rotated among 3 tensors, and L2 flushed (a buffer twice the L2's size overwritten) before every
call, outside the events. torch.sort and torch.topk do not modify their input, so no reset copy is
needed. Every call is queued before the host waits, so the events see device time.

What torch sorts, per kernel_bench case (the case names and n join the two files):
  u32_random       int32 over the full range: torch has no uint32 sort (torch.uint32 is a storage
                   dtype only). Same 4-byte radix sort, signed order instead of unsigned.
  u32_small_range  int32 uniform in [0, 2^16)
  f32_random       float32 uniform in [-1, 1) (torch.rand * 2 - 1, as kernel_bench generates)
  u64_random       int64 over the full range (no uint64 sort either)
  kv_u32_u32       int32 keys sorted, then an int32 payload gathered by the returned indices: torch
                   has no key-value sort, and this is its idiom for one
torch.sort always returns the int64 positions too, so every torch sort is a key + int64 index sort;
kernel_bench's key-only cases move no payload. That is part of what the ratio measures.

  python3 bench/torch_anchor.py --json PATH [--max-keys N] [--quick] [--runs N] [--warmup N]
"""

import argparse
import json
import statistics
import sys

INPUTS = 3  # rotating inputs, as kernel_bench

SORT_CASES = (
    # (case, kernel_bench dtype, torch dtype, sizes)
    ("u32_random", "u32", "int32", [1 << 10, 1 << 16, 1 << 20, 1 << 24, 1 << 26, 1 << 28]),
    ("f32_random", "f32", "float32", [1 << 10, 1 << 16, 1 << 20, 1 << 24, 1 << 26, 1 << 28]),
    ("u64_random", "u64", "int64", [1 << 20, 1 << 24, 1 << 27]),
    ("kv_u32_u32", "u32+u32", "int32+int32", [1 << 20, 1 << 24, 1 << 27]),
    ("u32_small_range", "u32", "int32", [1 << 24, 1 << 28]),
)

TOPK_CASES = (
    # (n, k) over one float32 vector
    (1 << 24, 100),
    (1 << 28, 10),
    (1 << 28, 100),
    (1 << 28, 100000),
)
ROWS_TOPK = (1024, 4096, 10)  # rows, row length, k

NOTES = {
    "u32_random": "int32 stands in for uint32 (torch has no uint32 sort); sort also returns int64 indices",
    "u32_small_range": "int32 in [0, 2^16) stands in for uint32; sort also returns int64 indices",
    "f32_random": "sort also returns int64 indices",
    "u64_random": "int64 stands in for uint64 (torch has no uint64 sort); sort also returns int64 indices",
    "kv_u32_u32": "int32 keys sorted, int32 payload gathered by the returned indices",
}


def parse_count(text):
    """An integer with an optional binary K, M or G suffix, as kernel_bench's --max-keys."""
    shifts = {"k": 10, "m": 20, "g": 30}
    suffix = text[-1:].lower()
    if suffix in shifts:
        return int(text[:-1]) << shifts[suffix]
    return int(text)


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", help="write the records here")
    parser.add_argument("--max-keys", type=parse_count, default=1 << 28,
                        help="skip cases with more keys (K/M/G suffixes allowed)")
    parser.add_argument("--quick", action="store_true", help="only the 1M and 16M sizes")
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--warmup", type=int, default=3)
    return parser.parse_args()


def selected(n, args):
    if n > args.max_keys:
        return False
    return not args.quick or n in (1 << 20, 1 << 24)


def write_json(path, document):
    if path:
        with open(path, "w") as f:
            json.dump(document, f, indent=2)
            f.write("\n")
        print(f"wrote {path} ({len(document['records'])} records)")


class Timer:
    """CUDA-event timing of a call on rotating inputs, with an L2 flush before each call."""

    def __init__(self, torch, args):
        self.torch = torch
        self.args = args
        props = torch.cuda.get_device_properties(0)
        l2_bytes = getattr(props, "L2_cache_size", 0) or (50 << 20)  # older torch: assume H100's 50 MB
        self.flush = torch.empty(2 * l2_bytes, dtype=torch.uint8, device="cuda")

    def median_ms(self, call, inputs):
        """call(input) is queued warmup + runs times; returns the median of the timed runs in ms."""
        torch = self.torch
        total = self.args.warmup + self.args.runs
        events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
                  for _ in range(total)]
        for i, (start, stop) in enumerate(events):
            self.flush.fill_(i & 0xFF)
            start.record()
            call(inputs[i % len(inputs)])
            stop.record()
        torch.cuda.synchronize()
        return statistics.median(start.elapsed_time(stop) for start, stop in events[self.args.warmup:])


def random_keys(torch, torch_dtype, case, n, seed):
    """One input tensor on the device, drawn as kernel_bench draws its case (not the same values)."""
    generator = torch.Generator(device="cuda")
    generator.manual_seed(seed)
    if torch_dtype == "float32":
        return torch.rand(n, device="cuda", generator=generator) * 2 - 1
    if case == "u32_small_range":
        return torch.randint(0, 1 << 16, (n,), dtype=torch.int32, device="cuda", generator=generator)
    dtype = torch.int64 if torch_dtype == "int64" else torch.int32
    info = torch.iinfo(dtype)
    return torch.randint(info.min, info.max, (n,), dtype=dtype, device="cuda", generator=generator)


def time_sort(torch, timer, case, kb_dtype, torch_dtype, n):
    if case == "kv_u32_u32":
        inputs = [(random_keys(torch, "int32", case, n, 1000 + r), random_keys(torch, "int32", case, n, 2000 + r))
                  for r in range(INPUTS)]

        def call(pair):
            keys, values = pair
            sorted_keys, order = torch.sort(keys)
            return sorted_keys, values[order]
    else:
        inputs = [random_keys(torch, torch_dtype, case, n, 1000 + r) for r in range(INPUTS)]

        def call(keys):
            return torch.sort(keys)
    ms = timer.median_ms(call, inputs)
    return {"case": case, "dtype": kb_dtype, "torch_dtype": torch_dtype, "n": n, "method": "torch_sort",
            "median_ms": ms, "note": NOTES[case]}


def time_topk(torch, timer, rows, row_length, k):
    shape = (row_length,) if rows == 1 else (rows, row_length)  # one vector stays 1-D
    inputs = [random_keys(torch, "float32", "f32_random", rows * row_length, 3000 + r).view(shape)
              for r in range(INPUTS)]
    ms = timer.median_ms(lambda x: torch.topk(x, k, dim=-1), inputs)
    case = f"f32_topk_k{k}" if rows == 1 else f"f32_rows_topk_{rows}x{row_length}_k{k}"
    return {"case": case, "dtype": "f32", "torch_dtype": "float32", "n": rows * row_length, "rows": rows,
            "row_length": row_length, "k": k, "method": "torch_topk", "median_ms": ms,
            "note": "largest, sorted (torch.topk defaults)"}


def run_guarded(torch, what, fn):
    """One case; an out-of-memory error skips it instead of ending the run."""
    out_of_memory = getattr(torch.cuda, "OutOfMemoryError", RuntimeError)  # torch < 1.13: RuntimeError
    try:
        record = fn()
    except out_of_memory:
        print(f"SKIP {what}: out of device memory")
        record = None
    torch.cuda.empty_cache()  # return this case's memory before the next
    if record:
        print(f"{record['case']:<32} {record['torch_dtype']:<12} {record['n']:>10} {record['method']:<11} "
              f"{record['median_ms']:10.4f} ms", flush=True)
    return record


def main():
    args = parse_args()
    try:
        import torch
    except ImportError as error:
        print(f"torch_anchor: torch is not available ({error}); nothing measured")
        write_json(args.json, {"skipped": f"torch unavailable: {error}", "records": []})
        return 0
    if not torch.cuda.is_available():
        print("torch_anchor: torch sees no CUDA device; nothing measured")
        write_json(args.json, {"skipped": "no CUDA device", "records": []})
        return 0

    timer = Timer(torch, args)
    device = torch.cuda.get_device_name(0)
    print(f"device: {device}, torch {torch.__version__}, CUDA {torch.version.cuda}")
    print(f"median of {args.runs} runs after {args.warmup} warm-up, {INPUTS} rotating inputs, "
          f"L2 flushed ({timer.flush.numel() >> 20} MiB) before each")
    records = []
    with torch.no_grad():
        for case, kb_dtype, torch_dtype, sizes in SORT_CASES:
            for n in sizes:
                if selected(n, args):
                    records.append(run_guarded(torch, f"{case} n={n}",
                                               lambda: time_sort(torch, timer, case, kb_dtype, torch_dtype, n)))
        for n, k in TOPK_CASES:
            if selected(n, args):
                records.append(run_guarded(torch, f"topk n={n} k={k}", lambda: time_topk(torch, timer, 1, n, k)))
        rows, row_length, k = ROWS_TOPK
        if not args.quick and rows * row_length <= args.max_keys:
            records.append(run_guarded(torch, "rows topk", lambda: time_topk(torch, timer, rows, row_length, k)))
    write_json(args.json, {"device": device, "torch_version": torch.__version__, "cuda": torch.version.cuda,
                           "runs": args.runs, "warmup": args.warmup, "rotating_inputs": INPUTS,
                           "l2_flush_bytes": timer.flush.numel(),
                           "records": [r for r in records if r]})
    return 0


if __name__ == "__main__":
    sys.exit(main())

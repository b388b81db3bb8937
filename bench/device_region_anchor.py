#!/usr/bin/env python3
"""torch's anchors for device_region_bench (issue 16), on the same GPU: what the caller would run in its own
process instead of calling gpusort. torch.sort of 16M int32 and torch.topk (k=100, largest, sorted) of 256M
float32 from torch.rand, both already on the GPU. Two timings each, median of --runs after --warmup:
CUDA events around the call (device time, L2 flushed before each, as torch_anchor.py), and the wall time
of the call plus torch.cuda.synchronize() (what a caller waits for the answer in its own process).

  python3 bench/device_region_anchor.py [--runs 20] [--warmup 3]
"""
import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))


def wall_ms(torch, call, runs, warmup):
    times = []
    for i in range(warmup + runs):
        torch.cuda.synchronize()
        start = time.perf_counter()
        call()
        torch.cuda.synchronize()
        if i >= warmup:
            times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=3)
    args = parser.parse_args()
    try:
        import torch
        import torch_anchor
    except ImportError as e:
        print(f"no torch here ({e}): no anchors")
        return 0
    if not torch.cuda.is_available():
        print("no CUDA device for torch: no anchors")
        return 0
    timer = torch_anchor.Timer(torch, args)
    g = torch.Generator(device="cuda")
    g.manual_seed(1)
    info = torch.iinfo(torch.int32)
    ints = torch.randint(info.min, info.max, (16 << 20,), dtype=torch.int32, device="cuda", generator=g)
    floats = torch.rand(256 << 20, device="cuda", generator=g)
    print(f"torch {torch.__version__} on {torch.cuda.get_device_name(0)}; median of {args.runs} after {args.warmup}")
    print("| case | torch call | CUDA events ms | call + synchronize, wall ms |\n|---|---|---:|---:|")
    for name, what, call in (("sort_u32_16M", "torch.sort (int32)", lambda x=ints: torch.sort(x)),
                             ("topk_f32_256M_k100", "torch.topk k=100", lambda x=floats: torch.topk(x, 100))):
        events = timer.median_ms(lambda _: call(), [None])
        wall = wall_ms(torch, call, args.runs, args.warmup)
        print(f"| {name} | {what} | {events:.3f} | {wall:.3f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())

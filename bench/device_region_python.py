#!/usr/bin/env python3
"""A torch caller's view of device regions (issue 44): gpusort.Client(shm_socket=...).sort / .topk on CUDA
tensors already on the GPU, timed from the call to the returned tensor (wall, median of --runs after
--warmup), beside torch.sort / torch.topk called in the same process on the same tensors, each followed
by torch.cuda.synchronize(). The client copies the keys into its registered device memory on the GPU,
calls the server on its shared-memory socket (no gRPC), and copies the answer out into a new tensor.

  python3 bench/device_region_python.py --shm-socket /tmp/gs.sock [--target HOST:PORT] [--runs 30]

Cases: 16M int32 keys sorted (keys only: gpusort.sort; torch.sort gives values and indices, as it always
does) and 256M float32 from torch.rand, top-100, largest, sorted, values and indices. Each answer is
checked against torch's.
"""
import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "client", "python"))

from device_region_anchor import wall_ms  # noqa: E402  (the torch anchor's own timing: the same clock)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--shm-socket", required=True)
    parser.add_argument("--target", default="127.0.0.1:50051")
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--warmup", type=int, default=5)
    args = parser.parse_args()
    import torch

    import gpusort

    client = gpusort.Client(args.target, shm_socket=args.shm_socket, timeout=60)
    generator = torch.Generator(device="cuda").manual_seed(1)
    info = torch.iinfo(torch.int32)  # int32: torch.sort has no uint32 (device_region_anchor.py does the same)
    keys = torch.randint(info.min, info.max, (16 << 20,), dtype=torch.int32, device="cuda", generator=generator)
    assert torch.equal(client.sort(keys), torch.sort(keys).values)
    scores = torch.rand(256 << 20, device="cuda", generator=generator)
    values, indices = client.topk(scores, 100)
    assert torch.equal(values, torch.topk(scores, 100).values)
    rows = [
        ("sort_%s_16M" % str(keys.dtype).replace("torch.", ""),
         wall_ms(torch, lambda: client.sort(keys), args.runs, args.warmup),
         wall_ms(torch, lambda: torch.sort(keys), args.runs, args.warmup)),
        ("topk_f32_256M_k100",
         wall_ms(torch, lambda: client.topk(scores, 100), args.runs, args.warmup),
         wall_ms(torch, lambda: torch.topk(scores, 100), args.runs, args.warmup)),
    ]
    print("median of %d after %d warm-up, wall ms of the call and torch.cuda.synchronize()\n" % (args.runs, args.warmup))
    print("| case | gpusort from Python (socket) | torch in process | ratio |\n|---|---:|---:|---:|")
    for name, ours, theirs in rows:
        print("| %s | %.3f | %.3f | %.2f |" % (name, ours, theirs, ours / theirs))
    client.close()


if __name__ == "__main__":
    main()

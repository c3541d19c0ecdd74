"""A minimal torch.distributed job: every rank all_reduces a tensor and checks the sum.

Runs on CPU with Gloo (or NCCL on GPUs with --backend nccl). Under torchrun:

    torchrun --nproc-per-node=2 examples/allreduce_gloo.py
    safe-launch -- torchrun --nproc-per-node=2 examples/allreduce_gloo.py

Options (for tests and demos):
    --fail-rank R --fail-code C   rank R exits with status C before the all_reduce
    --iters N                     number of all_reduce rounds (default 3)
"""
import argparse
import os
import sys

import torch
import torch.distributed as dist


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--backend", default="gloo")
    parser.add_argument("--iters", type=int, default=3)
    parser.add_argument("--fail-rank", type=int, default=-1)
    parser.add_argument("--fail-code", type=int, default=3)
    args = parser.parse_args()

    rank = int(os.environ["RANK"])
    world = int(os.environ["WORLD_SIZE"])
    if rank == args.fail_rank:
        print(f"rank {rank}: exiting with {args.fail_code} on purpose", flush=True)
        return args.fail_code
    dist.init_process_group(args.backend)
    device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", 0))) \
        if args.backend == "nccl" else torch.device("cpu")
    for it in range(args.iters):
        t = torch.full((1024,), float(rank + 1), device=device)
        dist.all_reduce(t)
        expected = world * (world + 1) / 2
        if not torch.all(t == expected):
            print(f"rank {rank}: all_reduce gave {t[0].item()}, expected {expected}", flush=True)
            return 1
    print(f"rank {rank}/{world}: all_reduce ok ({args.iters} rounds)", flush=True)
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())

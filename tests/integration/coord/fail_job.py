"""A 2-rank torch job (Gloo) for the coordination tests, as seen with torch 1.13: the rank named by
--fail-rank raises (exit 1) before the process group starts; the others wait for it in
init_process_group (silent until the store times out, 30 min), and the failed rank's torchrun
waits for the other nodes in its exit barrier (silent, 5 min). Prints a line at once, so the
stall clock starts from a live job.

usage: fail_job.py --fail-rank R
"""
import argparse
import os
import sys
import time

print(f"rank {os.environ.get('RANK')}: started", flush=True)

import torch  # noqa: E402  (after the first line: the import takes seconds)
import torch.distributed as dist  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--fail-rank", type=int, default=-1)
    args = parser.parse_args()
    rank = int(os.environ["RANK"])
    if rank == args.fail_rank:
        time.sleep(3)  # alive long enough to be seen as a rank process
        raise RuntimeError(f"planted failure on rank {rank}")
    dist.init_process_group("gloo")
    t = torch.ones(16)
    dist.all_reduce(t)
    print(f"rank {rank}: all_reduce ok", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

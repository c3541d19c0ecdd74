"""A 2-rank Gloo job with a desync bug: rank 0 calls all_reduce while rank 1 calls broadcast,
so neither returns (or Gloo fails the mismatch). An application bug: remediation must drain
nothing. $STALL_FLAG is created when the ranks reach the mismatch."""
import os

import torch
import torch.distributed as dist

dist.init_process_group("gloo")
rank = dist.get_rank()
print(f"rank {rank} started", flush=True)
dist.barrier()
if os.environ.get("STALL_FLAG"):
    open(os.environ["STALL_FLAG"], "w").close()
t = torch.ones(1 << 16)
if rank == 0:
    dist.all_reduce(t)
else:
    dist.broadcast(t, 0)
print("returned (unexpected)", flush=True)

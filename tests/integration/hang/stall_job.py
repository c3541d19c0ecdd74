"""A 2-rank Gloo job where rank 1 stops before the all_reduce (sleeps), so rank 0 waits in it.

Used by hang_test.py: nothing is printed after the first lines, which is what the stall detector
sees. Extra arguments (a --marker=..., a planted --api-key) are accepted and echoed to check
redaction.
"""
import os
import sys
import time

import torch
import torch.distributed as dist

dist.init_process_group("gloo")
rank = dist.get_rank()
print(f"rank {rank} started args={' '.join(sys.argv[1:])} token={os.environ.get('HF_TOKEN', '')}",
      flush=True)
t = torch.ones(4)
if rank == 1:
    print("rank 1 stops before all_reduce", flush=True)
    time.sleep(3600)
else:
    print("rank 0 enters all_reduce", flush=True)
    dist.all_reduce(t)
    print("all_reduce returned (unexpected)", flush=True)

"""A 2-rank Gloo job where rank 1 stops before the all_reduce (sleeps), so rank 0 waits in it.

Used by hang_test.py. Until the ranks reach their stopping point the test's launcher loop prints a
line every 0.5 s (as a training loop would log): torchrun and `import torch` take seconds on a
loaded machine, holding the GIL, and that must not be mistaken for the stall. Each rank creates
$STALL_FLAG when it reaches its stopping point; after that nothing is printed, which is what the
stall detector must see. Extra arguments (a --marker=..., a planted --api-key) are accepted and
echoed to check redaction.
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
dist.barrier()
t = torch.ones(4)
if rank == 1:
    print("rank 1 stops before all_reduce", flush=True)
else:
    print("rank 0 enters all_reduce", flush=True)
if os.environ.get("STALL_FLAG"):
    open(os.environ["STALL_FLAG"], "w").close()
if rank == 1:
    time.sleep(3600)
else:
    dist.all_reduce(t)
    print("all_reduce returned (unexpected)", flush=True)

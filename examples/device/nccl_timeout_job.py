# A real NCCL watchdog timeout on one GPU (issue 5's device check): warm collectives, then an
# all_reduce queued behind a GPU kernel that spins for ~25 s, with a 5 s process-group timeout.
# torch's watchdog fires at ~5 s and takes the process down ~60 s later; safe-launch must have
# captured the Flight Recorder dump (through TORCH_NCCL_DEBUG_INFO_PIPE_FILE) and the RAS status
# by then.  Run:  safe-launch -- torchrun --standalone --nproc-per-node=1 nccl_timeout_job.py
import datetime
import os

import torch
import torch.distributed as dist

local_rank = int(os.environ.get("LOCAL_RANK", "0"))
torch.cuda.set_device(local_rank)
dist.init_process_group("nccl", timeout=datetime.timedelta(seconds=5))
x = torch.ones(1 << 20, device="cuda")
for _ in range(3):
    dist.all_reduce(x)
dist.broadcast(x, 0)
torch.cuda.synchronize()
print("warm collectives ok", flush=True)
torch.cuda._sleep(int(25 * 1.98e9))  # ~25 s of spinning at ~2 GHz: the all_reduce waits behind it
dist.all_reduce(x)
print("queued allreduce behind a long kernel", flush=True)
torch.cuda.synchronize()
print("unexpected: the all_reduce finished", flush=True)

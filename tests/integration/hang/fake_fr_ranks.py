"""Two fake rank processes that speak torch's Flight Recorder pipe protocol, without torch.

Rank 0 behaves as ProcessGroupNCCL's DumpPipe: it creates <TORCH_NCCL_DEBUG_INFO_PIPE_FILE>0.pipe,
reads it, and on a write dumps to <TORCH_FR_DUMP_TEMP_FILE>0. Rank 1 creates its pipe but never
opens it (a rank whose watchdog is gone): a writer must get ENXIO, not hang. The parent then
prints the real torch 2.11 watchdog output given as argv[1] and waits.
"""
import os
import subprocess
import sys
import time

if len(sys.argv) > 2 and sys.argv[2] == "rank":
    rank = int(os.environ["RANK"])
    pipe = os.environ["TORCH_NCCL_DEBUG_INFO_PIPE_FILE"] + f"{rank}.pipe"
    os.mkfifo(pipe)
    if rank == 0:
        with open(pipe, "rb") as f:  # blocks until safe-launch opens it for writing
            f.read(1)
        dump = os.environ["TORCH_FR_DUMP_TEMP_FILE"] + str(rank)
        with open(dump, "wb") as f:
            f.write(b"FAKE-FR-DUMP rank 0 " + b"x" * 1000)
    time.sleep(300)
    sys.exit(0)

procs = []
for r in (0, 1):
    env = dict(os.environ, RANK=str(r), LOCAL_RANK=str(r))
    procs.append(subprocess.Popen([sys.executable, __file__, sys.argv[1], "rank"] + sys.argv[3:],
                                  env=env))
prefix = os.environ["TORCH_NCCL_DEBUG_INFO_PIPE_FILE"]
end = time.time() + 20
while time.time() < end and not all(os.path.exists(f"{prefix}{r}.pipe") for r in (0, 1)):
    time.sleep(0.05)
with open(sys.argv[1]) as f:
    for line in f:
        print(line, end="", flush=True)
for p in procs:
    p.wait()

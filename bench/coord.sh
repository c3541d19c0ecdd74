#!/usr/bin/env bash
# Coordinated capture figure (printed, not asserted): time from the hang's detection on node A
# (its event's time) to node B's bundle complete (its .tar.gz written), B's job busy and far from
# its own stall timeout. Two real `safe-launch run` sharing one job run root, as the nodes of a
# job share $SLURM_SUBMIT_DIR (same host: the channel is the file system, not the network).
# usage: bench/coord.sh [BUILD_DIR] [ROUNDS]   (default build, 5)
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/progress.sh
B=${1:-build}
ROUNDS=${2:-5}
SL=$PWD/$B/bin/safe-launch
CHILD=$PWD/$B/bin/sl-test-child
[[ -x $SL && -x $CHILD ]] || { echo "build safe-launch and sl-test-child first ($B)"; exit 2; }
export SL CHILD SRC=$PWD ROUNDS

/usr/bin/python3 - <<'PY'
import glob, json, os, shutil, statistics, subprocess, tempfile, time
import os
exec(os.environ["SL_BENCH_PY_PROGRESS"])
SL, CHILD, SRC, ROUNDS = os.environ["SL"], os.environ["CHILD"], os.environ["SRC"], int(os.environ["ROUNDS"])
busy = os.path.join(SRC, "tests", "integration", "coord", "busy_job.py")
watchdog = os.path.join(SRC, "tests", "fixtures", "logs", "watchdog_timeout.torchrun.txt")
figures = []
for rnd in range(ROUNDS):
    progress(f"round {rnd + 1} of {ROUNDS}")
    tmp = tempfile.mkdtemp(prefix="sl-bench-coord-")
    root = os.path.join(tmp, "safe-launch-runs", "job")
    os.makedirs(root)
    def node(name, job, extra):
        return subprocess.Popen([SL, "run", "--no-preflight", "--no-warmup", "--node-name", name,
                                 "--run-dir", os.path.join(root, name), "--kill-grace", "3",
                                 "--post-mortem-wait", "0"] + extra + ["--"] + job,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    b = node("B", ["/usr/bin/python3", busy, "120"], ["--stall-timeout", "300"])
    time.sleep(1)
    a = node("A", [CHILD, "--marker=slbenchcoord", "replay", watchdog, "300", "hang"],
             ["--stall-timeout", "0"])
    a.wait(60); b.wait(60)
    ev = [json.load(open(p)) for p in glob.glob(os.path.join(root, ".events", "hang-A-*.json"))]
    tars = glob.glob(os.path.join(root, "B", "hang-B-*.tar.gz"))
    if len(ev) == 1 and len(tars) == 1:
        figures.append(os.stat(tars[0]).st_mtime - ev[0]["time_unix"])
    shutil.rmtree(tmp, ignore_errors=True)
if figures:
    print(f"detection on A -> B's bundle complete: median {statistics.median(figures):.2f} s, "
          f"max {max(figures):.2f} s over {len(figures)} rounds (poll every 0.5 s)")
else:
    print("no round produced both bundles")
PY

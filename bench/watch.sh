#!/usr/bin/env bash
# Cost of `safe-launch watch` (printed, not asserted; goal <= 2% of one core and <= 50 MB): the
# live screen in a real pseudo-terminal (tmux) over a simulated job run root of NODES node
# directories (default 1024), each with the files a running supervisor keeps (status.json of a
# real size, live.json, env-plan.json, preflight.json, heartbeat), while a simulator rewrites
# every node's live.json and live.tail every 2 s (every job printing: the most work a refresh can meet) and
# touches its heartbeat. CPU is the watcher's own (utime+stime from /proc) over SECONDS.
# usage: bench/watch.sh [BUILD_DIR] [NODES] [SECONDS]   (default build, 1024, 30)
#   WATCH_BINARIES="OLD NEW": measure each binary in turn over the same simulated run root (a
#   before/after from one run); WATCH_PERF=PREFIX: also `perf record -g` each measured window
#   into PREFIX.<n>.data (where perf is installed).
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/progress.sh
B=${1:-build}
export NODES=${2:-1024} SECONDS_=${3:-30}
export SL=${WATCH_BINARIES:-$PWD/$B/bin/safe-launch}
for b in $SL; do [[ -x $b ]] || { echo "build safe-launch first ($b)"; exit 2; }; done
command -v tmux >/dev/null || { echo "bench/watch.sh needs tmux"; exit 2; }

/usr/bin/python3 - <<'PY'
import json, os, shutil, subprocess, tempfile, threading, time, uuid
exec(os.environ["SL_BENCH_PY_PROGRESS"])
SL, NODES, SECS = os.environ["SL"], int(os.environ["NODES"]), float(os.environ["SECONDS_"])
tmp = tempfile.mkdtemp(prefix="sl-bench-watch-")
root = os.path.join(tmp, "safe-launch-runs", "4242")
now = time.time()
status = {"schema": 1, "state": "running", "command": ["torchrun", "--nproc-per-node=8", "train.py"],
          "host": "", "events": [{"at": "2027-01-15T08:00:00Z", "what": "x" * 80}] * 8,
          "hang_detection": {"stall_timeout_s": 600, "on_hang": "capture-and-stop"},
          "preflight": {"verdict": "pass"}, "env_plan": {"recipe": "infiniband", "entries": 9}}
def live(i, t):
    return json.dumps({"schema": "safe-launch.live/1", "phase": "running", "phase_since_unix": now,
                       "updated_unix": t, "last_output_unix": t - 0.5,
                       "lines": {"stdout": int(t), "stderr": 3},
                       "last_event": {"signature": "nccl.init_done", "category": "info",
                                      "severity": "info", "line": "NCCL INFO init done", "at_unix": now},
})
def write(path, text):
    tmpf = path + ".tmp"
    with open(tmpf, "w") as f:
        f.write(text)
    os.replace(tmpf, path)
for i in range(NODES):
    d = os.path.join(root, f"gpu{i:04d}")
    os.makedirs(d)
    status["host"] = f"gpu{i:04d}"
    write(os.path.join(d, "status.json"), json.dumps(status, indent=2))
    for f in ("env-plan.json", "preflight.json", "heartbeat"):
        write(os.path.join(d, f), "{}")
    write(os.path.join(d, "live.json"), live(i, now))
progress(f"{NODES} node directories written; starting the simulator and the screen")
size = os.path.getsize(os.path.join(root, "gpu0000", "status.json"))
stop = threading.Event()
def simulate():   # every node's live.json rewritten every 2 s, spread over the 2 s
    i = 0
    while not stop.is_set():
        t0 = time.time()
        for i in range(NODES):
            d = os.path.join(root, f"gpu{i:04d}")
            write(os.path.join(d, "live.tail"), f"[rank{i}] iter: loss 0.{i % 97:02d} {'x' * 60}\n" * 8)
            write(os.path.join(d, "live.json"), live(i, time.time()))
            os.utime(os.path.join(d, "heartbeat"))
            if stop.is_set():
                return
            time.sleep(max(0.0, t0 + 2.0 * (i + 1) / NODES - time.time()))
sim = threading.Thread(target=simulate)
sim.start()
def pid_of(name):
    out = subprocess.run(["tmux", "-L", name, "list-panes", "-F", "#{pane_pid}"], capture_output=True, text=True)
    return int(out.stdout.split()[0])
def cpu_s(pid):
    f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")
def mem_kib(pid, key):
    for line in open(f"/proc/{pid}/status"):
        if line.startswith(key):
            return int(line.split()[1])
def measure(sl, n):
    name = "slwb" + uuid.uuid4().hex[:6]
    subprocess.run(["tmux", "-L", name, "new-session", "-d", "-s", name, "-x", "200", "-y", "50",
                    f"exec {sl} watch {root}"], check=True)
    try:
        time.sleep(3)   # the first refresh reads and parses everything once
        pid = pid_of(name)
        perf = None
        if os.environ.get("WATCH_PERF") and shutil.which("perf"):
            perf = subprocess.Popen(["perf", "record", "-g", "-q", "-o",
                                     f"{os.environ['WATCH_PERF']}.{n}.data", "-p", str(pid)],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        c0, t0 = cpu_s(pid), time.time()
        progress(f"{sl}: measuring for {SECS:.0f} s")
        time.sleep(SECS)
        c1, t1 = cpu_s(pid), time.time()
        if perf:
            perf.send_signal(2)
            perf.wait()
        screen = subprocess.run(["tmux", "-L", name, "capture-pane", "-p"], capture_output=True, text=True).stdout
        assert f"nodes {NODES}" in screen, screen
        print(f"{sl}: watch over {NODES} node directories (status.json {size} B each; every "
              f"live.json rewritten every 2 s), {SECS:.0f} s, load {open('/proc/loadavg').read().split()[0]}:")
        print(f"  CPU {100 * (c1 - c0) / (t1 - t0):.2f} % of one core (goal <= 2 %)")
        print(f"  RSS {mem_kib(pid, 'VmRSS:') / 1024:.1f} MB, peak {mem_kib(pid, 'VmHWM:') / 1024:.1f} MB (goal <= 50 MB)")
    finally:
        subprocess.run(["tmux", "-L", name, "kill-server"], capture_output=True)
try:
    for n, sl in enumerate(SL.split()):
        measure(sl, n)
finally:
    stop.set()
    sim.join()
    shutil.rmtree(tmp, ignore_errors=True)
PY

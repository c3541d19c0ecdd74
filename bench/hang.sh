#!/usr/bin/env bash
# Hang detection figures (printed, not asserted):
#   1. time from detection to a complete bundle (directory + .tar.gz) for 2 and 8 local ranks
#      (target <= 10 s): a real torchrun/Gloo job where rank 1 stops before an all_reduce, caught
#      by --stall-timeout; without torchrun, N plain processes carrying RANK in their environment;
#   2. the supervisor's peak RSS (VmHWM) while the job writes 256 MiB of lines through it, with
#      every line going through the signature catalog (target <= 20 MB);
#   3. the catalog's cost per healthy line (from the unit test's measurement).
# usage: bench/hang.sh [BUILD_DIR]   (default build)
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/progress.sh
B=${1:-}
B=${B:-build}
SL=$PWD/$B/bin/safe-launch
CHILD=$PWD/$B/bin/sl-test-child
[[ -x $SL && -x $CHILD ]] || { echo "build safe-launch and sl-test-child first ($B)"; exit 2; }
export SL CHILD SRC=$PWD

/usr/bin/python3 - <<'PY'
import glob, json, os, re, subprocess, sys, tempfile, time
SL, CHILD, SRC = os.environ["SL"], os.environ["CHILD"], os.environ["SRC"]
exec(os.environ["SL_BENCH_PY_PROGRESS"])
TORCHRUN = "/usr/bin/torchrun"

def capture_time(nranks):
    progress(f"hang capture with {nranks} local ranks")
    tmp = tempfile.mkdtemp(prefix="sl-bench-hang-")
    run = os.path.join(tmp, "run")
    if os.path.exists(TORCHRUN):
        # As in the integration test: a loop prints until the workers reach their stopping point
        # (torchrun needs seconds to start), so the stall that fires is the real one.
        flag = os.path.join(tmp, "workers-started")
        os.environ["STALL_FLAG"] = flag
        job = ["/bin/sh", "-c",
               f'(while [ ! -e "{flag}" ]; do echo "waiting for workers"; sleep 0.5; done) & '
               'exec "$@"', "sh",
               TORCHRUN, f"--nproc_per_node={nranks}", "-r", "1", "-t", "1", "--monitor_interval",
               "0.5", "--master_port", str(31500 + nranks),
               os.path.join(SRC, "tests/integration/hang/stall_job.py")]
        kind = "torchrun/Gloo"
    else:
        # N sleeping processes with RANK set, as torchrun's workers would be.
        script = "; ".join(f"RANK={i} LOCAL_RANK={i} sleep 300 &" for i in range(nranks))
        job = ["/bin/sh", "-c", f"echo started; {script} wait"]
        kind = "sleeping RANK processes"
    r = subprocess.run([SL, "--no-preflight", "--no-warmup", "--run-dir", run, "--stall-timeout",
                        "5", "--kill-grace", "5", "--"] + job, capture_output=True, timeout=300)
    err = r.stderr.decode()
    m = re.search(r"bundle complete in ([0-9.]+) s", err)
    bundles = glob.glob(os.path.join(run, "hang-*.tar.gz"))
    man = {}
    for b in glob.glob(os.path.join(run, "hang-*/manifest.json")):
        man = json.load(open(b))
    stacks = len(glob.glob(os.path.join(run, "hang-*/stacks/rank_*")))
    slow = sorted(((c["duration_s"], c["id"]) for c in man.get("collectors", [])), reverse=True)[:3]
    print(f"{nranks} local ranks ({kind}): detection -> complete bundle "
          f"{m.group(1) if m else '?'} s (target <= 10 s); exit {r.returncode}; "
          f"bundles {len(bundles)}; rank stacks {stacks}; slowest collectors {slow}")
    if not m:
        print(err[-2000:])
    subprocess.run(["rm", "-rf", tmp])

def peak_rss():
    progress("supervisor RSS under 256 MiB of output")
    tmp = tempfile.mkdtemp(prefix="sl-bench-rss-")
    n = 256 << 20
    p = subprocess.Popen([SL, "--no-preflight", "--no-warmup", "--run-dir",
                          os.path.join(tmp, "run"), "--", CHILD, "write", str(n), "both"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    hwm = 0
    t0 = time.time()
    while p.poll() is None:
        try:
            for line in open(f"/proc/{p.pid}/status"):
                if line.startswith("VmHWM:"):
                    hwm = max(hwm, int(line.split()[1]))
        except OSError:
            pass
        time.sleep(0.02)
    dt = time.time() - t0
    print(f"supervisor peak RSS with {n >> 20} MiB of job output through the catalog: "
          f"{hwm / 1024:.1f} MB (target <= 20 MB), {n / dt / 2**20:.0f} MiB/s")
    subprocess.run(["rm", "-rf", tmp])

only = sys.argv[1:] if len(sys.argv) > 1 else []
capture_time(2)
capture_time(8)
peak_rss()
PY
B_TEST=$PWD/$B/bin/hang_test
if [[ -x $B_TEST ]]; then
  $B_TEST "matching a healthy line costs well under a microsecond" 2>/dev/null | grep -E "per line|per byte" || true
  $B_TEST "catalog verdicts agree with the labelled corpus" 2>/dev/null | grep -A3 "corpus:" || true
fi

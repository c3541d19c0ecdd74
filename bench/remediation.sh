#!/usr/bin/env bash
# Remediation figure (printed, not asserted): the time from a fault being declared on one node of
# a 2-node job to the requeued job running on good nodes, on the test cluster (munged, slurmctld
# and three slurmd on this host: tests/integration/slurm/slurm_cluster.py), split into
#   safe-launch: declared (this node's preflight refused the job) -> the job-level diagnosis of
#                the run root -> drain -> `scontrol requeue` returned -> ExcNodeList set;
#   Slurm:       `scontrol requeue` returned -> the requeued batch script runs (its first line).
# Slurm's part: AuthInfo's cred_expire + 1 s (a requeued batch job is held, Reason=BeginTime,
# until the credential of its last run expires; 120 s by default, 10 s on the test cluster), then
# the wait for slurmctld's next main scheduling pass (SchedulerParameters=sched_interval, 60 s by
# default: nothing else wakes the scheduler when a BeginTime passes). The scenario is
# remediation_test.py's first test.
# usage: bench/remediation.sh [BUILD_DIR] [RUNS]
#   (as root; SL_CRED_EXPIRE=120 for Slurm's default credential life, SL_SCHED_INTERVAL=5 for a
#   faster main scheduling loop)
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/progress.sh
B=${1:-build}
RUNS=${2:-2}
SL=$PWD/$B/bin/safe-launch
[[ -x $SL ]] || { echo "build safe-launch first ($B)"; exit 2; }
export SL_CRED_EXPIRE=${SL_CRED_EXPIRE:-10}
FIG=$(mktemp)
trap 'rm -f "$FIG"' EXIT
for i in $(seq "$RUNS"); do
  bench_phase "run $i of $RUNS"
  /usr/bin/python3 tests/integration/slurm/remediation_test.py "$SL" "$PWD" \
    -k test_a_port_down_drains 2>&1 | grep '^.*FIGURES ' | sed 's/.*FIGURES //'
done > "$FIG"
/usr/bin/python3 - "$FIG" <<'PY'
import json, os, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
if not rows:
    sys.exit("no figures: did the test run (as root, Slurm installed)?")
cred = os.environ["SL_CRED_EXPIRE"]
sched = os.environ.get("SL_SCHED_INTERVAL") or "60 (default)"
print(f"remediation: 2-node job, fault on one node, 3 slurmd on this host, cred_expire={cred} s, "
      f"sched_interval={sched} s, KillWait=5 s, {len(rows)} run(s)")
print(f"{'run':>4} {'safe-launch: to requeue':>24} {'to ExcNodeList':>15} "
      f"{'Slurm: requeue to running':>26} {'total':>8}")
for i, r in enumerate(rows, 1):
    sl = r["requeued"] - r["declared"]
    exc = r["finished"] - r["declared"]
    slurm = r["running_again"] - r["requeued"]
    total = r["running_again"] - r["declared"]
    print(f"{i:>4} {sl:>22.2f} s {exc:>13.2f} s {slurm:>24.2f} s {total:>6.1f} s")
PY

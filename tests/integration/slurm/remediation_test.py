"""--on-node-fault on a real Slurm: munged, slurmctld and THREE slurmd on this host
(slurm_cluster.py, nnodes=3), so that a requeued 2-node job has somewhere to go.

usage: remediation_test.py SAFE_LAUNCH SOURCE_DIR [unittest args, e.g. -k requeue]

The fault: the node named BAD<attempt> (SLURM_RESTART_COUNT) reads the ib-port-down fixture
(--sysroot, on that node only); its preflight refuses the job (78), the job-level diagnosis names
the port, and the node acts for itself. Every daemon is stopped by pid when a test ends.
"""
import glob
import json
import os
import shutil
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from slurm_cluster import SlurmCluster, free_ports  # noqa: E402

SL = SRC = None
TORCHRUN = "/usr/bin/torchrun"


class RemediationTest(unittest.TestCase):
    def setUp(self):
        for tool in ("slurmctld", "slurmd", "munged", "sbatch", TORCHRUN):
            if not shutil.which(tool):
                self.skipTest(f"no {tool}")
        if os.geteuid() != 0:
            self.skipTest("the test cluster runs its daemons as root (CI does)")
        # cred_expire: a requeued batch job waits that long before it may start (120 s default).
        # bench/remediation.sh sets SL_CRED_EXPIRE to measure Slurm's default (120) as well.
        cred = os.environ.get("SL_CRED_EXPIRE", "10")
        # SL_SCHED_INTERVAL: how often slurmctld's main loop looks at pending jobs (60 s by
        # default): a requeued job that became eligible waits for that pass.
        sched = os.environ.get("SL_SCHED_INTERVAL")
        self.cluster = SlurmCluster(
            nnodes=3, kill_wait=5, auth_info=f"cred_expire={cred}",
            extra_conf=f"SchedulerParameters=sched_interval={sched}" if sched else "")
        self.cluster.__enter__()
        self.addCleanup(self.cluster.stop)
        self.attempts = self.cluster.path("submit", "attempts")

    def submit(self, sl_args, bad, job="allreduce_gloo.py", extra_env=None, opts=()):
        """A 2-node job: safe-launch SL_ARGS -- torchrun JOB on each node; node BAD[attempt]
        reads the ib-port-down fixture."""
        c = self.cluster
        port = free_ports(1)[0]
        script = c.path("submit", "remed.sbatch")
        job_path = job if os.path.isabs(job) else os.path.join(SRC, "examples", job)
        with open(script, "w") as f:
            f.write(f"""#!/bin/bash
head=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)
echo "attempt ${{SLURM_RESTART_COUNT:-0}} $SLURM_JOB_NODELIST $(date +%s.%N)" >> {self.attempts}
export HEAD=$head
srun --ntasks-per-node=1 --kill-on-bad-exit=1 bash -c '
  bad_var=BAD${{SLURM_RESTART_COUNT:-0}}; extra=""
  # The bad node: the ib-port-down fixture, and an NCCL_IB_HCA that selects its down port (the
  # plan would otherwise route NCCL around it and the preflight only skip it).
  [ "$SLURMD_NODENAME" = "${{!bad_var}}" ] && \
    extra="--sysroot {SRC}/tests/fixtures/ib-port-down" && export NCCL_IB_HCA=mlx5
  [ -n "$HOLD" ] && [ "$SLURMD_NODENAME" = "${{!bad_var}}" ] && \
    while [ ! -e "$HOLD" ]; do sleep 0.2; done
  exec {SL} --no-warmup {sl_args} $extra -- {TORCHRUN} --nnodes=$SLURM_NNODES --nproc_per_node=1 \
    --rdzv_backend=c10d --rdzv_endpoint=$HEAD:{port} --rdzv_id=$SLURM_JOB_ID \
    -r 1 -t 1 --monitor_interval 0.5 {job_path}'
""")
        os.chmod(script, 0o755)
        env = {"SAFE_LAUNCH_WARMUP_SECRET": f"remed-{port}"}
        for i, node in enumerate(bad):
            env[f"BAD{i}"] = node
        env.update(extra_env or {})
        return c.sbatch(script, "-N2", "--requeue", "--open-mode=append", *opts, env=env)

    def output(self, job):
        out = ""
        for p in glob.glob(self.cluster.path("submit", f"slurm-{job}.out")):
            with open(p, errors="replace") as f:
                out += f.read()
        return out

    def describe(self, job):
        return self.output(job)[-5000:] + "\n" + self.cluster.logs()[-2000:]

    def root(self, job, attempt=0):
        name = f"{job}.0" + (f".requeue{attempt}" if attempt else "")
        return self.cluster.path("submit", "safe-launch-runs", name)

    def remediation(self, job, attempt=0):
        with open(os.path.join(self.root(job, attempt), "remediation.json")) as f:
            return json.load(f)

    def attempt_lines(self):
        with open(self.attempts) as f:
            return [line.split() for line in f]

    def assert_not_drained(self, node, job):
        self.assertNotIn("DRAIN", self.cluster.node_fields(node)["State"], self.describe(job))

    # ---- the fault, the drain, the requeue ------------------------------------------------------

    def test_a_port_down_drains_the_node_and_the_requeued_job_completes_on_the_others(self):
        c = self.cluster
        bad = c.nodes[1]
        job = self.submit("--on-node-fault=requeue", [bad])
        fields = c.wait_job(job, timeout=400)
        self.assertEqual((fields["JobState"], fields["ExitCode"]), ("COMPLETED", "0:0"),
                         self.describe(job))
        node = c.node_fields(bad)
        self.assertIn("DRAIN", node["State"], node)
        self.assertTrue(node.get("Reason", "").startswith(
            f"safe-launch: ib_port_down_or_link_flap: {bad}: "), node)
        self.assertIn("mlx5_3:1", node["Reason"])
        self.assertLessEqual(len(node["Reason"]), 200, node)
        rem = self.remediation(job)
        self.assertEqual(rem["decision"], "requeue", rem)
        self.assertEqual(rem["why"]["node"], bad, rem)
        self.assertEqual([a["kind"] for a in rem["actions"]], ["drain", "requeue", "exclude"], rem)
        self.assertTrue(all(a["ran"] and a["ok"] for a in rem["actions"]), rem)
        # The requeued attempt ran on the two other nodes, in a run root of its own.
        lines = self.attempt_lines()
        self.assertEqual([ln[0:2] for ln in lines], [["attempt", "0"], ["attempt", "1"]], lines)
        again = lines[1][2]
        self.assertNotIn(bad, again.replace(c.nodes[0], "").replace(c.nodes[2], ""), lines)
        self.assertEqual(fields.get("ExcNodeList"), bad, fields)
        dirs = sorted(d for d in glob.glob(os.path.join(self.root(job, 1), "*"))
                      if os.path.isdir(d))
        self.assertEqual(len(dirs), 2, self.describe(job))
        out = self.output(job)
        self.assertIn(f"remediation: drained node {bad}: safe-launch: ", out)
        self.assertIn(f"remediation: requeued job {job}", out)
        with open(os.path.join(self.root(job), "diagnosis.md")) as f:
            self.assertIn("## Remediation", f.read())
        with open(os.path.join(self.root(job), "diagnosis.html")) as f:
            self.assertIn("<h2>Remediation</h2>", f.read())
        # For bench/remediation.sh: when the fault was declared, requeued, running again.
        print("FIGURES", json.dumps({"declared": rem["declared_unix"],
                                     "requeued": rem.get("requeued_unix"),
                                     "finished": rem.get("finished_unix"),
                                     "running_again": float(lines[1][3])}))

    def test_a_second_fault_after_max_requeues_stops_and_says_so(self):
        c = self.cluster
        job = self.submit("--on-node-fault=requeue --max-requeues=1", [c.nodes[1], c.nodes[2]])
        fields = c.wait_job(job, timeout=400, states=("FAILED", "COMPLETED", "CANCELLED"))
        lines = self.attempt_lines()
        self.assertEqual(len(lines), 2, self.describe(job))
        self.assertEqual(fields["JobState"], "FAILED", self.describe(job))
        second = self.remediation(job, 1)
        self.assertEqual(second["history"]["requeues_before"], 1, second)
        self.assertNotIn("requeue", [a["kind"] for a in second["actions"]], second)
        self.assertIn("--max-requeues", " ".join(second["notes"]), second)
        self.assertIn("at most 1 (--max-requeues): not requeued again", self.output(job))

    # ---- what must not act ----------------------------------------------------------------------

    def test_with_report_nothing_is_drained(self):
        c = self.cluster
        job = self.submit("", [c.nodes[1]])
        fields = c.wait_job(job, timeout=200)
        self.assertEqual(fields["JobState"], "FAILED", self.describe(job))
        # The bad node's 78, or the other's 143 (srun --kill-on-bad-exit stopped it).
        self.assertIn(fields["ExitCode"], ("78:0", "143:0"), fields)
        self.assertIn("preflight failed on this node: the job was NOT started (exit 78)",
                      self.output(job))
        self.assert_not_drained(c.nodes[1], job)
        self.assertFalse(os.path.exists(os.path.join(self.root(job), "remediation.json")))
        self.assertEqual(len(self.attempt_lines()), 1)

    def test_dry_run_prints_the_commands_and_changes_nothing(self):
        c = self.cluster
        job = self.submit("--on-node-fault=requeue --dry-run", [c.nodes[1]])
        fields = c.wait_job(job, timeout=200)
        self.assertEqual(fields["JobState"], "FAILED", self.describe(job))
        self.assert_not_drained(c.nodes[1], job)
        self.assertEqual(len(self.attempt_lines()), 1)
        rem = self.remediation(job)
        self.assertTrue(rem["dry_run"], rem)
        self.assertEqual([a["kind"] for a in rem["actions"]], ["drain", "requeue", "exclude"], rem)
        self.assertFalse(any(a["ran"] for a in rem["actions"]), rem)
        out = self.output(job)
        self.assertIn(f"would run: scontrol update nodename={c.nodes[1]} state=drain "
                      f"'reason=safe-launch: ib_port_down_or_link_flap: {c.nodes[1]}", out)
        self.assertIn(f"would run: scontrol requeue {job}", out)

    def test_a_node_a_human_drained_keeps_its_reason(self):
        c = self.cluster
        hold = c.path("submit", "hold")
        job = self.submit("--on-node-fault=drain", [c.nodes[1]], extra_env={"HOLD": hold})
        c.wait_job(job, timeout=60, states=("RUNNING",))
        c.run(["scontrol", "update", f"nodename={c.nodes[1]}", "state=drain",
               "reason=fan 3 loud (bob)"])
        open(hold, "w").close()
        fields = c.wait_job(job, timeout=200)
        self.assertEqual(fields["JobState"], "FAILED", self.describe(job))
        self.assertEqual(c.node_fields(c.nodes[1])["Reason"], "fan 3 loud (bob)")
        rem = self.remediation(job)
        self.assertEqual(rem["actions"], [], rem)
        self.assertIn("fan 3 loud (bob)", " ".join(rem["notes"]), rem)

    def test_a_desync_bug_drains_nothing(self):
        c = self.cluster
        flag = c.path("submit", "stalled")
        job = self.submit("--on-node-fault=requeue --fault-threshold=0.1 --stall-timeout 8 "
                          "--kill-grace 5 --capture-on-term --post-mortem-wait 15", [],
                          job=os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                           "desync_job.py"),
                          extra_env={"STALL_FLAG": flag})
        fields = c.wait_job(job, timeout=300)
        self.assertIn(fields["JobState"], ("FAILED", "COMPLETED"), self.describe(job))
        for n in c.nodes:
            self.assert_not_drained(n, job)
        self.assertEqual(len(self.attempt_lines()), 1)
        with open(os.path.join(self.root(job), "diagnosis.json")) as f:
            first = json.load(f)["causes"][0]
        print("desync diagnosis:", first["category"], first.get("confidence"))
        # The node that declared the hang ran the post-mortem, then the remediation: nothing.
        rem = self.remediation(job)
        self.assertEqual(rem["actions"], [], rem)
        self.assertFalse(rem["why"]["node_local"], rem)
        self.assertIn("not local to one node", " ".join(rem["notes"]), rem)


if __name__ == "__main__":
    SL, SRC = (os.path.abspath(p) for p in sys.argv[1:3])
    prog = unittest.main(argv=[sys.argv[0]] + sys.argv[3:], verbosity=2, exit=False)
    sys.exit(0 if prog.result.wasSuccessful() and prog.result.testsRun > 0 else 1)

"""safe-launch under a real Slurm (slurmctld + two slurmd on this host, see slurm_cluster.py),
driven through sbatch/srun with the shipped templates where they apply.

usage: slurm_test.py SAFE_LAUNCH SL_TEST_CHILD SOURCE_DIR [unittest args, e.g. -k healthy]

Each test starts its own cluster and stops every daemon (by pid) when it ends, passed or not.
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

SL = CHILD = SRC = None
TORCHRUN = "/usr/bin/torchrun"
HANG_EXIT = 124


def need(path):
    if not shutil.which(path):
        raise unittest.SkipTest(f"no {path}")


class SlurmTest(unittest.TestCase):
    def setUp(self):
        for tool in ("slurmctld", "slurmd", "munged", "sbatch"):
            need(tool)
        if os.geteuid() != 0:
            self.skipTest("the test cluster runs its daemons as root (CI does)")
        self.cluster = SlurmCluster()
        self.cluster.__enter__()
        self.addCleanup(self.cluster.stop)

    def script(self, name, body):
        path = self.cluster.path("submit", name)
        with open(path, "w") as f:
            f.write("#!/bin/bash\n" + body + "\n")
        os.chmod(path, 0o755)
        return path

    def output(self, job_id):
        """The job's output: slurm-ID.out, or the template's %x-%j.out."""
        out = ""
        for path in glob.glob(self.cluster.path("submit", f"*-{job_id}.out")):
            out += open(path, errors="replace").read()
        return out

    def run_dirs(self, job_id, step="0"):
        return sorted(glob.glob(self.cluster.path("submit", "safe-launch-runs",
                                                  f"{job_id}.{step}", "*")))

    def status(self, run_dir):
        with open(os.path.join(run_dir, "status.json")) as f:
            return json.load(f)

    def template_env(self, **extra):
        port = free_ports(1)[0]
        env = {"SAFE_LAUNCH": SL, "NPROC_PER_NODE": "1", "RDZV_PORT": str(port),
               # Debian's torchrun 1.13 on Python 3.11 crashes with its default --redirects/--tee.
               "TORCHRUN_ARGS": "-r 1 -t 1 --monitor_interval 0.5",
               "SAFE_LAUNCH_WARMUP_SECRET": "slurm-test-" + str(port)}
        env.update(extra)
        return env

    def describe(self, job_id):
        return self.output(job_id)[-4000:] + "\n" + self.cluster.logs()[-3000:]

    # ---- the shipped template -------------------------------------------------------------------

    def test_healthy_two_node_gloo_job_from_the_template_completes_0_0(self):
        need(TORCHRUN)
        job = self.cluster.sbatch(os.path.join(SRC, "examples/sbatch/train.sbatch"),
                                  "-N2", "--gpus-per-node=0", "--cpus-per-task=1",
                                  script_args=[os.path.join(SRC, "examples/allreduce_gloo.py")],
                                  env=self.template_env())
        fields = self.cluster.wait_job(job, timeout=240)
        self.assertEqual((fields["JobState"], fields["ExitCode"]), ("COMPLETED", "0:0"),
                         self.describe(job))
        dirs = self.run_dirs(job)
        # Two nodes on one host: one run directory each, keyed by the Slurm node name.
        self.assertEqual([os.path.basename(d) for d in dirs],
                         [self.cluster.nodes[0], self.cluster.nodes[0] + "_" +
                          self.cluster.nodes[1]], self.describe(job))
        for d in dirs:
            st = self.status(d)
            self.assertEqual(st["exit_status"], 0)
            self.assertEqual(st["warmup"]["verdict"], "pass", st)

    def test_a_hang_is_caught_on_both_nodes_with_bundles_and_exit_124(self):
        need(TORCHRUN)
        env = self.template_env(SAFE_LAUNCH_ARGS="--stall-timeout 8 --kill-grace 5")
        job = self.cluster.sbatch(os.path.join(SRC, "examples/sbatch/train.sbatch"),
                                  "-N2", "--gpus-per-node=0", "--cpus-per-task=1",
                                  script_args=[os.path.join(SRC, "tests/integration/hang/stall_job.py")],
                                  env=env)
        fields = self.cluster.wait_job(job, timeout=240)
        self.assertEqual(fields["JobState"], "FAILED", self.describe(job))
        dirs = self.run_dirs(job)
        self.assertEqual(len(dirs), 2, self.describe(job))
        statuses = [self.status(d) for d in dirs]
        # The node that sees the stall first exits 124; srun --kill-on-bad-exit then stops the
        # other, which (--capture-on-term, in the template) bundles its stacks before the signal
        # reaches torchrun -- unless its own detector got there first (124 as well).
        codes = sorted(st["exit_status"] for st in statuses)
        self.assertIn(HANG_EXIT, codes, statuses)
        self.assertIn(fields["ExitCode"], (f"{HANG_EXIT}:0", "143:0"), fields)
        for d, st in zip(dirs, statuses):
            self.assertTrue(glob.glob(os.path.join(d, "hang-*.tar.gz")), os.listdir(d))
            if st["exit_status"] != HANG_EXIT:
                self.assertEqual(st["stop"]["detail"]["slurm"]["cause"], "step_stopped", st)

    # ---- once per node ------------------------------------------------------------------------

    def test_two_tasks_per_node_are_refused_naming_the_fix(self):
        s = self.script("two.sbatch", f"srun --ntasks-per-node=2 {SL} --no-preflight -- true")
        job = self.cluster.sbatch(s, "-N2", "--ntasks-per-node=2")
        fields = self.cluster.wait_job(job, timeout=60)
        out = self.output(job)
        self.assertEqual(fields["JobState"], "FAILED", out)
        self.assertEqual(fields["ExitCode"], "2:0", out)  # exit_code::kUsage
        self.assertIn("2 safe-launch processes were started on this node", out)
        self.assertIn("--ntasks-per-node=1", out)
        # Refused before anything was created or started.
        self.assertEqual(self.run_dirs(job), [])

    # ---- rendezvous sanity --------------------------------------------------------------------

    def test_a_node_0_name_that_does_not_resolve_fails_in_seconds_naming_it_and_the_node(self):
        s = self.script("rdzv.sbatch", f"srun {SL} --no-preflight --rendezvous "
                        "sl-no-such-node0.invalid:29400 -- true")
        t0 = time.time()
        job = self.cluster.sbatch(s, "-N2")
        fields = self.cluster.wait_job(job, timeout=60)
        out = self.output(job)
        self.assertLess(time.time() - t0, 30, out)  # not the 120 s warm-up timeout
        self.assertEqual((fields["JobState"], fields["ExitCode"]), ("FAILED", "69:0"), out)
        for rank in (0, 1):
            self.assertIn(f"node {rank} (", out)
        self.assertIn("'sl-no-such-node0.invalid' (from --rendezvous) does not resolve", out)

    # ---- stopping -----------------------------------------------------------------------------

    def test_time_limit_keeps_the_grace_and_is_recorded_as_the_reason(self):
        mark = "--marker=sltimelimit-" + str(os.getpid())
        s = self.script("limit.sbatch",
                        f"srun {SL} --no-preflight --no-warmup --stall-timeout 0 --kill-grace 6 "
                        f"-- {CHILD} {mark} ignore-term")
        job = self.cluster.sbatch(s, "-N1", "--time=1")
        fields = self.cluster.wait_job(job, timeout=200)
        self.assertEqual(fields["JobState"], "TIMEOUT", self.describe(job))
        dirs = self.run_dirs(job)
        self.assertEqual(len(dirs), 1, self.describe(job))
        st = self.status(dirs[0])
        self.assertEqual(st["state"], "finished", st)
        self.assertEqual(st["stop"]["detail"]["slurm"]["cause"], "time_limit", st["stop"])
        self.assertTrue(st["stop"]["escalated"], st)
        # The grace ran its full length although slurmstepd signalled more than once.
        events = st["events"]
        first = next(e for e in events if "forwarded SIGTERM" in e["what"])
        ran_out = next(e for e in events if "grace ran out" in e["what"])

        def secs(e):
            return time.mktime(time.strptime(e["at"][:19], "%Y-%m-%dT%H:%M:%S")) + \
                float("0." + e["at"][20:23])
        self.assertGreaterEqual(secs(ran_out) - secs(first), 5.5, events)
        self.assertEqual(st["exit_status"], 137)

    def test_scancel_of_a_hung_job_with_capture_on_term_bundles_both_nodes(self):
        need(TORCHRUN)
        flag = self.cluster.path("submit", "stalled")
        env = self.template_env(SAFE_LAUNCH_ARGS="--stall-timeout 0 --kill-grace 5",
                                STALL_FLAG=flag)
        job = self.cluster.sbatch(os.path.join(SRC, "examples/sbatch/train.sbatch"),
                                  "-N2", "--gpus-per-node=0", "--cpus-per-task=1",
                                  script_args=[os.path.join(SRC, "tests/integration/hang/stall_job.py")],
                                  env=env)
        end = time.time() + 180
        while not os.path.exists(flag) and time.time() < end:
            self.assertNotIn(self.cluster.job(job).get("JobState"), ("FAILED", "COMPLETED"),
                             self.describe(job))
            time.sleep(0.5)
        self.assertTrue(os.path.exists(flag), self.describe(job))
        time.sleep(1)
        self.cluster.run(["scancel", job])
        fields = self.cluster.wait_job(job, timeout=120)
        self.assertEqual(fields["JobState"], "CANCELLED", self.describe(job))
        dirs = self.run_dirs(job)
        self.assertEqual(len(dirs), 2, self.describe(job))
        for d in dirs:
            st = self.status(d)
            self.assertEqual(st["stop"]["detail"]["slurm"]["cause"], "scancel", st["stop"])
            bundle = st["stop"]["detail"]["bundle"]
            self.assertTrue(bundle.startswith(d), bundle)
            self.assertTrue(os.path.exists(bundle), bundle)


if __name__ == "__main__":
    SL, CHILD, SRC = (os.path.abspath(p) for p in sys.argv[1:4])
    unittest.main(argv=[sys.argv[0]] + sys.argv[4:], verbosity=2)

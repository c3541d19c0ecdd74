"""safe-launch under a real Slurm (slurmctld + two slurmd on this host, see slurm_cluster.py),
driven through sbatch/srun with the shipped templates where they apply.

usage: slurm_test.py SAFE_LAUNCH SL_TEST_CHILD SOURCE_DIR [unittest args, e.g. -k healthy]

Each test starts its own cluster and stops every daemon (by pid) when it ends, passed or not.
"""
import glob
import json
import os
import shutil
import signal
import subprocess
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
        # A test may add slurm.conf lines: a method conf_<test name without "test_">(cluster).
        self.cluster = SlurmCluster(extra_conf=getattr(self, "conf_" + self._testMethodName[5:],
                                                       ""))
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
        # The node run directories: the job directory also holds the post-mortem's diagnosis.*
        return sorted(d for d in glob.glob(self.cluster.path("submit", "safe-launch-runs",
                                                             f"{job_id}.{step}", "*"))
                      if os.path.isdir(d))

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
        # The detecting node waited for the other's bundle and left the job's post-mortem.
        with open(os.path.join(os.path.dirname(dirs[0]), "diagnosis.json")) as f:
            diagnosis = json.load(f)
        self.assertEqual(diagnosis["schema"], "safe-launch.diagnosis/1", diagnosis)
        self.assertEqual(diagnosis.get("job_nodes"), 2, diagnosis.get("job_nodes"))

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

    # ---- mpirun inside an allocation ----------------------------------------------------------

    def test_mpirun_template_runs_a_two_node_gloo_job_to_completed_0_0(self):
        need("mpirun")
        port = free_ports(1)[0]
        env = {"SAFE_LAUNCH": SL, "PYTHON": "/usr/bin/python3", "MASTER_PORT": str(port),
               # As root, and this host's loopback only (both nodes are this host).
               "MPIRUN_ARGS": "--allow-run-as-root --mca btl self,vader,tcp "
                              "--mca oob_tcp_if_include lo --mca btl_tcp_if_include lo",
               "SAFE_LAUNCH_WARMUP_SECRET": "slurm-test-" + str(port)}
        job = self.cluster.sbatch(os.path.join(SRC, "examples/sbatch/mpirun.sbatch"),
                                  "-N2", "--ntasks-per-node=1", "--gpus-per-node=0",
                                  "--cpus-per-task=1",
                                  script_args=[os.path.join(SRC, "examples/allreduce_gloo.py")],
                                  env=env)
        fields = self.cluster.wait_job(job, timeout=180)
        out = self.output(job)
        self.assertEqual((fields["JobState"], fields["ExitCode"]), ("COMPLETED", "0:0"),
                         self.describe(job))
        self.assertNotIn("KeyError", out)
        for r in (0, 1):
            self.assertIn(f"/r{r}] info: job exited 0", out)

    # ---- node health: prolog, health check, epilog ---------------------------------------------

    def wrapper(self, c, name, body):
        os.makedirs(c.path("etc"), exist_ok=True)
        path = c.path("etc", name)
        with open(path, "w") as f:
            f.write("#!/bin/bash\n" + body + "\n")
        os.chmod(path, 0o755)
        return path

    def conf_prolog_template_drains_a_failing_node_with_the_check_id_and_warnings_do_not(self, c):
        # Node 1 reads a fixture whose IB port is down (ib.port.state fails); node 0 one that
        # only warns. slurmd gives the prolog no PATH and no environment of ours.
        fixtures = os.path.join(SRC, "tests/fixtures")
        w = self.wrapper(c, "prolog", f"""
if [ "$SLURMD_NODENAME" = "{c.nodes[1]}" ]; then root={fixtures}/ib-port-down
else root={fixtures}/acs-enabled; fi
export SAFE_LAUNCH={SL} SAFE_LAUNCH_PROLOG_ARGS="--sysroot $root"
exec {SRC}/examples/slurm/prolog.sh""")
        return f"Prolog={w}"

    def test_prolog_template_drains_a_failing_node_with_the_check_id_and_warnings_do_not(self):
        s = self.script("p.sbatch", "true")
        bad = self.cluster.sbatch(s, "-N1", "-w", self.cluster.nodes[1])
        good = self.cluster.sbatch(s, "-N1", "-w", self.cluster.nodes[0])
        node = self.cluster.wait_node(self.cluster.nodes[1], lambda f: "DRAIN" in f["State"])
        self.assertTrue(node.get("Reason", "").startswith(
            "safe-launch: ib.port.state: mlx5_3:1: DOWN/Polling"), node)
        self.assertLessEqual(len(node["Reason"]), 200, node)
        # The prolog's non-zero exit: the job is requeued off the node, not run on it.
        fields = self.cluster.wait_job(bad, timeout=60, states=("PENDING",))
        self.assertIn("launch_failed_requeued", self.cluster.job(bad).get("Reason", ""), fields)
        self.assertEqual(self.cluster.wait_job(good, timeout=60)["JobState"], "COMPLETED")
        self.assertNotIn("DRAIN", self.cluster.node_fields(self.cluster.nodes[0])["State"])

    def test_a_node_drained_by_someone_else_keeps_its_reason(self):
        c = self.cluster
        node = c.nodes[0]
        c.run(["scontrol", "update", f"nodename={node}", "state=drain", "reason=fan 3 loud (bob)"])
        # As a HealthCheckProgram runs it: SLURMD_NODENAME set, nothing else of Slurm's.
        env = dict(c.env, SLURMD_NODENAME=node)
        r = c.run([SL, "preflight", "--slurm", "--sysroot",
                   os.path.join(SRC, "tests/fixtures/memlock-64k")], check=False, env=env)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn(f"node {node} is out of service already", r.stderr)
        self.assertIn("fan 3 loud (bob)", r.stderr)
        self.assertEqual(c.node_fields(node)["Reason"], "fan 3 loud (bob)")
        # Not drained yet: drained now, with the check id; without a node name: a usage error.
        c.run(["scontrol", "update", f"nodename={node}", "state=resume"])
        r = c.run([SL, "preflight", "--slurm", "--sysroot",
                   os.path.join(SRC, "tests/fixtures/memlock-64k")], check=False, env=env)
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn(f"drained node {node}", r.stderr)
        self.assertTrue(c.node_fields(node)["Reason"].startswith("safe-launch: os.memlock: "),
                        c.node_fields(node))
        r = c.run([SL, "preflight", "--slurm"], check=False)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("--node-name", r.stderr)

    def conf_health_check_program_drains_a_failing_idle_node(self, c):
        # slurmd gives a health check only SLURMD_NODENAME: the test cluster's slurm.conf is not
        # the default one, so the wrapper names it. It fails only once the test says so (the
        # cluster must come up idle first).
        flag = c.path("etc", "fail-now")
        w = self.wrapper(c, "health", f"""
[ "$SLURMD_NODENAME" = "{c.nodes[1]}" ] && [ -e {flag} ] || exit 0
export SLURM_CONF={c.path('slurm.conf')} SAFE_LAUNCH={SL}
export SAFE_LAUNCH_PROLOG_ARGS="--sysroot {SRC}/tests/fixtures/shm-64m"
exec {SRC}/examples/slurm/prolog.sh""")
        return f"HealthCheckProgram={w}\nHealthCheckInterval=2\nHealthCheckNodeState=ANY"

    def test_health_check_program_drains_a_failing_idle_node(self):
        c = self.cluster
        open(c.path("etc", "fail-now"), "w").close()
        node = c.wait_node(c.nodes[1], lambda f: "DRAIN" in f["State"], timeout=30)
        self.assertTrue(node.get("Reason", "").startswith("safe-launch: os.shm: "), node)
        self.assertNotIn("DRAIN", c.node_fields(c.nodes[0])["State"])

    def sysroot(self, c, node):
        """A sysroot per node whose /proc is the real one (bind-mounted by the epilog wrapper in
        its own mount namespace) and whose /dev/nvidia0 is a real character device."""
        root = c.path("sysroot-" + node)
        for d in ("proc", "dev", "etc"):
            os.makedirs(os.path.join(root, d), exist_ok=True)
        shutil.copy("/etc/passwd", os.path.join(root, "etc", "passwd"))
        dev = os.path.join(root, "dev", "nvidia0")
        try:
            os.mknod(dev, 0o666 | 0o020000, os.makedev(1, 3))  # /dev/null's numbers: harmless
        except OSError:
            open(dev, "w").close()
        return root

    def conf_epilog_template_drains_on_a_leftover_gpu_process_and_a_kernel_error_of_the_job(self, c):
        for node in c.nodes:
            self.sysroot(c, node)
        # An Xid from before the job (1 s after boot) must not count; the job adds one.
        with open(os.path.join(c.path("sysroot-" + c.nodes[0]), "dev", "kmsg"), "w") as f:
            f.write("4,1,1000000,-;NVRM: Xid (PCI:0000:09:00): 79, pid=0, GPU has fallen off "
                    "the bus.\n")
        w = self.wrapper(c, "epilog", f"""
root={c.path('sysroot-')}$SLURMD_NODENAME
exec /usr/bin/unshare -m --propagation private /bin/bash -c \\
  "mount --bind /proc $root/proc && SAFE_LAUNCH={SL} SAFE_LAUNCH_EPILOG_ARGS='--sysroot $root' \\
   exec {SRC}/examples/slurm/epilog.sh"
""")
        return f"Epilog={w}"

    def test_epilog_template_drains_on_a_leftover_gpu_process_and_a_kernel_error_of_the_job(self):
        c = self.cluster
        pidfile = c.path("holder.pid")
        # The job leaves a process holding the GPU (reparented away from the job: Slurm's
        # linuxproc tracking does not find it), as a stuck dataloader worker does.
        leave = self.script("leave.sbatch", f"""
(exec 3<{c.path('sysroot-' + c.nodes[1], 'dev', 'nvidia0')}; exec sleep 120) &
echo $! > {pidfile}""")
        kmsg = c.path("sysroot-" + c.nodes[0], "dev", "kmsg")
        xid = self.script("xid.sbatch", f"""sleep 1
awk '{{printf "4,2,%.0f,-;NVRM: Xid (PCI:0000:18:00): 79, pid=4242, GPU has fallen off the bus.\\n", $1*1000000}}' /proc/uptime >> {kmsg}""")
        try:
            j1 = c.sbatch(leave, "-N1", "-w", c.nodes[1])
            j2 = c.sbatch(xid, "-N1", "-w", c.nodes[0])
            self.assertEqual(c.wait_job(j1, timeout=60)["JobState"], "COMPLETED")
            self.assertEqual(c.wait_job(j2, timeout=60)["JobState"], "COMPLETED")
            n1 = c.wait_node(c.nodes[1], lambda f: "DRAIN" in f["State"])
            with open(pidfile) as f:
                pid = f.read().strip()
            self.assertTrue(n1.get("Reason", "").startswith(
                f"safe-launch: gpu.leftover_procs: 1 process(es) still hold /dev/nvidia* after "
                f"the job: pid {pid} (root: sleep 120)"), n1)
            n0 = c.wait_node(c.nodes[0], lambda f: "DRAIN" in f["State"])
            self.assertTrue(n0.get("Reason", "").startswith(
                "safe-launch: kernel.log: NVIDIA Xid 79"), n0)
            self.assertIn("0000:18:00", n0["Reason"])
            self.assertNotIn("(+", n0["Reason"])  # the Xid from before the job did not count
        finally:
            if os.path.exists(pidfile):
                try:
                    with open(pidfile) as f:
                        os.kill(int(f.read().strip()), signal.SIGKILL)
                except (OSError, ValueError):
                    pass


if __name__ == "__main__":
    SL, CHILD, SRC = (os.path.abspath(p) for p in sys.argv[1:4])
    prog = unittest.main(argv=[sys.argv[0]] + sys.argv[4:], verbosity=2, exit=False)
    # ctest runs one test per -k pattern: a pattern that matches nothing (a renamed test) must
    # fail, where Python 3.11's unittest says "Ran 0 tests ... OK" and exits 0.
    sys.exit(0 if prog.result.wasSuccessful() and prog.result.testsRun > 0 else 1)

"""Coordinated capture across nodes: two real `safe-launch run`, each in its own network namespace
(joined by a veth pair), sharing one job run root as the nodes of a job share $SLURM_SUBMIT_DIR.
Needs root (CI runs as root) for the namespaces.

usage: coord_test.py SAFE_LAUNCH SL_TEST_CHILD SOURCE_DIR [unittest args, e.g. -k peer]
"""
import glob
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest
import uuid

SL = CHILD = SRC = None
TORCHRUN = "/usr/bin/torchrun"
SYS_PY = "/usr/bin/python3"  # the pyenv python on PATH has no torch
HANG_EXIT = 124
HERE = os.path.dirname(os.path.abspath(__file__))


def free_port():
    """A rendezvous port P with P + 1 (the warm-up store's) free too, below the ephemeral range
    (tests/integration/helpers/ports.py)."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "helpers"))
    from ports import free_port_pair
    return free_port_pair()


class Nodes:
    """Two network namespaces joined by a veth pair; always removed by close()."""

    def __init__(self):
        tag = uuid.uuid4().hex[:6]
        self.ns = [f"slca{tag}", f"slcb{tag}"]
        self.veth = [f"slva{tag}", f"slvb{tag}"]
        net = int(tag, 16) % 200 + 20
        self.addr = [f"10.252.{net}.1", f"10.252.{net}.2"]
        self.made = []

    def open(self):
        def ip(*args):
            subprocess.run(["ip"] + list(args), check=True, capture_output=True)

        for ns in self.ns:
            ip("netns", "add", ns)
            self.made.append(ns)
        ip("link", "add", self.veth[0], "type", "veth", "peer", "name", self.veth[1])
        for i in (0, 1):
            ip("link", "set", self.veth[i], "netns", self.ns[i])
            ip("-n", self.ns[i], "addr", "add", self.addr[i] + "/24", "dev", self.veth[i])
            ip("-n", self.ns[i], "link", "set", "lo", "up")
            ip("-n", self.ns[i], "link", "set", self.veth[i], "up")
        return self

    def close(self):
        for ns in self.made:
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)
        self.made = []

    def prefix(self, i):
        return ["ip", "netns", "exec", self.ns[i]]


class CoordTest(unittest.TestCase):
    def setUp(self):
        if os.geteuid() != 0:
            self.skipTest("network namespaces need root")
        self.tmp = tempfile.mkdtemp(prefix="sl-coord-test-")
        self.root = os.path.join(self.tmp, "safe-launch-runs", "job1")
        os.makedirs(self.root)
        self.procs = []
        self.nodes = Nodes()
        try:
            self.nodes.open()
        except subprocess.CalledProcessError as e:
            self.nodes.close()
            self.fail(f"cannot create network namespaces: {e.stderr.decode()}")

    def tearDown(self):
        for p in self.procs:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
        self.nodes.close()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def start(self, i, name, job, extra=(), env=None):
        """Starts node `i` (its own namespace), run directory <root>/<name>, output in a file."""
        out = open(os.path.join(self.tmp, f"{name}.out"), "wb")
        cmd = self.nodes.prefix(i) + [SL, "run", "--no-preflight", "--no-warmup", "--node-name",
                                      name, "--run-dir", os.path.join(self.root, name),
                                      "--kill-grace", "3"] + list(extra) + ["--"] + job
        p = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env,
                             start_new_session=True)
        p.name = name
        self.procs.append(p)
        return p

    def wait(self, p, timeout):
        try:
            return p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.fail(f"node {p.name} still running after {timeout} s:\n{self.output(p.name)}")

    def output(self, name):
        with open(os.path.join(self.tmp, f"{name}.out"), "rb") as f:
            return f.read().decode(errors="replace")[-6000:]

    def bundle(self, name, prefixes=("hang-",)):
        found = sorted(d for p in prefixes for d in glob.glob(os.path.join(self.root, name, p + "*"))
                       if os.path.isdir(d))
        self.assertEqual(len(found), 1, f"{name}: {found}\n{self.output(name)}")
        with open(os.path.join(found[0], "manifest.json")) as f:
            manifest = json.load(f)
        with open(os.path.join(found[0], "summary.json")) as f:
            summary = json.load(f)
        self.assertTrue(manifest["complete"])
        return found[0], manifest, summary

    def events(self):
        found = []
        for path in sorted(glob.glob(os.path.join(self.root, ".events", "*.json"))):
            with open(path) as f:
                found.append(json.load(f))
        return found

    def hang_on_a_busy_b(self, extra_a=()):
        """Node A replays a real torch watchdog timeout (a hang signature) and then stays silent;
        node B keeps printing progress and would not time out for 300 s."""
        b = self.start(1, "B", [SYS_PY, os.path.join(HERE, "busy_job.py"), "300"],
                       ["--stall-timeout", "300"])
        time.sleep(1.0)  # B's job is running when A's hang is declared
        watchdog = os.path.join(SRC, "tests", "fixtures", "logs", "watchdog_timeout.torchrun.txt")
        a = self.start(0, "A", [CHILD, "--marker=slcoord", "replay", watchdog, "300", "hang"],
                       ["--stall-timeout", "0"] + list(extra_a))
        return a, b

    # ---- 1. coordinated capture --------------------------------------------------------------

    def test_a_hang_on_node_a_makes_busy_node_b_bundle_within_seconds_as_peer_hang_from_a(self):
        t0 = time.time()
        a, b = self.hang_on_a_busy_b(["--post-mortem-wait", "0"])
        self.assertEqual(self.wait(a, 90), HANG_EXIT, self.output("A"))
        self.assertEqual(self.wait(b, 90), HANG_EXIT, self.output("B"))
        self.assertLess(time.time() - t0, 60, "B waited for its own timeout")
        _, manifest_a, _ = self.bundle("A")
        self.assertEqual(manifest_a["trigger"], "signature")
        bundle_b, manifest_b, summary_b = self.bundle("B")
        self.assertEqual(manifest_b["trigger"], "peer_hang")
        self.assertEqual(manifest_b["peer"]["node"], "A")
        self.assertEqual(manifest_b["peer"]["trigger"], "signature")
        self.assertTrue(manifest_b["job_alive_at_capture"])
        self.assertEqual(summary_b["trigger"], "peer_hang")
        self.assertIn("hang detected on node A at ", summary_b["headline"])
        self.assertIn("captured here on peer notice", summary_b["headline"])
        self.assertEqual(summary_b["evidence"][0]["signature"], "peer_event.hang")
        # B was busy: its progress lines are in its bundle, right up to the capture.
        with open(os.path.join(bundle_b, "output", "stdout.tail")) as f:
            self.assertIn("iter ", f.read())
        # One event: A's. B answers it and posts none of its own.
        events = self.events()
        self.assertEqual([(e["kind"], e["node"]) for e in events], [("hang", "A")])
        detected = events[0]["time_unix"]
        complete = os.stat(bundle_b + ".tar.gz").st_mtime
        print(f"detection on A -> B's bundle complete: {complete - detected:.2f} s")
        self.assertLess(complete - detected, 5.0)
        self.assertIn("peer notice: hang detected on node A", self.output("B"))

    def test_coordinate_off_leaves_node_b_running(self):
        b = self.start(1, "B", [SYS_PY, os.path.join(HERE, "busy_job.py"), "8"],
                       ["--stall-timeout", "300", "--coordinate", "off"])
        time.sleep(1.0)
        watchdog = os.path.join(SRC, "tests", "fixtures", "logs", "watchdog_timeout.torchrun.txt")
        a = self.start(0, "A", [CHILD, "--marker=slcoord", "replay", watchdog, "300", "hang"],
                       ["--stall-timeout", "0", "--coordinate", "off"])
        self.assertEqual(self.wait(a, 90), HANG_EXIT, self.output("A"))
        self.assertEqual(self.wait(b, 90), 0, self.output("B"))
        self.assertEqual(glob.glob(os.path.join(self.root, "B", "hang-*")), [])
        self.assertFalse(os.path.exists(os.path.join(self.root, ".events")))

    # ---- 2. the first rank failure outranks what it causes -----------------------------------

    def test_a_rank_failing_on_node_b_outranks_the_hang_it_causes_on_both_nodes(self):
        if not os.path.exists(TORCHRUN):
            self.skipTest("no /usr/bin/torchrun")
        port = free_port()
        job = os.path.join(HERE, "fail_job.py")
        procs = []
        for i, name in ((0, "A"), (1, "B")):
            env = dict(os.environ, GLOO_SOCKET_IFNAME=self.nodes.veth[i], PYTHONUNBUFFERED="1")
            # Debian's torchrun (torch 1.13) only knows underscore flags; -r/-t as run_test.
            cmd = [TORCHRUN, "--nnodes=2", f"--node_rank={i}", "--nproc_per_node=1",
                   f"--master_addr={self.nodes.addr[0]}", f"--master_port={port}",
                   "-r", "1", "-t", "1", "--monitor_interval", "0.5", job, "--fail-rank", "1"]
            # B's rank 1 raises; A's rank 0 then waits in init_process_group and B's torchrun in
            # its exit barrier, both silent: each node's stall fires after 20 s (or A answers
            # B's hang notice first). Without coordination both would exit 124 as hangs.
            procs.append(self.start(i, name, cmd, ["--stall-timeout", "20",
                                                   "--post-mortem-wait", "5"], env=env))
        a, b = procs
        rc_b = self.wait(b, 150)
        rc_a = self.wait(a, 150)
        # The failure was told to A while B's torchrun was still running.
        self.assertIn("rank failure: node B rank 1 failed first (exit 1 at ", self.output("B"))
        failures = [e for e in self.events() if e["kind"] == "failure"]
        self.assertEqual(len(failures), 1, self.events())
        self.assertEqual(failures[0]["node"], "B")
        self.assertEqual(failures[0]["rank"], 1)
        self.assertEqual(failures[0]["exit_status"], 1)
        self.assertEqual(failures[0]["first_error"], "RuntimeError: planted failure on rank 1")
        # On B, its own rank's failure outranks the stall in torchrun's exit barrier. B captures
        # on its stall or A's notice; or, when A's stop ends A's store first, B's torchrun leaves
        # its exit barrier with an error and B's job fails on its own (a failure bundle).
        self.assertEqual(rc_b, 1, self.output("B"))
        _, manifest_b, summary_b = self.bundle("B", ("hang-", "failure-"))
        self.assertIn(manifest_b["trigger"], ("stall", "peer_hang", "job_failed"))
        self.assertEqual(summary_b["category"], "rank_process_failed")
        self.assertIn("rank 1 on this node failed first (exit 1 at ", summary_b["headline"])
        self.assertIn("RuntimeError: planted failure on rank 1", summary_b["headline"])
        # On A, the hang follows B's failure: A reports it and exits with its status, not 124.
        self.assertEqual(rc_a, 1, self.output("A"))
        _, manifest_a, summary_a = self.bundle("A")
        self.assertIn(manifest_a["trigger"], ("stall", "peer_hang"))
        self.assertEqual(manifest_a["peer_failure"]["node"], "B")
        self.assertEqual(summary_a["category"], "oom_or_crash_other_rank")
        self.assertIn("node B rank 1 failed first (exit 1 at ", summary_a["headline"])
        self.assertIn("RuntimeError: planted failure on rank 1", summary_a["headline"])
        self.assertEqual(summary_a["evidence"][0]["signature"], "peer_event.failure")
        self.assertIn("1", summary_a["ranks"])
        for node in ("A", "B"):
            with open(os.path.join(self.root, node, "status.json")) as f:
                self.assertEqual(json.load(f)["exit_status"], 1)

    # ---- 3. post-mortem ready when the job ends ----------------------------------------------

    def diagnose_writes_into_the_run_root(self):
        """Whether this safe-launch's `diagnose RUN_ROOT` writes diagnosis.json there (the join
        branch makes it so)."""
        probe = os.path.join(self.tmp, "probe", "safe-launch-runs", "j", "n")
        os.makedirs(probe)
        with open(os.path.join(probe, "stdout.tail"), "w") as f:
            f.write("hello\n")
        subprocess.run([SL, "diagnose", os.path.dirname(probe)], capture_output=True, timeout=60)
        return os.path.exists(os.path.join(os.path.dirname(probe), "diagnosis.json"))

    def test_the_detecting_node_waits_for_the_peer_bundle_and_runs_diagnose_on_the_run_root(self):
        a, b = self.hang_on_a_busy_b(["--post-mortem-wait", "20"])
        self.assertEqual(self.wait(a, 120), HANG_EXIT, self.output("A"))
        self.assertEqual(self.wait(b, 120), HANG_EXIT, self.output("B"))
        out = self.output("A")
        self.assertIn("post-mortem: 1 of 1 other node(s) bundled after", out)
        self.assertIn(f"post-mortem: diagnose ", out)
        # B's bundle was complete before A's diagnose ran: A logged it as bundled.
        self.bundle("B")
        if not self.diagnose_writes_into_the_run_root():
            self.skipTest("this safe-launch's `diagnose RUN_ROOT` writes no diagnosis.json yet")
        self.assertTrue(os.path.exists(os.path.join(self.root, "diagnosis.json")), out)
        self.assertIn(f"diagnosis in {self.root}/diagnosis.md", out)


if __name__ == "__main__":
    SL, CHILD, SRC = sys.argv[1], sys.argv[2], sys.argv[3]
    unittest.main(argv=[sys.argv[0]] + sys.argv[4:], verbosity=2)

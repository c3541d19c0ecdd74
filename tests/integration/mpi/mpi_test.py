"""safe-launch under Open MPI's mpirun, one safe-launch per rank (--per-task): each rank gets
torch.distributed's variables from mpirun's, its own run directory and log prefix; on each node
local rank 0 runs the warm-up among the nodes and the node's other ranks wait for its verdict.

Two nodes on one host: `--host nodea:2,nodeb:2` with fake_ssh.sh as Open MPI's rsh agent. mpirun
then starts an orted per "node" and sets OMPI_COMM_WORLD_LOCAL_{RANK,SIZE} per node, as on two
machines; only the host (and its name) is shared, so the warm-up meets over loopback.

usage: mpi_test.py SAFE_LAUNCH SOURCE_DIR [unittest args, e.g. -k gloo]
"""
import glob
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import unittest

SL = SRC = None
PYTHON = "/usr/bin/python3"  # the pyenv python on PATH has no torch
HANG_EXIT = 124


def free_port():
    """A rendezvous port P with P + 1 (the warm-up store's) free too, below the ephemeral range
    (tests/integration/helpers/ports.py)."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "helpers"))
    from ports import free_port_pair
    return free_port_pair()


class MpiTest(unittest.TestCase):
    def setUp(self):
        if not shutil.which("mpirun"):
            self.skipTest("no mpirun")
        self.tmp = tempfile.mkdtemp(prefix="sl-mpi-")
        self.addCleanup(shutil.rmtree, self.tmp, True)

    def mpirun(self, sl_args, job, timeout=180, nodes=1, launcher=None, mca=()):
        port = free_port()
        layout = ["-np", "2"]
        if nodes == 2:
            # No tree spawn, direct routes: each orted is started (and reached) by mpirun itself.
            layout = ["-np", "4", "--host", "nodea:2,nodeb:2",
                      "--mca", "plm_rsh_agent", os.path.join(HERE, "fake_ssh.sh"),
                      "--mca", "plm_rsh_no_tree_spawn", "1", "--mca", "routed", "direct"]
        # Session directories of our own: other mpiruns on this host do not meet ours there.
        layout += ["--mca", "orte_tmpdir_base", self.tmp]
        for m in mca:
            layout += ["--mca", *m]
        cmd = ["mpirun", "--allow-run-as-root", "--oversubscribe", *layout,
               "--mca", "btl", "self,vader", "--mca", "oob_tcp_if_include", "lo",
               "-x", "MASTER_ADDR=127.0.0.1", "-x", f"MASTER_PORT={port}",
               *(launcher or [SL]), "--per-task", "--no-preflight", *sl_args, "--", *job]
        # start_new_session: a timeout kills mpirun's whole group, ranks included.
        env = dict(os.environ)
        if nodes == 2:
            # Two PMIx servers (one per orted) on one host would share PMIx's shared-memory
            # store ("PMIX ERROR: ... dstore_base.c"); its hash store keeps each to its own.
            env["PMIX_MCA_gds"] = "hash"
        # Open MPI 4.1's own launch of two orteds on one host stalls now and then before any
        # rank starts (both daemons check in as the same host; ~1 launch in 5 of /bin/true here,
        # or an orted segfaults in hwloc's shared topology): nothing of ours has run then, the
        # output is empty, and the launch is retried. A stall after safe-launch printed fails.
        attempts = 3 if nodes == 2 else 1
        for attempt in range(attempts):
            rc, out = self.launch(cmd, env, 45 if attempt < attempts - 1 else timeout)
            if rc is not None or "safe-launch[" in out:
                break
            shutil.rmtree(os.path.join(self.tmp, "safe-launch-runs"), True)
        if rc is None:
            self.fail("mpirun timed out:\n" + out[-4000:])
        return rc, out

    def launch(self, cmd, env, timeout):
        """(exit status, output) of one mpirun, (None, output) when it ran past `timeout`."""
        p = subprocess.Popen(cmd, cwd=self.tmp, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             start_new_session=True, env=env)
        try:
            out, _ = p.communicate(timeout=timeout)
            rc = p.returncode
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, 9)
            out, _ = p.communicate()
            rc = None
        # orted --daemonize leaves mpirun's process group: stop this launch's daemons by the
        # session directory only they were given.
        subprocess.run(["pkill", "-9", "-f", f"orte_tmpdir_base {self.tmp}"], check=False)
        return rc, out.decode(errors="replace")

    def rank_dir(self, rank):
        dirs = [d for d in self.run_dirs() if d.endswith(f"-rank{rank}")]
        self.assertEqual(len(dirs), 1, self.run_dirs())
        return dirs[0]

    def status(self, rank):
        with open(os.path.join(self.rank_dir(rank), "status.json")) as f:
            return json.load(f)

    def run_dirs(self):
        return sorted(d for d in glob.glob(os.path.join(self.tmp, "safe-launch-runs", "*", "*"))
                      if os.path.isdir(d))

    def test_a_two_rank_gloo_job_finds_rank_and_passes(self):
        rc, out = self.mpirun([], [PYTHON, os.path.join(SRC, "examples/allreduce_gloo.py")])
        self.assertEqual(rc, 0, out[-4000:])
        self.assertNotIn("KeyError", out)
        dirs = self.run_dirs()
        self.assertEqual(sorted(d[-6:] for d in dirs), ["-rank0", "-rank1"], dirs)
        for r in (0, 1):
            self.assertIn(f":0/r{r}] info: job exited 0", out)

    def test_a_rank_failure_is_named_with_its_rank_and_status(self):
        rc, out = self.mpirun([], [PYTHON, os.path.join(SRC, "examples/allreduce_gloo.py"),
                                   "--fail-rank", "1", "--fail-code", "3"])
        self.assertNotEqual(rc, 0, out[-4000:])
        self.assertIn(":0/r1] warning: job exited 3", out)
        failed = [d for d in self.run_dirs() if d.endswith("-rank1")]
        self.assertEqual(len(failed), 1, self.run_dirs())
        with open(os.path.join(failed[0], "status.json")) as f:
            self.assertEqual(json.load(f)["exit_status"], 3)

    def test_two_nodes_local_rank_0_warms_up_and_the_others_wait(self):
        rc, out = self.mpirun([], [PYTHON, os.path.join(SRC, "examples/allreduce_gloo.py")],
                              nodes=2)
        self.assertEqual(rc, 0, out[-6000:])
        # One job directory for the launch (its PMIx namespace), one run directory per rank.
        self.assertEqual(len({os.path.dirname(d) for d in self.run_dirs()}), 1, self.run_dirs())
        # Local rank 0 of each node (ranks 0 and 2) ran a 2-node warm-up, as node 0 and node 1.
        self.assertIn(":0/r0] info: warm-up: node 0 of 2, 2 rank(s) here", out)
        self.assertIn(":1/r2] info: warm-up: node 1 of 2, 2 rank(s) here", out)
        for r in (0, 2):
            with open(os.path.join(self.rank_dir(r), "warmup.json")) as f:
                w = json.load(f)
            self.assertEqual((w["verdict"], w["nnodes"], w["nproc_per_node"]), ("pass", 2, 2))
        # The others ran none, waited for their node's verdict and started after it.
        for r, leader, node in ((1, 0, 0), (3, 2, 1)):
            self.assertFalse(os.path.exists(os.path.join(self.rank_dir(r), "warmup.json")))
            self.assertIn(f":{node}/r{r}] info: per-task: local rank 0 does this node's "
                          f"preflight and warm-up; rank {r} waits for its verdict", out)
            self.assertIn(f":{node}/r{r}] info: local rank 0 (rank {leader}) passed the node's "
                          f"checks: starting rank {r}", out)
            st = self.status(r)
            self.assertEqual(st["node_verdict"]["exit_status"], 0, st)
            self.assertEqual(st["node_verdict"]["rank"], str(leader), st)
            self.assertEqual(st["warmup"]["verdict"], "pass", st)
            wait_line = out.index(f":{node}/r{r}] info: local rank 0 (rank {leader}) passed")
            self.assertGreater(wait_line, out.index(f":{node}/r{leader}] info: warm-up passed"))
        for r in range(4):
            self.assertIn(f"rank {r}/4: all_reduce ok", out)
            self.assertEqual(self.status(r)["exit_status"], 0)

    def test_a_failed_node_warmup_stops_the_ranks_waiting_for_it(self):
        # Node 1's facts (an MTU of 1500 where node 0 has 9000) fail the warm-up: no rank starts,
        # and node 1's waiting rank exits with its local rank 0's status, naming it.
        fx = os.path.join(SRC, "tests/fixtures")
        launcher = ["/bin/sh", "-c",
                    f'if [ "$OMPI_COMM_WORLD_RANK" -lt 2 ]; then f=roce-jumbo; else '
                    f'f=roce-mtu1500; fi; exec "$0" --sysroot "{fx}/$f" "$@"', SL]
        rc, out = self.mpirun(["--warmup-timeout", "60"],
                              [PYTHON, os.path.join(SRC, "examples/allreduce_gloo.py")],
                              nodes=2, launcher=launcher,
                              # mpirun would SIGTERM the waiting ranks once a first one exits
                              # 69; here every rank is let to end on its own.
                              mca=[("orte_abort_on_non_zero_status", "0")])
        # (With orte_abort_on_non_zero_status off, mpirun itself exits 0: each rank's own exit
        # status is in its status.json, checked below.)
        self.assertNotIn("all_reduce ok", out)
        self.assertIn("MTU of mlx5_", out)
        self.assertIn(":1/r3] error: local rank 0 (rank 2, ", out)
        self.assertIn("warm-up failed: the job was NOT started (exit 69)", out)
        for r in range(4):
            st = self.status(r)
            self.assertEqual((st["state"], st["exit_status"]), ("not_started", 69), (r, st))

    def test_a_hang_is_bundled_and_exits_124(self):
        rc, out = self.mpirun(["--stall-timeout", "6", "--kill-grace", "3"],
                              [PYTHON, os.path.join(SRC, "tests/integration/hang/stall_job.py")])
        self.assertEqual(rc, HANG_EXIT, out[-4000:])
        dirs = self.run_dirs()
        self.assertEqual(len(dirs), 2, dirs)
        bundled = [d for d in dirs if glob.glob(os.path.join(d, "hang-*.tar.gz"))]
        self.assertTrue(bundled, [os.listdir(d) for d in dirs])
        # The stacks are labelled with the rank each task ran (the RANK safe-launch gave it), in
        # every bundle taken while the job was alive (a rank whose job died of the other's stop
        # before it heard of the hang bundles it on notice, with no stacks left to take).
        alive = 0
        for d in bundled:
            rank = d.rsplit("-rank", 1)[1]
            with tarfile.open(glob.glob(os.path.join(d, "hang-*.tar.gz"))[0]) as tar:
                names = tar.getnames()
                manifest = json.load(tar.extractfile(
                    next(n for n in names if n.endswith("/manifest.json"))))
            if not manifest["job_alive_at_capture"]:
                self.assertEqual(manifest["trigger"], "peer_hang", manifest)
                continue
            alive += 1
            self.assertTrue([n for n in names if f"stacks/rank_{rank}_pid_" in n], names)
        self.assertGreaterEqual(alive, 1, bundled)


HERE = os.path.dirname(os.path.abspath(__file__))

if __name__ == "__main__":
    SL, SRC = (os.path.abspath(p) for p in sys.argv[1:3])
    prog = unittest.main(argv=[sys.argv[0]] + sys.argv[3:], verbosity=2, exit=False)
    # ctest runs one test per -k pattern: a pattern that matches nothing (a renamed test) must
    # fail, where Python 3.11's unittest says "Ran 0 tests ... OK" and exits 0.
    sys.exit(0 if prog.result.wasSuccessful() and prog.result.testsRun > 0 else 1)

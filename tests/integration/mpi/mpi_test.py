"""safe-launch under Open MPI's mpirun, one safe-launch per rank (--per-task): each rank gets
torch.distributed's variables from mpirun's, its own run directory and log prefix.

usage: mpi_test.py SAFE_LAUNCH SOURCE_DIR [unittest args, e.g. -k gloo]
"""
import glob
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import unittest

SL = SRC = None
PYTHON = "/usr/bin/python3"  # the pyenv python on PATH has no torch
HANG_EXIT = 124


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class MpiTest(unittest.TestCase):
    def setUp(self):
        if not shutil.which("mpirun"):
            self.skipTest("no mpirun")
        self.tmp = tempfile.mkdtemp(prefix="sl-mpi-")
        self.addCleanup(shutil.rmtree, self.tmp, True)

    def mpirun(self, sl_args, job, timeout=180):
        port = free_port()
        cmd = ["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", "2",
               "--mca", "btl", "self,vader", "--mca", "oob_tcp_if_include", "lo",
               "-x", "MASTER_ADDR=127.0.0.1", "-x", f"MASTER_PORT={port}",
               SL, "--per-task", "--no-preflight", *sl_args, "--", *job]
        # start_new_session: a timeout kills mpirun's whole group, ranks included.
        p = subprocess.Popen(cmd, cwd=self.tmp, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             start_new_session=True)
        try:
            out, _ = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, 9)
            out, _ = p.communicate()
            self.fail("mpirun timed out:\n" + out.decode(errors="replace")[-4000:])
        return p.returncode, out.decode(errors="replace")

    def run_dirs(self):
        return sorted(glob.glob(os.path.join(self.tmp, "safe-launch-runs", "*", "*")))

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

    def test_a_hang_is_bundled_and_exits_124(self):
        rc, out = self.mpirun(["--stall-timeout", "6", "--kill-grace", "3"],
                              [PYTHON, os.path.join(SRC, "tests/integration/hang/stall_job.py")])
        self.assertEqual(rc, HANG_EXIT, out[-4000:])
        dirs = self.run_dirs()
        self.assertEqual(len(dirs), 2, dirs)
        bundled = [d for d in dirs if glob.glob(os.path.join(d, "hang-*.tar.gz"))]
        self.assertTrue(bundled, [os.listdir(d) for d in dirs])


if __name__ == "__main__":
    SL, SRC = (os.path.abspath(p) for p in sys.argv[1:3])
    unittest.main(argv=[sys.argv[0]] + sys.argv[3:], verbosity=2)

"""`safe-launch preflight --slurm/--epilog` without a Slurm cluster: the scontrol bound, the
epilog's leftover scan on a real process, the usage errors.

usage: health_test.py SAFE_LAUNCH SOURCE_DIR [unittest args, e.g. -k hang]
"""
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

SL = SRC = None


class HealthTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="sl-health-")
        self.addCleanup(shutil.rmtree, self.tmp, True)

    def fixture(self, name):
        return os.path.join(SRC, "tests/fixtures", name)

    def test_a_hung_scontrol_is_killed_at_the_deadline_and_the_reason_still_printed(self):
        # A stand-in for a slurmctld that never answers: scontrol itself is an external tool.
        bindir = os.path.join(self.tmp, "bin")
        os.makedirs(bindir)
        fake = os.path.join(bindir, "scontrol")
        with open(fake, "w") as f:
            f.write("#!/bin/sh\nexec sleep 300\n")
        os.chmod(fake, 0o755)
        env = dict(os.environ, PATH=bindir + ":/usr/bin:/bin", SLURMD_NODENAME="gpu07")
        t0 = time.time()
        r = subprocess.run([SL, "preflight", "--slurm", "--sysroot", self.fixture("memlock-64k")],
                           env=env, capture_output=True, text=True, timeout=60)
        took = time.time() - t0
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertLess(took, 20, r.stderr)
        self.assertIn("could not drain node gpu07", r.stderr)
        self.assertIn("did not answer within 10 s", r.stderr)
        self.assertIn('"safe-launch: os.memlock: memlock limit is only 64 KiB', r.stderr)

    def test_without_a_slurm_node_name_slurm_mode_is_a_usage_error(self):
        env = {k: v for k, v in os.environ.items() if k != "SLURMD_NODENAME"}
        r = subprocess.run([SL, "preflight", "--slurm", "--sysroot", self.fixture("ib-healthy")],
                           env=env, capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("no node name is known", r.stderr)
        self.assertIn("SLURMD_NODENAME", r.stderr)
        r = subprocess.run([SL, "preflight", "--epilog", "--only", "os"], capture_output=True,
                           text=True, timeout=60)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("--epilog runs its own checks", r.stderr)

    def test_epilog_without_slurm_is_a_usage_error_naming_both_flags(self):
        # Nothing would drain: an Epilog= line without --slurm would pass every node silently.
        r = subprocess.run([SL, "preflight", "--epilog", "--since", "1h",
                            "--sysroot", self.fixture("ib-healthy")],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(r.returncode, 2, r.stdout + r.stderr)
        self.assertIn("--epilog needs --slurm", r.stderr)
        self.assertIn("safe-launch preflight --slurm --epilog", r.stderr)
        self.assertEqual(r.stdout, "")

    def test_the_epilog_names_a_real_process_holding_a_gpu_device_and_waive_applies(self):
        if os.geteuid() != 0 or not shutil.which("unshare"):
            self.skipTest("needs root (mount namespace, mknod) and unshare")
        root = os.path.join(self.tmp, "root")
        for d in ("proc", "dev", "etc"):
            os.makedirs(os.path.join(root, d))
        shutil.copy("/etc/passwd", os.path.join(root, "etc", "passwd"))
        dev = os.path.join(root, "dev", "nvidiactl")
        os.mknod(dev, 0o666 | 0o020000, os.makedev(1, 3))  # a real char device (/dev/null's)
        with open(dev) as held:
            holder = subprocess.Popen(["sleep", "60"], stdin=held)
        self.addCleanup(holder.wait)
        self.addCleanup(holder.kill)

        bindir = os.path.join(self.tmp, "bin")
        os.makedirs(bindir)
        with open(os.path.join(bindir, "scontrol"), "w") as f:  # stands in for slurmctld
            f.write("#!/bin/sh\necho \"$@\" >> %s/scontrol.log\n" % self.tmp)
        os.chmod(os.path.join(bindir, "scontrol"), 0o755)

        def epilog(*extra):
            # The sysroot sees the real /proc through a bind mount in a mount namespace of its own.
            cmd = (f"mount --bind /proc {root}/proc && PATH={bindir}:$PATH exec {SL} preflight "
                   f"--slurm --node-name gpu07 --epilog --since 1h "
                   f"--sysroot {root} " + " ".join(extra))
            return subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c", cmd],
                                  capture_output=True, text=True, timeout=60)
        r = epilog()
        self.assertEqual(r.returncode, 1, r.stdout + r.stderr)
        self.assertIn(f"pid {holder.pid} (root: sleep 60)", r.stdout)
        self.assertIn("FAIL   gpu.leftover_procs", r.stdout)
        r = epilog("--waive", "gpu.leftover_procs")
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("WAIVED", r.stdout)
        holder.kill()
        holder.wait()
        r = epilog()
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("no process holds an NVIDIA device after the job", r.stdout)


if __name__ == "__main__":
    SL, SRC = (os.path.abspath(p) for p in sys.argv[1:3])
    prog = unittest.main(argv=[sys.argv[0]] + sys.argv[3:], verbosity=2, exit=False)
    # ctest runs one test per -k pattern: a pattern that matches nothing (a renamed test) must
    # fail, where Python 3.11's unittest says "Ran 0 tests ... OK" and exits 0.
    sys.exit(0 if prog.result.wasSuccessful() and prog.result.testsRun > 0 else 1)

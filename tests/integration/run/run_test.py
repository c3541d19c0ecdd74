"""Integration tests of `safe-launch run`: the real binary, real processes, real signals.

usage: run_test.py SAFE_LAUNCH SL_TEST_CHILD SOURCE_DIR [unittest args, e.g. -k exit_codes]

Leftover processes are found by a unique --marker=... argument in /proc/*/cmdline, which every
sl-test-child mode (and its forked grandchildren) keeps.
"""
import fcntl
import glob
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import uuid

SL = CHILD = SRC = None
TORCHRUN = "/usr/bin/torchrun"
PYTHON = "/usr/bin/python3"
F_GETPIPE_SZ = getattr(fcntl, "F_GETPIPE_SZ", 1032)  # Linux; Python >= 3.10 names it


def marker():
    return "--marker=sltest-" + uuid.uuid4().hex[:12]


def pids_with(mark):
    """Pids of the job's processes whose cmdline contains `mark` (zombies have an empty cmdline
    and do not count; safe-launch itself, which has the marker in its own argv, does not)."""
    found = []
    for path in glob.glob("/proc/[0-9]*/cmdline"):
        try:
            with open(path, "rb") as f:
                cmdline = f.read()
                if mark.encode() in cmdline and not cmdline.startswith(SL.encode()):
                    found.append(int(path.split("/")[2]))
        except OSError:
            pass
    return found


def wait_gone(mark, timeout=5.0):
    end = time.time() + timeout
    while time.time() < end:
        if not pids_with(mark):
            return True
        time.sleep(0.05)
    return not pids_with(mark)


def kill_leftovers(mark):
    for pid in pids_with(mark):
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


class Job:
    """safe-launch running in the background with stdout/stderr captured to files."""

    def __init__(self, args, run_dir, env=None, stdout=None):
        self.out = tempfile.TemporaryFile()
        self.err = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(
            [SL, "--no-preflight", "--run-dir", run_dir] + args,
            stdout=stdout if stdout is not None else self.out, stderr=self.err, env=env)

    def wait_for_output(self, text, timeout=10.0):
        end = time.time() + timeout
        while time.time() < end:
            if text in self.stdout():
                return True
            time.sleep(0.02)
        return False

    # The job writes through the same open file as self.out/self.err: seeking it would move the
    # job's write offset too, and a line written between our seek and our read would land over the
    # start of the file (CI once saw "got SIGWINCH" over "ready\ngot SIG"). pread leaves the
    # offset alone.
    @staticmethod
    def _read_all(f):
        chunks, off = [], 0
        while True:
            b = os.pread(f.fileno(), 1 << 20, off)
            if not b:
                return b"".join(chunks).decode(errors="replace")
            chunks.append(b)
            off += len(b)

    def stdout(self):
        return self._read_all(self.out)

    def stderr(self):
        return self._read_all(self.err)

    def wait(self, timeout=30):
        return self.proc.wait(timeout=timeout)


class RunTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="sl-run-test-")
        self.marks = []

    def tearDown(self):
        for m in self.marks:
            kill_leftovers(m)
        self.tmp.cleanup()

    def mark(self):
        m = marker()
        self.marks.append(m)
        return m

    def run_dir(self, name="run"):
        return os.path.join(self.tmp.name, name)

    def run_sl(self, cmd, extra=(), timeout=60, **kw):
        return subprocess.run([SL, "--no-preflight", "--run-dir", self.run_dir()] + list(extra) +
                              ["--"] + cmd, capture_output=True, timeout=timeout, **kw)

    def status(self, run_dir=None):
        with open(os.path.join(run_dir or self.run_dir(), "status.json")) as f:
            return json.load(f)

    # ---- exit status --------------------------------------------------------------------------

    def test_every_exit_code_0_to_255_passes_through(self):
        def one(code):
            d = os.path.join(self.tmp.name, f"rc{code}")
            r = subprocess.run([SL, "--no-preflight", "--run-dir", d, "--", CHILD, "exit",
                                str(code)], capture_output=True, timeout=60)
            return code, r.returncode
        results = []
        lock = threading.Lock()
        codes = list(range(256))

        def worker():
            while True:
                with lock:
                    if not codes:
                        return
                    c = codes.pop()
                res = one(c)
                with lock:
                    results.append(res)
        threads = [threading.Thread(target=worker) for _ in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        wrong = [(c, rc) for c, rc in results if c != rc]
        self.assertEqual(len(results), 256)
        self.assertEqual(wrong, [])
        st = self.status(os.path.join(self.tmp.name, "rc3"))
        self.assertEqual(st["job"]["how"], "exited")
        self.assertEqual(st["job"]["exit_code"], 3)
        self.assertEqual(st["exit_status"], 3)

    def test_death_by_signal_gives_128_plus_signal(self):
        for sig in (signal.SIGHUP, signal.SIGINT, signal.SIGQUIT, signal.SIGABRT, signal.SIGKILL,
                    signal.SIGSEGV, signal.SIGPIPE, signal.SIGALRM, signal.SIGTERM,
                    signal.SIGUSR1, signal.SIGUSR2, signal.SIGBUS):
            d = self.run_dir(sig.name)
            r = subprocess.run([SL, "--no-preflight", "--run-dir", d, "--", CHILD, "signal",
                                str(int(sig))], capture_output=True, timeout=60)
            self.assertEqual(r.returncode, 128 + int(sig), f"{sig.name}: {r.stderr[-500:]}")
            st = self.status(d)
            self.assertEqual(st["job"]["how"], "signaled")
            self.assertEqual(st["job"]["signal"], int(sig))
            self.assertEqual(st["job"]["signal_name"], sig.name)

    def test_exec_failure_gives_127_or_126_with_a_message(self):
        r = self.run_sl(["no-such-command-xyz", "arg"])
        self.assertEqual(r.returncode, 127)
        self.assertIn(b"'no-such-command-xyz' was not found in PATH=", r.stderr)
        self.assertEqual(self.status()["job"]["how"], "exec_failed")
        r = self.run_sl([os.path.join(self.tmp.name, "missing", "prog")])
        self.assertEqual(r.returncode, 127)
        self.assertIn(b"No such file or directory", r.stderr)
        not_exec = os.path.join(self.tmp.name, "script.sh")
        with open(not_exec, "w") as f:
            f.write("#!/bin/sh\necho hi\n")
        os.chmod(not_exec, 0o644)
        r = self.run_sl([not_exec])
        self.assertEqual(r.returncode, 126)
        self.assertIn(b"permission denied", r.stderr)
        self.assertIn(b"chmod +x", r.stderr)

    def test_no_command_is_a_usage_error(self):
        r = subprocess.run([SL, "--no-preflight", "--run-dir", self.run_dir()],
                           capture_output=True, timeout=30)
        self.assertEqual(r.returncode, 2)
        self.assertIn(b"no command given", r.stderr)

    # ---- signals ------------------------------------------------------------------------------

    def test_each_forwarded_signal_arrives_exactly_once(self):
        job = Job(["--", CHILD, self.mark(), "print-signals"], self.run_dir())
        self.assertTrue(job.wait_for_output("ready"), job.stderr())
        sent = [signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2, signal.SIGWINCH,
                signal.SIGALRM]
        for sig in sent:
            job.proc.send_signal(sig)
            self.assertTrue(job.wait_for_output("got " + sig.name), sig.name + job.stderr())
        job.proc.send_signal(signal.SIGTERM)  # the child exits 0 on TERM
        self.assertEqual(job.wait(), 0, job.stderr())
        lines = job.stdout().splitlines()
        for sig in sent + [signal.SIGTERM]:
            self.assertEqual(lines.count("got " + sig.name), 1, f"{sig.name}: {lines}")
        st = self.status()
        self.assertIn(f"SIGTERM from pid {os.getpid()}", st["stop"]["requested_by"])
        self.assertFalse(st["stop"]["escalated"])

    def test_signal_ranks_delivers_usr1_to_a_grandchild_the_job_does_not_forward_to(self):
        # The job (a shell, standing in for torchrun) ignores USR1 and does not pass it on; its
        # child (a "rank") gets it only through --signal-ranks.
        script = f"trap '' USR1; {CHILD} {self.mark()} print-signals; true"
        job = Job(["--signal-ranks", "USR1", "--", "/bin/sh", "-c", script], self.run_dir())
        self.assertTrue(job.wait_for_output("ready"), job.stderr())
        job.proc.send_signal(signal.SIGUSR1)
        self.assertTrue(job.wait_for_output("got SIGUSR1"), job.stderr())
        job.proc.send_signal(signal.SIGTERM)
        job.wait()
        self.assertIn("(--signal-ranks)", json.dumps(self.status()["events"]))

    def test_sigint_is_forwarded_once_and_the_grace_then_escalates(self):
        job = Job(["--kill-grace", "1", "--", CHILD, self.mark(), "print-signals"],
                  self.run_dir())
        self.assertTrue(job.wait_for_output("ready"))
        job.proc.send_signal(signal.SIGINT)
        # The child survives SIGINT; after 1 s of grace everything gets TERM (child exits 0).
        self.assertEqual(job.wait(), 0)
        lines = job.stdout().splitlines()
        self.assertEqual(lines.count("got SIGINT"), 1, lines)
        self.assertEqual(lines.count("got SIGTERM"), 1, lines)
        self.assertTrue(self.status()["stop"]["escalated"])

    def test_sigterm_with_child_ignoring_term_leaves_no_descendant_after_the_grace(self):
        mark = self.mark()
        job = Job(["--kill-grace", "1", "--", CHILD, mark, "ignore-term", "grandchild"],
                  self.run_dir())
        self.assertTrue(job.wait_for_output("ready"))
        self.assertEqual(len(pids_with(mark)), 2)  # the child and its setsid'd grandchild
        t0 = time.time()
        job.proc.send_signal(signal.SIGTERM)
        rc = job.wait()
        took = time.time() - t0
        self.assertEqual(rc, 128 + signal.SIGKILL)
        self.assertGreaterEqual(took, 1.0)  # the grace was honoured
        self.assertLess(took, 8.0)
        self.assertEqual(pids_with(mark), [])
        st = self.status()
        self.assertTrue(st["stop"]["escalated"])
        self.assertEqual(len(st["swept_pids"]), 2)
        self.assertIn("SIGTERM", st["stop"]["requested_by"])

    def test_second_sigterm_skips_the_rest_of_the_grace(self):
        mark = self.mark()
        job = Job(["--kill-grace", "60", "--", CHILD, mark, "ignore-term", "grandchild"],
                  self.run_dir())
        self.assertTrue(job.wait_for_output("ready"))
        job.proc.send_signal(signal.SIGTERM)
        time.sleep(0.3)
        t0 = time.time()
        job.proc.send_signal(signal.SIGTERM)
        self.assertEqual(job.wait(timeout=20), 128 + signal.SIGKILL)
        self.assertLess(time.time() - t0, 6.0)
        self.assertEqual(pids_with(mark), [])

    def test_job_exit_sweeps_a_setsid_grandchild_left_behind(self):
        mark = self.mark()
        r = self.run_sl([CHILD, mark, "setsid-grandchild", "exit"], timeout=30)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertTrue(wait_gone(mark, 2.0), pids_with(mark))
        gc = int(r.stdout.decode().split("grandchild ")[1].split()[0])
        st = self.status()
        self.assertIn(gc, st["swept_pids"])
        self.assertIn("leftover", json.dumps(st["events"]))

    def test_sigterm_received_before_the_job_starts_means_it_never_starts(self):
        # A TERM that is pending when safe-launch starts (blocked + sent before exec; pending
        # signals survive execve) stands for one that arrives during preflight or warm-up.
        flag = os.path.join(self.tmp.name, "started")

        def pending_term():
            signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGTERM])
            os.kill(os.getpid(), signal.SIGTERM)
        r = subprocess.run([SL, "--no-preflight", "--run-dir", self.run_dir(), "--", "/bin/sh",
                            "-c", f"touch {flag}"], capture_output=True, timeout=30,
                           preexec_fn=pending_term)
        self.assertEqual(r.returncode, 128 + signal.SIGTERM, r.stderr)
        self.assertFalse(os.path.exists(flag))
        self.assertIn(b"job not started", r.stderr)

    def assert_stopped_before_start(self, proc, sig, phase, t0, grace):
        """safe-launch ends within 2 s + `grace` of `sig`, with 128+sig and a status.json saying
        the job was not started because of it."""
        try:
            rc = proc.wait(timeout=2.0 + grace + 10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            self.fail(f"safe-launch still running {2.0 + grace + 10:.0f} s after {sig.name}")
        took = time.time() - t0
        self.assertEqual(rc, 128 + sig)
        self.assertLess(took, 2.0 + grace)
        st = self.status()
        self.assertEqual(st["state"], "not_started")
        self.assertEqual(st["exit_status"], 128 + sig)
        self.assertEqual(st["stop"]["signal_name"], sig.name)
        self.assertEqual(st["stop"]["phase"], phase)
        self.assertIn(f"{sig.name} from pid {os.getpid()}", st["stop"]["requested_by"])

    def test_sigterm_during_the_warm_up_ends_safe_launch_within_2_s_plus_grace(self):
        # A warm-up rank that ignores SIGTERM and never finishes: safe-launch is copied next to
        # a safe-launch-warmup script (it finds the rank binary next to /proc/self/exe).
        mark = self.mark()
        bindir = os.path.join(self.tmp.name, "bin")
        os.mkdir(bindir)
        sl_copy = os.path.join(bindir, "safe-launch")
        shutil.copy(SL, sl_copy)
        rank = os.path.join(bindir, "safe-launch-warmup")
        with open(rank, "w") as f:
            f.write(f"#!/bin/sh\nexec {CHILD} {mark} ignore-term\n")
        os.chmod(rank, 0o755)
        flag = os.path.join(self.tmp.name, "job-started")
        proc = subprocess.Popen(
            [sl_copy, "--no-preflight", "--run-dir", self.run_dir(), "--warmup", "--nnodes", "1",
             "--node-rank", "0", "--nproc-per-node", "2", "--warmup-timeout", "100", "--",
             "/bin/sh", "-c", f"touch {flag}"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        end = time.time() + 20
        while len(pids_with(mark)) < 2 and time.time() < end:
            time.sleep(0.05)
        self.assertEqual(len(pids_with(mark)), 2, "the warm-up ranks did not start")
        time.sleep(0.3)  # let them install their SIG_IGN
        t0 = time.time()
        proc.send_signal(signal.SIGTERM)
        # The ranks ignore TERM: they are killed after the 1 s stop grace.
        self.assert_stopped_before_start(proc, signal.SIGTERM, "warm-up", t0, grace=1.0)
        self.assertEqual(self.status()["warmup"]["verdict"], "interrupted")
        self.assertIn(b"job not started", proc.stderr.read())
        self.assertFalse(os.path.exists(flag))
        self.assertTrue(wait_gone(mark, 2.0), pids_with(mark))

    def test_sigint_during_the_version_probe_ends_safe_launch_within_2_s_plus_grace(self):
        # The probe runs /usr/bin/python3 to read sys.path; a sitecustomize on PYTHONPATH makes
        # it hang (as on a stuck file system). An empty cache dir forces the probe to run.
        site = os.path.join(self.tmp.name, "site")
        os.mkdir(site)
        started = os.path.join(self.tmp.name, "probe-pid")
        with open(os.path.join(site, "sitecustomize.py"), "w") as f:
            f.write(f"import os, time\nopen({started!r} + '.tmp', 'w').write(str(os.getpid()))\n"
                    f"os.rename({started!r} + '.tmp', {started!r})\ntime.sleep(100)\n")
        env = dict(os.environ, PYTHONPATH=site,
                   XDG_CACHE_HOME=os.path.join(self.tmp.name, "cache"))
        flag = os.path.join(self.tmp.name, "job-started")
        proc = subprocess.Popen([SL, "--no-preflight", "--no-warmup", "--run-dir", self.run_dir(),
                                 "--", "/bin/sh", "-c", f"touch {flag}"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
        end = time.time() + 20
        while not os.path.exists(started) and time.time() < end:
            time.sleep(0.05)
        self.assertTrue(os.path.exists(started), "the version probe did not start")
        probe = int(open(started).read())
        t0 = time.time()
        proc.send_signal(signal.SIGINT)
        self.assert_stopped_before_start(proc, signal.SIGINT, "environment plan", t0, grace=1.0)
        self.assertFalse(os.path.exists(flag))
        end = time.time() + 2
        while os.path.exists(f"/proc/{probe}") and time.time() < end:
            time.sleep(0.05)
        self.assertFalse(os.path.exists(f"/proc/{probe}"), "the probe's python is still running")

    # ---- output -------------------------------------------------------------------------------

    def test_100_mib_of_output_passes_byte_identical_with_streams_kept_apart(self):
        n = 100 * 1024 * 1024
        direct_out = os.path.join(self.tmp.name, "direct.out")
        direct_err = os.path.join(self.tmp.name, "direct.err")
        with open(direct_out, "wb") as o, open(direct_err, "wb") as e:
            subprocess.run([CHILD, "write", str(n), "both"], stdout=o, stderr=e, check=True)
        sl_out = os.path.join(self.tmp.name, "sl.out")
        sl_err = os.path.join(self.tmp.name, "sl.err")
        with open(sl_out, "wb") as o, open(sl_err, "wb") as e:
            rc = subprocess.run([SL, "--no-preflight", "--run-dir", self.run_dir(), "--", CHILD,
                                 "write", str(n), "both"], stdout=o, stderr=e).returncode
        self.assertEqual(rc, 0)

        def digest(path, drop_own_lines=False):
            with open(path, "rb") as f:
                data = f.read()
            if drop_own_lines:
                # safe-launch's own log lines, written before the job starts and after it ended
                # (the job's last stderr line has no newline, so one is glued to it). The job's
                # pattern is [a-z\n] only, so this cannot eat job bytes.
                data = re.sub(rb"safe-launch\[[^\]]*\] [a-z]+: [^\n]*\n", b"", data)
            return hashlib.sha256(data).hexdigest(), len(data)

        self.assertEqual(digest(sl_out), digest(direct_out))
        self.assertEqual(digest(sl_err, True), digest(direct_err))
        self.assertEqual(digest(direct_out)[1], n)
        self.assertNotEqual(digest(direct_out)[0], digest(direct_err)[0])
        st = self.status()
        self.assertEqual(st["output_bytes"], {"stdout": n, "stderr": n})
        # The tails in the run directory are the streams' real last lines.
        with open(direct_out, "rb") as f:
            f.seek(-4096, 2)
            last = f.read().decode().splitlines()[-1]
        with open(os.path.join(self.run_dir(), "stdout.tail")) as f:
            self.assertEqual(f.read().splitlines()[-1], last)

    def test_a_slow_reader_of_our_stdout_loses_nothing(self):
        n = 8 * 1024 * 1024
        expected = subprocess.run([CHILD, "write", str(n)], capture_output=True).stdout
        reader = ("import sys,time,hashlib\nh=hashlib.sha256();t=0\n"
                  "while True:\n b=sys.stdin.buffer.read(65536)\n if not b: break\n"
                  " h.update(b);t+=len(b);time.sleep(0.002)\nprint(h.hexdigest(),t)\n")
        sl = subprocess.Popen([SL, "--no-preflight", "--run-dir", self.run_dir(), "--", CHILD,
                               "write", str(n)], stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL)
        out = subprocess.run([PYTHON, "-c", reader], stdin=sl.stdout, capture_output=True,
                             timeout=120).stdout.decode().split()
        sl.stdout.close()
        self.assertEqual(sl.wait(timeout=30), 0)
        self.assertEqual(out, [hashlib.sha256(expected).hexdigest(), str(n)])

    def test_large_output_through_a_pipe_is_byte_exact_by_tee_and_by_the_copy_fallback(self):
        # Our stdout a pipe: the tee path, and SAFE_LAUNCH_OUTPUT_COPY=1's read/write pump (the
        # path a terminal gets). 24 MiB per stream ends in a secret line: the output passes it
        # through unchanged, the tails in the run directory end on it redacted, on line bounds.
        n = 24 * 1024 * 1024
        bearer = "tok" + uuid.uuid4().hex
        script = (f'"{CHILD}" write {n} both; echo; echo "Authorization: Bearer {bearer}"; '
                  f'echo >&2; echo "Authorization: Bearer {bearer}" >&2')
        direct = subprocess.run(["/bin/sh", "-c", script], capture_output=True, timeout=120)
        self.assertEqual(direct.returncode, 0)
        for name, env in (("tee", {}), ("copy", {"SAFE_LAUNCH_OUTPUT_COPY": "1"})):
            with self.subTest(path=name):
                d = self.run_dir(name)
                r = subprocess.run([SL, "--no-preflight", "--run-dir", d, "--", "/bin/sh", "-c",
                                    script], capture_output=True, timeout=120,
                                   env=dict(os.environ, **env))
                self.assertEqual(r.returncode, 0, r.stderr[-2000:])
                self.assertEqual(hashlib.sha256(r.stdout).hexdigest(),
                                 hashlib.sha256(direct.stdout).hexdigest())
                err = re.sub(rb"safe-launch\[[^\]]*\] [a-z]+: [^\n]*\n", b"", r.stderr)
                self.assertEqual(hashlib.sha256(err).hexdigest(),
                                 hashlib.sha256(direct.stderr).hexdigest())
                self.assertEqual(self.status(d)["output_bytes"],
                                 {"stdout": len(direct.stdout), "stderr": len(direct.stderr)})
                for stream, data in (("stdout", direct.stdout), ("stderr", direct.stderr)):
                    with open(os.path.join(d, stream + ".tail"), "rb") as f:
                        tail = f.read()
                    self.assertNotIn(bearer.encode(), tail)
                    lines = tail.splitlines()
                    self.assertEqual(lines[-1], b"Authorization: Bearer <redacted>")
                    # Every other tail line is a whole line of the stream (the ring's first,
                    # partial line is dropped): it sits between two line ends of the output.
                    end = data[-(4 << 20):]  # the ring holds the last MiB
                    for line in lines[:-1]:
                        self.assertIn(b"\n" + line + b"\n", end)

    def test_the_hang_scanner_sees_the_same_lines_with_either_scan_kernel(self):
        # SAFE_LAUNCH_SCAN: unset or auto (the vector kernel where the CPU has AVX-512 VBMI),
        # scalar (the Wu-Manber scan); a bad value is named on stderr and taken as auto. A catalog
        # line inside 7 MB of healthy lines is the last event either way, the lines all counted.
        line = ("gpu1:1:1 [0] transport/net_ib.cc:93 NCCL WARN NET/IB : Got completion from peer "
                "10.0.0.2<1234> with status=12 opcode=0 len=0 vendor err 129 (Send)")
        script = (f'yes "iter 7: loss 1.5, time: 1.2ms" | head -n 200000; echo "{line}"; '
                  f'yes "gpu0:1:1 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC" | '
                  f'head -n 5000')
        for value in (None, "auto", "scalar", "bogus"):
            with self.subTest(scan=value):
                env = dict(os.environ)
                env.pop("SAFE_LAUNCH_SCAN", None)
                if value is not None:
                    env["SAFE_LAUNCH_SCAN"] = value
                d = self.run_dir(str(value))
                r = subprocess.run([SL, "--no-preflight", "--run-dir", d, "--", "/bin/sh", "-c",
                                    script], capture_output=True, timeout=120, env=env)
                self.assertEqual(r.returncode, 0, r.stderr[-2000:])
                self.assertEqual(len(r.stdout.splitlines()), 205001)
                warned = b"SAFE_LAUNCH_SCAN=bogus is not 'scalar' or 'auto'" in r.stderr
                self.assertEqual(warned, value == "bogus", r.stderr[-2000:])
                with open(os.path.join(d, "live.json")) as f:
                    live = json.load(f)
                self.assertEqual(live["last_event"]["signature"], "nccl.ib_status_retry_exceeded")
                self.assertEqual(live["last_event"]["line"], line)
                self.assertEqual(live["lines"]["stdout"], 205001)

    def test_our_stdout_pipe_is_grown_so_that_one_tee_moves_a_whole_chunk(self):
        # tee(2) moves at most what our pipe has room for; at the default 64 KiB, 16 tee + read
        # pairs per MiB (bench/supervise.sh, doc/manual.md "Output path and reader cost").
        with open("/proc/sys/fs/pipe-max-size") as f:
            want = min(1 << 20, int(f.read()))
        r, w = os.pipe()
        try:
            self.assertLess(fcntl.fcntl(r, F_GETPIPE_SZ), want)
            rc = subprocess.run([SL, "--no-preflight", "--run-dir", self.run_dir(), "--", "true"],
                                stdout=w, stderr=subprocess.DEVNULL, timeout=60).returncode
            self.assertEqual(rc, 0)
            self.assertEqual(fcntl.fcntl(r, F_GETPIPE_SZ), want)
        finally:
            os.close(r)
            os.close(w)

    # ---- run directory, status.json, preflight ------------------------------------------------

    def test_default_run_dir_is_under_slurm_submit_dir_per_job_and_host(self):
        env = dict(os.environ, SLURM_SUBMIT_DIR=self.tmp.name, SLURM_JOB_ID="4242",
                   SLURM_STEP_ID="0")
        r = subprocess.run([SL, "--no-preflight", "--", CHILD, "replay", "/etc/hostname"],
                           capture_output=True, env=env, timeout=30)
        self.assertEqual(r.returncode, 0, r.stderr)
        dirs = glob.glob(os.path.join(self.tmp.name, "safe-launch-runs", "4242.0", "*"))
        self.assertEqual(len(dirs), 1, dirs)
        st = self.status(dirs[0])
        self.assertEqual(st["command"], [CHILD, "replay", "/etc/hostname"])
        self.assertEqual(st["state"], "finished")
        self.assertEqual(st["preflight"]["verdict"], "skipped")
        for key in ("started_at", "ended_at", "duration_s", "host", "job_pid", "exit_status"):
            self.assertIn(key, st)
        self.assertTrue(os.path.exists(os.path.join(dirs[0], "env-plan.json")))
        # A second step of the same job on the same host gets its own directory.
        r = subprocess.run([SL, "--no-preflight", "--", "true"], capture_output=True, env=env)
        self.assertEqual(r.returncode, 0)
        self.assertEqual(len(glob.glob(os.path.join(self.tmp.name, "safe-launch-runs", "4242.0",
                                                    "*"))), 2)

    def test_run_dir_is_private_and_holds_no_secret_from_argv_env_or_output(self):
        key = "K-" + uuid.uuid4().hex
        pw = "pw-" + uuid.uuid4().hex
        bearer = "tok" + uuid.uuid4().hex
        env_secret = "hf_" + uuid.uuid4().hex + "abcdef"
        script = ('echo "args: $1 $2 $3"; echo "env: $HF_TOKEN"; '
                  f'echo "Authorization: Bearer {bearer}" >&2')
        r = self.run_sl(["/bin/sh", "-c", script, "sh", "--api-key", key, f"--password={pw}"],
                        env=dict(os.environ, HF_TOKEN=env_secret))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn(key.encode(), r.stdout)  # the job's own output passes through unchanged
        d = self.run_dir()
        self.assertEqual(os.stat(d).st_mode & 0o777, 0o700)
        names = sorted(os.listdir(d))
        for n in ("status.json", "stdout.tail", "stderr.tail", "env-plan.json"):
            self.assertIn(n, names)
        for n in names:
            p = os.path.join(d, n)
            if os.path.isfile(p):
                self.assertEqual(os.stat(p).st_mode & 0o777, 0o600, n)
            with open(p, "rb") as f:
                data = f.read()
            for s in (key, pw, bearer, env_secret):
                self.assertNotIn(s.encode(), data, n)
        st = self.status()
        self.assertEqual(st["command"][-3:], ["--api-key", "<redacted>", "--password=<redacted>"])
        with open(os.path.join(d, "stderr.tail")) as f:
            self.assertIn("Authorization: Bearer <redacted>", f.read())
        # A job that never starts (failed preflight) leaves the same private, redacted status.
        fixture = os.path.join(SRC, "tests", "fixtures", "ib-port-down")
        d2 = self.run_dir("not-started")
        # --recipe default: the infiniband recipe would leave the dead port out of NCCL_IB_HCA
        # and the preflight (judging the job's environment) would pass.
        r = subprocess.run([SL, "--sysroot", fixture, "--recipe", "default", "--run-dir", d2, "--",
                            "/bin/true", "--token", key], capture_output=True, timeout=60)
        self.assertEqual(r.returncode, 78, r.stderr.decode()[-2000:])
        self.assertEqual(os.stat(os.path.join(d2, "status.json")).st_mode & 0o777, 0o600)
        st = self.status(d2)
        self.assertEqual(st["state"], "not_started")
        self.assertEqual(st["command"], ["/bin/true", "--token", "<redacted>"])

    def test_a_run_without_a_warm_up_does_not_load_libcrypto(self):
        # Start-up cost (bench/startup.sh): only the warm-up signs store values, so libcrypto is
        # loaded when it first does, not by every run. The job reads its parent's (our) maps.
        r = self.run_sl(["/bin/sh", "-c", "cat /proc/$PPID/maps"])
        self.assertEqual(r.returncode, 0, r.stderr)
        maps = r.stdout.decode()
        self.assertIn(os.path.basename(SL), maps)  # the supervisor's own map, not another's
        self.assertIn("libstdc++", maps)
        self.assertNotIn("libcrypto", maps)

    def test_non_utf8_bytes_never_abort_and_the_job_status_passes_through(self):
        # Latin-1 in argv, in a recognised output line (failure bundle), in an environment value
        # and in the run directory's path: every JSON file is written (bytes replaced by U+FFFD),
        # nothing aborts (134), and the job's own status 3 comes back.
        env = dict(os.environ, NCCL_SOCKET_IFNAME=b"\xff".decode("latin-1"))
        env_b = {k.encode(): v.encode("latin-1") if k == "NCCL_SOCKET_IFNAME" else v.encode()
                 for k, v in env.items()}
        run_dir = os.path.join(self.tmp.name.encode(), b"run-\xe9")
        script = b"echo caf\xe9; printf 'NCCL WARN Call to ibv_reg_mr failed \\377\\n' >&2; exit 3"
        r = subprocess.run([SL.encode(), b"--no-preflight", b"--no-warmup", b"--run-dir", run_dir,
                            b"--", b"/bin/sh", b"-c", script, b"caf\xe9"],
                           capture_output=True, timeout=60, env=env_b)
        self.assertEqual(r.returncode, 3, r.stderr.decode("utf-8", "replace")[-2000:])
        self.assertIn(b"caf\xe9", r.stdout)  # the job's own bytes pass through untouched
        with open(os.path.join(run_dir, b"status.json"), "rb") as f:
            st = json.loads(f.read().decode("utf-8"))
        self.assertEqual(st["state"], "finished")
        self.assertEqual(st["exit_status"], 3)
        self.assertEqual(st["command"][-1], "caf\ufffd")
        bundles = [b for b in os.listdir(run_dir) if b.startswith(b"failure-") and
                   os.path.isdir(os.path.join(run_dir, b))]
        self.assertEqual(len(bundles), 1, os.listdir(run_dir))
        for name in (b"summary.json", b"manifest.json"):
            with open(os.path.join(run_dir, bundles[0], name), "rb") as f:
                json.loads(f.read().decode("utf-8"))
        # preflight --json with an invalid byte in an NCCL variable: valid JSON, no abort.
        r = subprocess.run([SL.encode(), b"preflight", b"--json", b"--only", b"env.nccl"],
                           capture_output=True, timeout=60, env=env_b)
        self.assertIn(r.returncode, (0, 1), r.stderr.decode("utf-8", "replace")[-2000:])
        json.loads(r.stdout.decode("utf-8"))

    def test_a_run_dir_prepared_by_another_user_or_as_a_link_is_not_used(self):
        victim = os.path.join(self.tmp.name, "victim-dir")
        os.mkdir(victim, 0o700)
        linked = self.run_dir("linked")
        os.symlink(victim, linked)
        r = self.run_sl(["/bin/true"], extra=())
        self.assertEqual(r.returncode, 0, r.stderr)
        r = subprocess.run([SL, "--no-preflight", "--run-dir", linked, "--", "/bin/true"],
                           capture_output=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(os.listdir(victim), [])
        self.assertTrue(os.path.isfile(os.path.join(linked + ".1", "status.json")))
        if os.geteuid() == 0:
            foreign = self.run_dir("foreign")
            os.mkdir(foreign, 0o700)
            os.chown(foreign, 65534, 65534)
            r = subprocess.run([SL, "--no-preflight", "--run-dir", foreign, "--", "/bin/true"],
                               capture_output=True, timeout=60)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertEqual(os.listdir(foreign), [])
            self.assertTrue(os.path.isfile(os.path.join(foreign + ".1", "status.json")))

    def test_unwritable_run_dir_is_a_usage_error_and_the_job_does_not_start(self):
        flag = os.path.join(self.tmp.name, "started")
        r = subprocess.run([SL, "--no-preflight", "--run-dir", "/proc/sl-cannot-be-here", "--",
                            "/bin/sh", "-c", f"touch {flag}"], capture_output=True, timeout=30)
        self.assertEqual(r.returncode, 2)
        self.assertIn(b"cannot create the run directory", r.stderr)
        self.assertIn(b"--run-dir", r.stderr)
        self.assertFalse(os.path.exists(flag))

    def test_failed_preflight_aborts_with_78_without_starting_the_job(self):
        fixture = os.path.join(SRC, "tests", "fixtures", "ib-port-down")
        self.assertTrue(os.path.isdir(fixture), fixture)
        flag = os.path.join(self.tmp.name, "started")
        # --recipe default: the plan leaves NCCL_IB_HCA unset, so NCCL (and the preflight, which
        # judges the job's environment) would use the dead port.
        r = subprocess.run([SL, "--sysroot", fixture, "--recipe", "default", "--run-dir",
                            self.run_dir(), "--", "/bin/sh", "-c", f"touch {flag}"],
                           capture_output=True, timeout=60)
        self.assertEqual(r.returncode, 78, r.stderr.decode()[-2000:])
        self.assertIn(b"the job was NOT started", r.stderr)
        self.assertFalse(os.path.exists(flag))
        st = self.status()
        self.assertEqual(st["state"], "not_started")
        self.assertEqual(st["preflight"]["verdict"], "fail")
        self.assertTrue(os.path.exists(os.path.join(self.run_dir(), "preflight.json")))
        # warn: the same node, the job starts.
        r = subprocess.run([SL, "--sysroot", fixture, "--recipe", "default",
                            "--on-preflight-fail=warn", "--run-dir", self.run_dir("warn"), "--",
                            "/bin/sh", "-c", f"touch {flag}"], capture_output=True, timeout=60)
        self.assertEqual(r.returncode, 0, r.stderr.decode()[-2000:])
        self.assertTrue(os.path.exists(flag))
        self.assertEqual(self.status(self.run_dir("warn"))["preflight"]["action"], "warn")

    def test_preflight_judges_the_environment_the_plan_gives_the_job(self):
        # ib-port-down: mlx5_3 is down. The infiniband recipe pins NCCL_IB_HCA to the live ports,
        # so the job will not use mlx5_3 and the preflight, run on the job's environment after
        # the plan, must not fail the node for it (judged on safe-launch's own environment,
        # where NCCL_IB_HCA is unset, it did: exit 78).
        fixture = os.path.join(SRC, "tests", "fixtures", "ib-port-down")
        flag = os.path.join(self.tmp.name, "started")
        env = {k: v for k, v in os.environ.items() if not k.startswith("NCCL_")}
        r = subprocess.run([SL, "--sysroot", fixture, "--run-dir", self.run_dir(), "--",
                            "/bin/sh", "-c", f"touch {flag}"], capture_output=True, timeout=60,
                           env=env)
        self.assertEqual(r.returncode, 0, r.stderr.decode()[-2000:])
        self.assertTrue(os.path.exists(flag))
        with open(os.path.join(self.run_dir(), "env-plan.json")) as f:
            self.assertIn("mlx5_0:1", json.dumps(json.load(f)))
        with open(os.path.join(self.run_dir(), "preflight.json")) as f:
            report = json.load(f)
        down = [x for x in report["findings"]
                if x["check"] == "ib.port.state" and x["entity"] == "mlx5_3:1"]
        self.assertEqual(len(down), 1, down)
        self.assertEqual(down[0]["outcome"], "skip")
        self.assertIn("not listed in NCCL_IB_HCA", down[0]["message"])

    # ---- torchrun -----------------------------------------------------------------------------

    def torchrun(self, *script_args):
        # Debian's torchrun (torch 1.13, Python 3.11) crashes with its default --redirects/--tee
        # and only knows --nproc_per_node.
        return [TORCHRUN, "--nproc_per_node=2", "-r", "1", "-t", "1", "--monitor_interval", "0.5",
                "--master_port", str(29500 + os.getpid() % 1000),
                os.path.join(SRC, "examples", "allreduce_gloo.py")] + list(script_args)

    def test_torchrun_gloo_allreduce_with_two_ranks_exits_0(self):
        if not os.path.exists(TORCHRUN):
            self.skipTest("no /usr/bin/torchrun")
        r = self.run_sl(self.torchrun(), timeout=180)
        self.assertEqual(r.returncode, 0, r.stderr.decode()[-3000:])
        out = r.stdout.decode() + r.stderr.decode()
        self.assertIn("all_reduce ok", out)
        self.assertEqual(self.status()["exit_status"], 0)

    def test_torchrun_with_a_rank_exiting_3_gives_torchruns_status(self):
        if not os.path.exists(TORCHRUN):
            self.skipTest("no /usr/bin/torchrun")
        cmd = self.torchrun("--fail-rank", "1", "--fail-code", "3")
        bare = subprocess.run(cmd, capture_output=True, timeout=180).returncode
        self.assertNotEqual(bare, 0)
        r = self.run_sl(cmd, timeout=180)
        self.assertEqual(r.returncode, bare, r.stderr.decode()[-3000:])
        self.assertIn(b"exiting with 3 on purpose", r.stdout + r.stderr)


if __name__ == "__main__":
    SL, CHILD, SRC = sys.argv[1], sys.argv[2], sys.argv[3]
    prog = unittest.main(argv=[sys.argv[0]] + sys.argv[4:], verbosity=2, exit=False)
    # ctest runs one test per -k pattern: a pattern that matches nothing (a renamed test) must
    # fail, where Python 3.11's unittest says "Ran 0 tests ... OK" and exits 0.
    sys.exit(0 if prog.result.wasSuccessful() and prog.result.testsRun > 0 else 1)

"""Integration tests of hang detection and post-mortem bundles: the real safe-launch binary, real
torchrun (Debian's torch 1.13, Gloo), the helper child replaying real torch 2.11 output.

usage: hang_test.py SAFE_LAUNCH SL_TEST_CHILD SOURCE_DIR [unittest args, e.g. -k stall]
"""
import glob
import hashlib
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import time
import unittest
import uuid

SL = CHILD = SRC = None
TORCHRUN = "/usr/bin/torchrun"
HANG_EXIT = 124
SECRET_TOKEN = "hf_PLANTEDtoken" + uuid.uuid4().hex[:10]
SECRET_KEY = "sk-PLANTEDkey" + uuid.uuid4().hex[:10]


def pids_with(mark):
    found = []
    for path in glob.glob("/proc/[0-9]*/cmdline"):
        try:
            with open(path, "rb") as f:
                if mark.encode() in f.read():
                    found.append(int(path.split("/")[2]))
        except OSError:
            pass
    return found


def wait_gone(mark, timeout=10.0):
    end = time.time() + timeout
    while time.time() < end:
        if not pids_with(mark):
            return True
        time.sleep(0.1)
    return False


def fixture(name):
    return os.path.join(SRC, "tests", "fixtures", "logs", name)


class HangTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="sl-hang-test-")
        self.mark = "--marker=slhang-" + uuid.uuid4().hex[:12]
        self.mounts = []

    def tearDown(self):
        for pid in pids_with(self.mark):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        for m in reversed(self.mounts):
            subprocess.run(["umount", "-l", m], capture_output=True)
        shutil.rmtree(self.tmp, ignore_errors=True)

    def run_dir(self):
        return os.path.join(self.tmp, "run")

    def sl(self, job, extra=(), timeout=120, env=None, run_dir=None):
        cmd = [SL, "--no-preflight", "--no-warmup", "--run-dir", run_dir or self.run_dir()]
        cmd += list(extra) + ["--"] + job
        return subprocess.run(cmd, capture_output=True, timeout=timeout, env=env)

    def bundles(self, prefix="hang-", run_dir=None):
        d = run_dir or self.run_dir()
        return sorted(p for p in glob.glob(os.path.join(d, prefix + "*")) if os.path.isdir(p))

    def one_bundle(self, r, prefix="hang-"):
        b = self.bundles(prefix)
        self.assertEqual(len(b), 1, f"bundles {b}\nstderr:\n{r.stderr.decode()[-4000:]}")
        self.assertTrue(os.path.exists(b[0] + ".tar.gz"))
        with open(os.path.join(b[0], "summary.json")) as f:
            summary = json.load(f)
        with open(os.path.join(b[0], "manifest.json")) as f:
            manifest = json.load(f)
        self.assertTrue(manifest["complete"])
        self.assertEqual(glob.glob(os.path.join(self.run_dir(), ".*.partial")), [])
        return b[0], summary, manifest

    def assert_nowhere(self, bundle, secrets):
        """No secret in any file of the bundle directory nor inside its tar.gz."""
        for root, _, files in os.walk(bundle):
            for name in files:
                with open(os.path.join(root, name), "rb") as f:
                    data = f.read()
                for s in secrets:
                    self.assertNotIn(s.encode(), data, os.path.join(root, name))
        with tarfile.open(bundle + ".tar.gz") as tar:
            members = tar.getmembers()
            self.assertTrue(members)
            for m in members:
                if m.isfile():
                    data = tar.extractfile(m).read()
                    for s in secrets:
                        self.assertNotIn(s.encode(), data, m.name)

    def assert_modes(self, bundle):
        for root, dirs, files in os.walk(bundle):
            self.assertEqual(os.stat(root).st_mode & 0o777, 0o700, root)
            for name in files:
                p = os.path.join(root, name)
                self.assertEqual(os.stat(p).st_mode & 0o777, 0o600, p)

    # ---- real torchrun ----------------------------------------------------------------------------

    def test_torchrun_gloo_rank_stopping_before_allreduce_is_caught_as_a_stall(self):
        if not os.path.exists(TORCHRUN):
            self.skipTest("no /usr/bin/torchrun")
        flag = os.path.join(self.tmp, "workers-started")
        env = dict(os.environ, HF_TOKEN=SECRET_TOKEN, STALL_FLAG=flag)
        torchrun = [TORCHRUN, "--nproc_per_node=2", "-r", "1", "-t", "1", "--monitor_interval",
                    "0.5", "--master_port", str(30500 + os.getpid() % 1000),
                    os.path.join(SRC, "tests", "integration", "hang", "stall_job.py"),
                    self.mark, "--api-key", SECRET_KEY]
        # torchrun needs seconds to import torch before any worker prints: a loop prints meanwhile
        # so that only the real stall (after the workers stop) is longer than 5 s.
        job = ["/bin/sh", "-c",
               f'(while [ ! -e "{flag}" ]; do echo "waiting for workers"; sleep 0.5; done) & '
               'exec "$@"', "sh"] + torchrun
        t0 = time.time()
        r = self.sl(job, ["--stall-timeout", "5", "--kill-grace", "10"], timeout=180, env=env)
        elapsed = time.time() - t0
        err = r.stderr.decode()
        self.assertEqual(r.returncode, HANG_EXIT, err[-4000:])
        self.assertTrue(wait_gone(self.mark), f"left over: {pids_with(self.mark)}")
        bundle, summary, manifest = self.one_bundle(r)
        self.assertEqual(summary["trigger"], "stall")
        self.assertEqual(summary["category"], "stall")
        self.assertGreaterEqual(summary["since_progress_s"], 5)
        self.assertIn("stall", summary["headline"])
        out = open(os.path.join(bundle, "output", "stdout.tail")).read()
        self.assertIn("rank 1 stops before all_reduce", out)
        self.assertIn("rank 0 enters all_reduce", out)
        # Both ranks were found by RANK in their environment and got a stack file.
        stacks = sorted(os.path.basename(p) for p in glob.glob(os.path.join(bundle, "stacks", "*")))
        self.assertTrue(any(s.startswith("rank_0_") for s in stacks), stacks)
        self.assertTrue(any(s.startswith("rank_1_") for s in stacks), stacks)
        ids = {c["id"]: c for c in manifest["collectors"]}
        for cid in ("flight_recorder", "stacks", "nccl_ras", "ib_counters", "kernel_log",
                    "nvidia_smi", "rank_output", "nccl_debug", "run_files", "host"):
            self.assertIn(cid, ids)
            self.assertIn(ids[cid]["status"], ("ok", "skipped", "error", "timeout"))
            self.assertIn("duration_s", ids[cid])
        self.assertEqual(ids["stacks"]["status"], "ok")
        self.assertEqual(ids["nccl_ras"]["status"], "error")  # torch 1.13/Gloo has no RAS
        status = json.load(open(os.path.join(self.run_dir(), "status.json")))
        self.assertIn("hang", json.dumps(status))
        # Secrets: the planted values were in the environment, argv, /proc cmdlines and output.
        host = open(os.path.join(bundle, "node", "host.json")).read()
        self.assertIn("<redacted>", host)
        self.assertIn("<redacted>", out)
        self.assert_nowhere(bundle, [SECRET_TOKEN, SECRET_KEY])
        self.assert_modes(bundle)
        self.assertLess(elapsed, 60, err[-2000:])

    def test_torchrun_gloo_straggler_in_sleep_is_named_by_its_python_stack(self):
        """torch 1.13/Gloo has no Flight Recorder: only the ranks' stacks say who held the job.
        Rank 1 sleeps before all_reduce while rank 0 waits in it; `diagnose RUN_ROOT` (and the
        post-mortem the supervisor runs there) must name rank 1 with its stack as evidence."""
        if not os.path.exists(TORCHRUN):
            self.skipTest("no /usr/bin/torchrun")
        flag = os.path.join(self.tmp, "workers-started")
        env = dict(os.environ, HF_TOKEN=SECRET_TOKEN, STALL_FLAG=flag)
        for k in [k for k in env if k.startswith(("SLURM_", "SAFE_LAUNCH_"))]:
            del env[k]
        torchrun = [TORCHRUN, "--nproc_per_node=2", "-r", "1", "-t", "1", "--monitor_interval",
                    "0.5", "--master_port", str(31500 + os.getpid() % 1000),
                    os.path.join(SRC, "tests", "integration", "hang", "stall_job.py"),
                    self.mark, "--api-key", SECRET_KEY]
        job = ["/bin/sh", "-c",
               f'(while [ ! -e "{flag}" ]; do echo "waiting for workers"; sleep 0.5; done) & '
               'exec "$@"', "sh"] + torchrun
        # The default run directory layout (<cwd>/safe-launch-runs/<job>/<host>) makes the
        # supervisor run `diagnose <job run root>` after the hang.
        cmd = [SL, "--no-preflight", "--no-warmup", "--stall-timeout", "5", "--kill-grace", "10",
               "--"] + job
        r = subprocess.run(cmd, capture_output=True, timeout=200, env=env, cwd=self.tmp)
        err = r.stderr.decode()
        self.assertEqual(r.returncode, HANG_EXIT, err[-4000:])
        self.assertTrue(wait_gone(self.mark), f"left over: {pids_with(self.mark)}")
        roots = glob.glob(os.path.join(self.tmp, "safe-launch-runs", "*"))
        self.assertEqual(len(roots), 1, roots)
        root = roots[0]
        bundles = [p for p in glob.glob(os.path.join(root, "*", "hang-*")) if os.path.isdir(p)]
        self.assertEqual(len(bundles), 1, err[-3000:])
        bundle = bundles[0]
        manifest = json.load(open(os.path.join(bundle, "manifest.json")))
        ids = {c["id"]: c for c in manifest["collectors"]}
        self.assertEqual(ids["python_stacks"]["status"], "ok", ids["python_stacks"])
        # Every rank wrote all its threads' stacks through faulthandler, and survived the signal
        # (the straggler's file is there: it was still alive to write it).
        py = {os.path.basename(p): open(p).read()
              for p in glob.glob(os.path.join(bundle, "stacks", "rank_*_pid_*.py.txt"))}
        self.assertEqual(sorted(n.split("_pid_")[0] for n in py), ["rank_0", "rank_1"], py)
        rank1 = next(t for n, t in py.items() if n.startswith("rank_1_"))
        self.assertIn("# safe-launch python stacks: pid=", rank1)
        with open(os.path.join(SRC, "tests", "integration", "hang", "stall_job.py")) as f:
            sleep_line = 1 + next(i for i, l in enumerate(f) if "time.sleep(3600)" in l)
        self.assertIn(f'stall_job.py", line {sleep_line} in <module>', rank1)
        rank0 = next(t for n, t in py.items() if n.startswith("rank_0_"))
        self.assertIn("in all_reduce", rank0)
        # /proc wchan and stack are kept as well.
        proc = open(glob.glob(os.path.join(bundle, "stacks", "rank_1_pid_*[0-9].txt"))[0]).read()
        self.assertIn("wchan: ", proc)
        self.assert_nowhere(bundle, [SECRET_TOKEN, SECRET_KEY])
        plan = json.load(open(os.path.join(os.path.dirname(bundle), "env-plan.json")))
        names = {e["name"]: e for e in plan["entries"]}
        self.assertIn("PYTHONPATH", names)
        self.assertTrue(names["PYTHONPATH"]["value"].endswith("share/safe-launch/python"))

        def check(d, where):
            top = d["causes"][0]
            self.assertEqual(top["category"], "straggler_or_slow_rank", json.dumps(d)[:3000])
            self.assertEqual(top["entity"]["rank"], "1", where)
            self.assertIn("stacks:stacks.main_thread_elsewhere", top["rules"], where)
            texts = [e["text"] for e in top["evidence"]]
            self.assertTrue(any("stall_job.py" in t and f"line {sleep_line}" in t for t in texts),
                            texts)
            self.assertTrue(any(e["file"].endswith(".py.txt") for e in top["evidence"]), where)

        # The post-mortem the supervisor ran in the run root.
        check(json.load(open(os.path.join(root, "diagnosis.json"))), "post-mortem")
        d = subprocess.run([SL, "diagnose", "--json", "--no-write", root], capture_output=True,
                           timeout=60)
        self.assertEqual(d.returncode, 0, d.stderr.decode())
        check(json.loads(d.stdout), "diagnose RUN_ROOT")

    def py_job(self, body, env):
        """A one-rank Python job (RANK set) that prints once and then stays silent."""
        script = os.path.join(self.tmp, "job.py")
        with open(script, "w") as f:
            f.write(body)
        return ["/usr/bin/python3", script, self.mark], dict(env, RANK="0", LOCAL_RANK="0")

    def test_py_spy_on_path_is_used_and_the_jobs_own_sitecustomize_still_runs(self):
        fake = os.path.join(self.tmp, "bin")
        own = os.path.join(self.tmp, "own-site")
        os.makedirs(fake)
        os.makedirs(own)
        # A stand-in for py-spy (not installable here): prints a dump in py-spy's format.
        with open(os.path.join(fake, "py-spy"), "w") as f:
            f.write('#!/bin/sh\necho "Process $4: python3 job.py"\n'
                    'echo "Thread $4 (idle): \\"MainThread\\""\n'
                    'echo "    clock_nanosleep (libc.so.6)"\necho "    <module> (job.py:3)"\n')
        os.chmod(os.path.join(fake, "py-spy"), 0o755)
        with open(os.path.join(own, "sitecustomize.py"), "w") as f:
            f.write('print("the job\'s own sitecustomize ran", flush=True)\n')
        env = dict(os.environ, PATH=fake + ":" + os.environ["PATH"], PYTHONPATH=own)
        job, env = self.py_job("import time\nprint('started', flush=True)\ntime.sleep(300)\n",
                               env)
        r = self.sl(job, ["--stall-timeout", "3", "--kill-grace", "2"], env=env)
        self.assertEqual(r.returncode, HANG_EXIT, r.stderr.decode()[-3000:])
        bundle, summary, manifest = self.one_bundle(r)
        ids = {c["id"]: c for c in manifest["collectors"]}
        self.assertEqual(ids["stacks"]["details"]["method"], "py-spy")
        self.assertEqual(ids["stacks"]["details"]["py_spy"], os.path.join(fake, "py-spy"))
        txt = [p for p in glob.glob(os.path.join(bundle, "stacks", "rank_0_pid_*.txt"))
               if not p.endswith(".py.txt")]
        self.assertEqual(len(txt), 1)
        self.assertIn('"MainThread"', open(txt[0]).read())
        # The job's own sitecustomize was imported after ours, and ours registered.
        out = open(os.path.join(bundle, "output", "stdout.tail")).read()
        self.assertIn("the job's own sitecustomize ran", out)
        self.assertEqual(ids["python_stacks"]["status"], "ok", ids["python_stacks"])
        py = glob.glob(os.path.join(bundle, "stacks", "rank_0_pid_*.py.txt"))
        self.assertEqual(len(py), 1)
        self.assertIn('line 3 in <module>', open(py[0]).read())
        plan = json.load(open(os.path.join(self.run_dir(), "env-plan.json")))
        pp = next(e for e in plan["entries"] if e["name"] == "PYTHONPATH")["value"]
        self.assertTrue(pp.endswith(":" + own), pp)

    def test_python_stacks_opt_out_by_flag_or_variable_and_unregistered_ranks_are_not_signalled(
            self):
        for extra, var in ((["--no-python-stacks"], None), ([], "0")):
            env = dict(os.environ)
            env.pop("PYTHONPATH", None)
            if var is not None:
                env["SAFE_LAUNCH_PYTHON_STACKS"] = var
            # A rank that is not Python: it must not get the real-time signal (it would die).
            job = ["/bin/sh", "-c", 'echo started; exec sleep 300', "sh", self.mark]
            env.update(RANK="0", LOCAL_RANK="0")
            run_dir = os.path.join(self.tmp, "run-" + ("flag" if var is None else "var"))
            r = self.sl(job, ["--stall-timeout", "3", "--kill-grace", "2"] + extra, env=env,
                        run_dir=run_dir)
            self.assertEqual(r.returncode, HANG_EXIT, r.stderr.decode()[-3000:])
            plan = json.load(open(os.path.join(run_dir, "env-plan.json")))
            names = [e["name"] for e in plan["entries"]]
            self.assertNotIn("PYTHONPATH", names)
            self.assertNotIn("SAFE_LAUNCH_PYSTACKS_SIGNAL", names)
            b = self.bundles(run_dir=run_dir)
            self.assertEqual(len(b), 1)
            manifest = json.load(open(os.path.join(b[0], "manifest.json")))
            ids = {c["id"]: c for c in manifest["collectors"]}
            self.assertEqual(ids["python_stacks"]["status"], "skipped", ids["python_stacks"])
            self.assertEqual(ids["python_stacks"]["details"]["ranks"][0]["status"], "not_enabled")
        # With stacks on, a rank that never registered (not Python) is left alone: the job
        # ends by safe-launch's stop (124), not by the real-time signal (128+41).
        env = dict(os.environ, RANK="0", LOCAL_RANK="0")
        job = ["/bin/sh", "-c", 'echo started; exec sleep 300', "sh", self.mark]
        r = self.sl(job, ["--stall-timeout", "3", "--kill-grace", "2"], env=env)
        self.assertEqual(r.returncode, HANG_EXIT, r.stderr.decode()[-3000:])
        bundle, summary, manifest = self.one_bundle(r)
        ids = {c["id"]: c for c in manifest["collectors"]}
        ranks = ids["python_stacks"]["details"]["ranks"]
        self.assertEqual(ranks[0]["status"], "not_signalled", ranks)
        self.assertIn("no registration file", ranks[0]["error"])

    # ---- replay of real torch 2.11 output --------------------------------------------------------

    def test_replayed_torch_2_11_watchdog_timeout_is_detected_from_its_first_line(self):
        # 300 ms per line: the watchdog line is line 3, the rest would take ~20 s more.
        job = [CHILD, self.mark, "replay", fixture("watchdog_timeout.torchrun.txt"), "300", "hang"]
        t0 = time.time()
        r = self.sl(job, ["--stall-timeout", "0", "--kill-grace", "5"])
        elapsed = time.time() - t0
        self.assertEqual(r.returncode, HANG_EXIT, r.stderr.decode()[-4000:])
        self.assertTrue(wait_gone(self.mark))
        bundle, summary, _ = self.one_bundle(r)
        self.assertEqual(summary["trigger"], "signature")
        self.assertEqual(summary["category"], "collective_timeout")
        self.assertEqual(summary["collective"]["seq"], 5)
        self.assertEqual(summary["collective"]["op"], "ALLREDUCE")
        self.assertEqual(summary["collective"]["timeout_ms"], 5000)
        self.assertEqual(summary["evidence"][0]["signature"], "torch.watchdog_timeout")
        # Detected from the first watchdog line: the capture happened long before the replay's end.
        out = open(os.path.join(bundle, "output", "stdout.tail")).read()
        self.assertIn("Watchdog caught collective operation timeout", out)
        self.assertNotIn("ChildFailedError", out)
        self.assertLess(elapsed, 15)
        md = open(os.path.join(bundle, "summary.md")).read()
        self.assertIn("SeqNum=5", md)
        self.assertIn("collective_timeout", r.stderr.decode())

    def test_flight_recorder_pipe_trigger_collects_dumps_and_survives_a_pipe_without_reader(self):
        job = ["/usr/bin/python3", os.path.join(SRC, "tests", "integration", "hang",
                                                "fake_fr_ranks.py"),
               fixture("watchdog_timeout.torchrun.txt"), self.mark]
        t0 = time.time()
        # The fake ranks play a torch >= 2.9 (new variable names, dump pipe); the plan follows the
        # torch this machine has (1.13, which reads neither), so name them as a user of a modern
        # torch would see them from the plan.
        env = dict(os.environ, TORCH_FR_DUMP_TEMP_FILE=self.run_dir() + "/fr_rank_",
                   TORCH_NCCL_DEBUG_INFO_PIPE_FILE=self.run_dir() + "/frpipe_")
        r = self.sl(job, ["--kill-grace", "3"], env=env)
        self.assertEqual(r.returncode, HANG_EXIT, r.stderr.decode()[-3000:])
        self.assertTrue(wait_gone(self.mark))
        bundle, summary, manifest = self.one_bundle(r)
        fr = {c["id"]: c for c in manifest["collectors"]}["flight_recorder"]
        pipes = {p["rank"]: p for p in fr["details"]["pipes"]}
        self.assertEqual(pipes[0]["status"], "triggered")
        self.assertEqual(pipes[1]["status"], "error")
        self.assertIn("ENXIO", pipes[1]["error"])
        with open(os.path.join(bundle, "fr", "fr_rank_0.pkl"), "rb") as f:
            self.assertTrue(f.read().startswith(b"FAKE-FR-DUMP rank 0"))
        self.assertEqual(fr["status"], "ok")
        self.assertLess(fr["duration_s"], 8.5)
        self.assertLess(time.time() - t0, 40)

    def test_capture_only_lets_the_job_run_on(self):
        job = [CHILD, self.mark, "replay", fixture("watchdog_timeout.torchrun.txt"), "20"]
        r = self.sl(job, ["--on-hang=capture-only"])
        self.assertEqual(r.returncode, 0, r.stderr.decode()[-3000:])
        # The job printed everything: it was not stopped.
        self.assertIn("ChildFailedError", r.stdout.decode())
        bundle, summary, _ = self.one_bundle(r)
        self.assertEqual(summary["collective"]["seq"], 5)

    def test_job_failing_on_its_own_gets_a_failure_bundle(self):
        r = self.sl([CHILD, self.mark, "exit", "3"])
        self.assertEqual(r.returncode, 3)
        bundle, summary, manifest = self.one_bundle(r, prefix="failure-")
        self.assertEqual(summary["trigger"], "job_failed")
        self.assertEqual(summary["exit_status"], 3)
        self.assertFalse(manifest["job_alive_at_capture"])
        self.assertEqual(self.bundles("hang-"), [])

    def test_heartbeat_file_keeps_a_silent_job_alive(self):
        # Touches the heartbeat for ~5 s without printing, then stops touching it.
        script = ('for i in 1 2 3 4 5 6 7 8 9 10; do touch "$SAFE_LAUNCH_HEARTBEAT"; sleep 0.5; '
                  'done; exec sleep 300')
        t0 = time.time()
        r = self.sl(["/bin/sh", "-c", script, self.mark], ["--stall-timeout", "3",
                                                           "--kill-grace", "2"])
        elapsed = time.time() - t0
        self.assertEqual(r.returncode, HANG_EXIT, r.stderr.decode()[-3000:])
        self.assertGreater(elapsed, 7.5)  # not stalled while the heartbeat was fresh
        _, summary, _ = self.one_bundle(r)
        self.assertEqual(summary["trigger"], "heartbeat")
        self.assertEqual(summary["stall_source"], "heartbeat")

    # ---- silence is the job's, not ours ---------------------------------------------------------

    def test_a_slow_consumer_of_our_stdout_is_not_taken_for_a_stalled_job(self):
        # `safe-launch ... | (sleep 6; md5sum)`: the job writes 8 MiB at once; our stdout blocks
        # for 6 s, so the pump cannot read and the job's writes block. Not a hang of the job.
        n = 8 * 1024 * 1024
        consumer = subprocess.Popen(["/bin/sh", "-c", "sleep 6; exec md5sum"],
                                    stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        r = subprocess.run([SL, "--no-preflight", "--no-warmup", "--run-dir", self.run_dir(),
                            "--stall-timeout", "2", "--", CHILD, self.mark, "write", str(n)],
                           stdout=consumer.stdin, stderr=subprocess.PIPE, timeout=120)
        consumer.stdin.close()
        digest = consumer.stdout.read().decode().split()[0]
        consumer.wait(timeout=60)
        expected = subprocess.run([CHILD, "write", str(n)], capture_output=True).stdout
        self.assertEqual(r.returncode, 0, r.stderr.decode()[-3000:])
        self.assertEqual(self.bundles(), [])
        self.assertEqual(digest, hashlib.md5(expected).hexdigest())

    def test_a_stopped_and_resumed_node_re_arms_the_stall_clock(self):
        # A paused VM stops safe-launch and the job alike; after the resume the job goes on
        # printing. The time nobody ran is nobody's silence.
        lines = os.path.join(self.tmp, "lines.txt")
        with open(lines, "w") as f:
            f.write("".join(f"step {i}\n" for i in range(40)))
        proc = subprocess.Popen([SL, "--no-preflight", "--no-warmup", "--run-dir", self.run_dir(),
                                 "--stall-timeout", "2", "--", CHILD, self.mark, "replay", lines,
                                 "200"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        end = time.time() + 10
        while not pids_with(self.mark) and time.time() < end:
            time.sleep(0.05)
        time.sleep(1.0)
        job = [p for p in pids_with(self.mark) if p != proc.pid]
        self.assertTrue(job)
        for p in job:
            os.kill(p, signal.SIGSTOP)
        os.kill(proc.pid, signal.SIGSTOP)
        time.sleep(4.0)  # twice the stall timeout
        os.kill(proc.pid, signal.SIGCONT)
        time.sleep(0.3)
        for p in job:
            os.kill(p, signal.SIGCONT)
        out, err = proc.communicate(timeout=60)
        self.assertEqual(proc.returncode, 0, err.decode()[-3000:])
        self.assertIn(b"step 39", out)
        self.assertEqual(self.bundles(), [])
        with open(os.path.join(self.run_dir(), "status.json")) as f:
            self.assertIn("re-armed", json.dumps(json.load(f)["events"]))

    # ---- capture when the node is out of processes -------------------------------------------

    def test_process_exhaustion_during_capture_degrades_collectors_and_still_stops(self):
        # RLIMIT_NPROC counts threads too, but not for root: run safe-launch as a uid of its own
        # with room for itself, its two pumps and the job's two processes, plus one spare.
        if os.geteuid() != 0:
            self.skipTest("needs root to switch to a uid of its own")
        uid = 40000 + os.getpid() % 20000
        os.chmod(self.tmp, 0o755)
        runs = os.path.join(self.tmp, "runs")
        os.mkdir(runs)
        os.chown(runs, uid, uid)
        run_dir = os.path.join(runs, "run")

        def limited():
            os.setgroups([])
            os.setgid(uid)
            os.setuid(uid)
            resource.setrlimit(resource.RLIMIT_NPROC, (6, 6))
        r = subprocess.run([SL, "--no-preflight", "--no-warmup", "--run-dir", run_dir,
                            "--stall-timeout", "1", "--kill-grace", "1", "--", CHILD, self.mark,
                            "setsid-grandchild"], preexec_fn=limited, capture_output=True,
                           timeout=120, cwd=self.tmp)
        self.assertEqual(r.returncode, HANG_EXIT, r.stderr.decode()[-3000:])
        self.assertTrue(wait_gone(self.mark, 5.0), pids_with(self.mark))
        bundles = self.bundles(run_dir=run_dir)
        self.assertEqual(len(bundles), 1, r.stderr.decode()[-3000:])
        with open(os.path.join(bundles[0], "manifest.json")) as f:
            manifest = json.load(f)
        degraded = [c["id"] for c in manifest["collectors"]
                    if "cannot start a thread" in c.get("error", "")]
        self.assertTrue(degraded, manifest["collectors"])
        with open(os.path.join(run_dir, "status.json")) as f:
            st = json.load(f)
        self.assertEqual(st["stop"]["requested_by"], "hang detector")
        self.assertEqual(len(st["swept_pids"]), 1)  # the setsid'd grandchild

    # ---- capture under a full / read-only run directory -----------------------------------------

    def mount_tmpfs(self, size):
        if os.geteuid() != 0:
            self.skipTest("needs root for a tmpfs")
        d = os.path.join(self.tmp, "mnt")
        os.makedirs(d, exist_ok=True)
        r = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", d],
                           capture_output=True)
        if r.returncode != 0:
            self.skipTest("cannot mount tmpfs: " + r.stderr.decode())
        self.mounts.append(d)
        return d

    def test_full_run_dir_during_capture_leaves_no_complete_bundle_and_still_stops(self):
        mnt = self.mount_tmpfs("256k")
        run = os.path.join(mnt, "run")
        # The job fills the run directory's file system, then shows a real watchdog timeout.
        script = (f'head -c 1M /dev/zero > "{run}/filler" 2>/dev/null; '
                  f'cat "{fixture("watchdog_timeout.torchrun.txt")}"; exec sleep 300')
        r = self.sl(["/bin/sh", "-c", script, self.mark], ["--kill-grace", "2"], run_dir=run)
        err = r.stderr.decode()
        self.assertEqual(r.returncode, HANG_EXIT, err[-3000:])
        self.assertTrue(wait_gone(self.mark))
        self.assertEqual(self.bundles(run_dir=run), [])
        self.assertEqual(glob.glob(os.path.join(run, "hang-*.tar.gz")), [])
        self.assertIn("bundle INCOMPLETE", err)
        # The run directory is full: the manifest saying what failed went to $TMPDIR instead.
        import re
        m = re.search(r"manifest: (\S+\.json)", err)
        self.assertIsNotNone(m, err[-3000:])
        with open(m.group(1)) as f:
            manifest = json.load(f)
        os.unlink(m.group(1))
        self.assertFalse(manifest["complete"])
        self.assertTrue(manifest["write_errors"])
        self.assertIn("No space left on device", manifest["write_errors"][0])
        self.assertTrue(manifest["collectors"])

    def test_incomplete_manifest_fallback_in_tmpdir_has_an_unpredictable_name_and_follows_no_link(
            self):
        mnt = self.mount_tmpfs("256k")
        run = os.path.join(mnt, "run")
        tmpdir = os.path.join(self.tmp, "shared-tmp")
        os.makedirs(tmpdir)
        victim = os.path.join(self.tmp, "victim")
        with open(victim, "w") as f:
            f.write("precious")
        # Another user plants links at every name the old fallback could pick in the next minute.
        import socket
        now = time.time()
        hosts = {socket.gethostname(), socket.gethostname().split(".")[0]}
        for dt in range(-2, 60):
            stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(now + dt))
            for h in hosts:
                os.symlink(victim, os.path.join(tmpdir, f"hang-{h}-{stamp}.manifest.json"))
        script = (f'head -c 1M /dev/zero > "{run}/filler" 2>/dev/null; '
                  f'cat "{fixture("watchdog_timeout.torchrun.txt")}"; exec sleep 300')
        r = self.sl(["/bin/sh", "-c", script, self.mark], ["--kill-grace", "2"], run_dir=run,
                    env=dict(os.environ, TMPDIR=tmpdir))
        err = r.stderr.decode()
        self.assertEqual(r.returncode, HANG_EXIT, err[-3000:])
        self.assertTrue(wait_gone(self.mark))
        with open(victim) as f:
            self.assertEqual(f.read(), "precious")
        import re
        m = re.search(r"manifest: (\S+\.json)", err)
        self.assertIsNotNone(m, err[-3000:])
        path = m.group(1)
        self.assertEqual(os.path.dirname(path), tmpdir)
        self.assertFalse(os.path.islink(path))
        self.assertRegex(os.path.basename(path), r"^hang-.*\.manifest\.[0-9a-f]{16}\.json$")
        self.assertEqual(os.stat(path).st_mode & 0o777, 0o600)
        with open(path) as f:
            self.assertFalse(json.load(f)["complete"])

    def test_read_only_run_dir_during_capture_still_stops_the_job(self):
        mnt = self.mount_tmpfs("4m")
        run = os.path.join(mnt, "run")
        ready = os.path.join(self.tmp, "ready")
        go = os.path.join(self.tmp, "go")
        script = (f'echo ready; touch "{ready}"; while [ ! -e "{go}" ]; do sleep 0.1; done; '
                  f'cat "{fixture("watchdog_timeout.torchrun.txt")}"; exec sleep 300')
        p = subprocess.Popen([SL, "--no-preflight", "--no-warmup", "--run-dir", run,
                              "--kill-grace", "2", "--", "/bin/sh", "-c", script, self.mark],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        end = time.time() + 30
        while not os.path.exists(ready) and time.time() < end:
            time.sleep(0.05)
        subprocess.run(["mount", "-o", "remount,ro", mnt], check=True)
        open(go, "w").close()
        out, err = p.communicate(timeout=120)
        err = err.decode()
        self.assertEqual(p.returncode, HANG_EXIT, err[-3000:])
        self.assertTrue(wait_gone(self.mark))
        self.assertIn("bundle not written", err)
        self.assertIn("collective_timeout", err)  # the verdict still reaches the log
        self.assertEqual(self.bundles(run_dir=run), [])

    def test_bad_on_hang_value_is_a_usage_error(self):
        r = self.sl([CHILD, self.mark, "exit", "0"], ["--on-hang=explode"])
        self.assertEqual(r.returncode, 2)
        self.assertIn("capture-and-stop", r.stderr.decode())


if __name__ == "__main__":
    SL, CHILD, SRC = sys.argv[1], sys.argv[2], sys.argv[3]
    prog = unittest.main(argv=[sys.argv[0]] + sys.argv[4:], verbosity=2, exit=False)
    # ctest runs one test per -k pattern: a pattern that matches nothing (a renamed test) must
    # fail, where Python 3.11's unittest says "Ran 0 tests ... OK" and exits 0.
    sys.exit(0 if prog.result.wasSuccessful() and prog.result.testsRun > 0 else 1)

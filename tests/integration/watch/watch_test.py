"""`safe-launch watch` for real: two `safe-launch run` on this host as nodes A and B of one job
(their run directories in one job run root, coordinating through its .events/ as nodes do on a
shared file system), watched through a real pseudo-terminal: tmux runs the screen, capture-pane
reads it.

usage: watch_test.py SAFE_LAUNCH SOURCE_DIR [unittest args, e.g. -k hang]
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

SL = SRC = None
HERE = os.path.dirname(os.path.abspath(__file__))

# The documented fields of a snapshot (doc/manual.md, "Watching a job"): name -> allowed types.
NUM, STR, NONE = (int, float), (str,), (type(None),)
TOP = {"schema": STR, "root": STR, "now_unix": NUM, "state": STR, "nodes": (int,),
       "slowest": STR, "stalest": STR, "stale_after_s": NUM, "diagnosis": STR, "events": (list,),
       "problems": (list,), "rows": (list,)}
ROW = {"node": STR, "tasks": (int,), "phase": STR, "in_phase_s": NUM + NONE,
       "output_age_s": NUM + NONE, "heartbeat_age_s": NUM + NONE,
       "supervisor_age_s": NUM + NONE, "last_event": STR, "exit_status": (int,) + NONE,
       "verdict": STR, "bundle": STR, "stale": (bool,), "posted_hang": (bool,),
       "problems": (list,)}
EVENT = {"kind": STR, "node": STR, "time_unix": NUM, "time_utc": STR, "trigger": STR,
         "headline": STR, "file": STR}
PHASES = {"preflight", "warm-up", "running", "stopping", "capturing", "ended", "unknown"}
STATES = {"starting", "running", "hang", "failed", "ended", "empty", "unreadable"}


def validate(snap):
    """The snapshot against the documented schema: every field, its type, no other field."""
    def check(obj, spec, where):
        assert set(obj) == set(spec), f"{where}: fields {sorted(obj)} != {sorted(spec)}"
        for k, types in spec.items():
            assert isinstance(obj[k], types) and not (types == (int,) and isinstance(obj[k], bool)), \
                f"{where}.{k}: {obj[k]!r}"
    check(snap, TOP, "snapshot")
    assert snap["schema"] == "safe-launch.watch/1"
    assert snap["state"] in STATES, snap["state"]
    for r in snap["rows"]:
        check(r, ROW, "row")
        assert r["phase"] in PHASES
    for e in snap["events"]:
        check(e, EVENT, "event")
        assert e["kind"] in ("hang", "failure")


class Screen:
    """`safe-launch watch ROOT` in a detached tmux session (a real pty), read with capture-pane."""

    def __init__(self, root):
        self.name = "slw" + uuid.uuid4().hex[:8]
        env = dict(os.environ, NO_COLOR="1")
        subprocess.run(["tmux", "-L", self.name, "new-session", "-d", "-s", self.name, "-x", "180",
                        "-y", "40", f"{SL} watch {root}; sleep 30"], check=True, env=env)

    def text(self):
        r = subprocess.run(["tmux", "-L", self.name, "capture-pane", "-p", "-t", self.name],
                           capture_output=True, text=True)
        return r.stdout

    def wait_for(self, pred, timeout, what):
        end = time.time() + timeout
        while time.time() < end:
            t = self.text()
            if pred(t):
                return t
            time.sleep(0.1)
        raise AssertionError(f"screen never showed {what} within {timeout} s:\n{self.text()}")

    def keys(self, *keys):
        subprocess.run(["tmux", "-L", self.name, "send-keys", "-t", self.name] + list(keys))

    def close(self):
        subprocess.run(["tmux", "-L", self.name, "kill-server"], capture_output=True)


def row(text, node):
    """The screen line of `node`'s row ('' when not shown)."""
    for line in text.splitlines():
        fields = line[2:].split()
        if fields and fields[0] == node:
            return line
    return ""


class WatchTest(unittest.TestCase):
    def setUp(self):
        if not shutil.which("tmux"):
            self.skipTest("tmux is not installed")
        self.tmp = tempfile.mkdtemp(prefix="sl-watch-test-")
        self.root = os.path.join(self.tmp, "safe-launch-runs", "job1")
        os.makedirs(self.root)
        self.procs, self.screens = [], []

    def tearDown(self):
        for s in self.screens:
            s.close()
        for p in self.procs:
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def start(self, name, job, extra=()):
        out = open(os.path.join(self.tmp, f"{name}.out"), "wb")
        cmd = [SL, "run", "--no-preflight", "--no-warmup", "--node-name", name, "--run-dir",
               os.path.join(self.root, name), "--coordinate", "on", "--kill-grace", "3",
               "--post-mortem-wait", "0"] + list(extra) + ["--"] + job
        p = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        self.procs.append(p)
        return p

    def screen(self):
        s = Screen(self.root)
        self.screens.append(s)
        return s

    def two_nodes(self, busy_s):
        fixture = os.path.join(SRC, "tests", "fixtures", "logs", "watchdog_timeout.torchrun.txt")
        b = self.start("B", [sys.executable, os.path.join(SRC, "tests/integration/coord/busy_job.py"),
                             "300"], ["--stall-timeout", "300"])
        a = self.start("A", [sys.executable, os.path.join(HERE, "hang_after.py"), str(busy_s),
                             fixture], ["--stall-timeout", "300"])
        return a, b

    def test_the_screen_shows_both_nodes_running_then_the_hang_within_2s_then_the_verdict(self):
        a, b = self.two_nodes(busy_s=6)
        screen = self.screen()
        screen.wait_for(lambda t: "running" in row(t, "A") and "running" in row(t, "B"), 10,
                        "both nodes running")
        # The hang: A's event file appears; the screen names it within 2 s.
        end = time.time() + 30
        while time.time() < end and not glob.glob(os.path.join(self.root, ".events", "hang-A-*")):
            time.sleep(0.05)
        seen_event = time.time()
        self.assertTrue(glob.glob(os.path.join(self.root, ".events", "hang-A-*")), "A posted no hang")
        t = screen.wait_for(lambda t: "hang on A" in t and row(t, "A").startswith("!"), 2.0,
                            "the hang on A marked")
        latency = time.time() - seen_event
        print(f"hang on A shown {latency:.2f} s after its event file appeared", file=sys.stderr)
        self.assertIn("posted hang", row(t, "A"))
        # Worst first: A's row comes before B's.
        self.assertLess(t.index(row(t, "A")), t.index(row(t, "B")))
        # The verdict, once both nodes have ended (both stopped with 124).
        self.assertEqual(a.wait(timeout=60), 124)
        self.assertEqual(b.wait(timeout=60), 124)
        t = screen.wait_for(lambda t: "ended" in row(t, "A") and "ended" in row(t, "B") and
                            "collective_timeout" in row(t, "A"), 5, "both verdicts")
        self.assertIn(" 124 ", row(t, "A"))
        self.assertIn(" 124 ", row(t, "B"))
        # Enter on the first row: A's last output lines and its bundle summary.
        screen.keys("Enter")
        t = screen.wait_for(lambda t: "bundle: hang-A-" in t and "last output lines" in t, 3,
                            "A's detail")
        screen.keys("q")

    def test_a_json_snapshot_has_the_documented_fields(self):
        a, b = self.two_nodes(busy_s=2)
        time.sleep(1.5)
        running = json.loads(subprocess.run([SL, "watch", "--json", self.root], check=True,
                                            capture_output=True, text=True).stdout)
        validate(running)
        self.assertEqual(running["nodes"], 2)
        self.assertEqual({r["phase"] for r in running["rows"]}, {"running"})
        a.wait(timeout=60)
        b.wait(timeout=60)
        ended = json.loads(subprocess.run([SL, "watch", "--json", self.root], check=True,
                                          capture_output=True, text=True).stdout)
        validate(ended)
        self.assertEqual(ended["state"], "hang")
        self.assertEqual([e["node"] for e in ended["events"] if e["kind"] == "hang"], ["A"])
        self.assertEqual({r["node"]: r["exit_status"] for r in ended["rows"]}, {"A": 124, "B": 124})
        # No terminal: one plain snapshot, the same rows.
        plain = subprocess.run([SL, "watch", self.root], check=True, capture_output=True,
                               text=True).stdout
        self.assertIn("hang on A", plain)
        self.assertNotIn("\x1b", plain)

    def test_a_hostile_run_root_is_shown_with_the_problems_named(self):
        r = self.root
        for d in ("fifo", "link", "latin1", "partial", "nodir"):
            os.makedirs(os.path.join(r, d))
        os.mkfifo(os.path.join(r, "fifo", "status.json"))
        os.mkfifo(os.path.join(r, "fifo", "live.json"))
        os.symlink("/etc/shadow", os.path.join(r, "link", "status.json"))
        with open(os.path.join(r, "latin1", "status.json"), "wb") as f:
            f.write(b'{"state": "running", "host": "caf\xe9\x1b[2J"}')
        with open(os.path.join(r, "partial", "status.json"), "w") as f:
            f.write('{"state": "runn')
        os.rmdir(os.path.join(r, "nodir"))
        os.symlink("/etc", os.path.join(r, "nodir"))
        os.makedirs(os.path.join(r, ".events"))
        os.mkfifo(os.path.join(r, ".events", "hang-X-0000000000000000.json"))
        with open(os.path.join(r, ".events", "hang-Y-1111111111111111.json"), "wb") as f:
            f.write(b"\xff\xfe not json")
        t0 = time.time()
        p = subprocess.run([SL, "watch", "--once", r], capture_output=True, timeout=10)
        self.assertLess(time.time() - t0, 5, "a FIFO held the reader up")
        self.assertEqual(p.returncode, 0, p.stderr)
        out = p.stdout.decode()
        self.assertNotIn("\x1b", out)
        for want in ["status.json: a FIFO, not read", "status.json: a symbolic link, not followed",
                     "status.json: not a JSON object (partial or corrupt file)",
                     "run directory is a symbolic link, not followed",
                     ".events/hang-X-0000000000000000.json: a FIFO, not read",
                     ".events/hang-Y-1111111111111111.json"]:
            self.assertIn(want, out)
        snap = json.loads(subprocess.run([SL, "watch", "--json", r], capture_output=True,
                                         timeout=10).stdout)
        validate(snap)
        # The live screen shows the same, and keeps running.
        screen = self.screen()
        screen.wait_for(lambda t: "a FIFO, not read" in t and "symbolic link" in t, 5,
                        "the problems on the screen")
        missing = subprocess.run([SL, "watch", "--once", os.path.join(self.tmp, "nope")],
                                 capture_output=True, text=True, timeout=10)
        self.assertEqual(missing.returncode, 2)
        self.assertIn("No such file or directory", missing.stdout)


if __name__ == "__main__":
    SL, SRC = sys.argv[1], sys.argv[2]
    unittest.main(argv=[sys.argv[0]] + sys.argv[3:], verbosity=2)

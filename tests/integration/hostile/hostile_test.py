#!/usr/bin/env python3
"""Inputs built to hurt safe-launch, through the real binary: planted FIFOs and links, /dev/zero,
memo-bomb pickles, numbers out of range, bytes that are not UTF-8 in every field, concurrent
history appends. Each case must finish quickly and answer; never hang, abort or exit 70.

usage: hostile_test.py SAFE_LAUNCH FIXTURES CASE
"""
import json
import os
import struct
import subprocess
import sys
import tempfile
import time

SL, FX, CASE = sys.argv[1], sys.argv[2], sys.argv[3]
TMP = tempfile.mkdtemp(prefix="sl-hostile-")
NVS = os.path.join(FX, "nccl_tests", "all_reduce_perf_4gpu_nvswitch_a100_good_llm-insights.txt")


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def run(*args, timeout=30, cwd=None):
    t0 = time.time()
    try:
        p = subprocess.run([SL, *args], capture_output=True, timeout=timeout, cwd=cwd)
    except subprocess.TimeoutExpired:
        fail(f"{' '.join(args)}: still running after {timeout} s (a read that blocks?)")
    if p.returncode < 0 or p.returncode in (70, 134):
        fail(f"{' '.join(args)}: exit {p.returncode}\n{p.stderr.decode(errors='replace')[-2000:]}")
    return p.returncode, p.stdout, p.stderr, time.time() - t0


def as_json(out, what):
    try:
        return json.loads(out)
    except ValueError as e:
        fail(f"{what}: not JSON ({e}): {out[:300]!r}")


ENTRY = {"collective_seq_id": 1, "profiling_name": "nccl:all_reduce", "state": "completed",
         "process_group": ["0", "default_pg"], "input_sizes": [[4]], "input_dtypes": ["Float"],
         "output_sizes": [[4]], "output_dtypes": ["Float"], "frames": []}


def json_dump(path, entry=ENTRY):
    with open(path, "w") as f:
        json.dump({"version": "2.10", "entries": [entry], "pg_config": {}}, f)


def pickle_str(s):
    b = s.encode("utf-8", "surrogateescape")
    return b"X" + struct.pack("<I", len(b)) + b


def memo_bomb(k=90, levels=4):
    p = b"\x80\x02](" + b"K\x01" * k + b"eq\x000"
    for lv in range(1, levels):
        p += b"](" + (b"h" + bytes([lv - 1])) * k + b"eq" + bytes([lv]) + b"0"
    p += b"}(" + pickle_str("version") + pickle_str("2.10") + pickle_str("entries") + b"]("
    p += b"}(" + pickle_str("input_sizes") + b"h" + bytes([levels - 1])
    p += pickle_str("collective_seq_id") + b"K\x01" + b"ue" + b"u."
    return p


def case_fr_walk_never_follows():
    d = os.path.join(TMP, "bundle", "fr")
    os.makedirs(d)
    json_dump(os.path.join(d, "fr_rank_0"))
    os.mkfifo(os.path.join(d, "fr_rank_1"))
    os.symlink("/dev/zero", os.path.join(d, "fr_rank_2"))
    os.symlink("/", os.path.join(TMP, "bundle", "root"))
    os.symlink("/proc/self/fd", os.path.join(TMP, "bundle", "fd"))
    for args in (["--json", "--flight-recorder", os.path.join(TMP, "bundle")],
                 ["--json", "--no-write", os.path.join(TMP, "bundle")]):
        rc, out, err, secs = run("diagnose", *args, timeout=30)
        as_json(out, " ".join(args))
        if secs > 10:
            fail(f"{args}: took {secs:.1f} s")
    rc, out, err, _ = run("diagnose", "--json", "--flight-recorder", os.path.join(TMP, "bundle"))
    text = out.decode(errors="replace")
    if "FIFO" not in text or "symbolic link" not in text:
        fail(f"the FIFO and the link are not named in the notes: {text[:1500]}")
    # Named explicitly, a FIFO or a link to /dev/zero is an error for that file, not a hang.
    rc, out, err, secs = run("diagnose", "--json", "--flight-recorder",
                             os.path.join(d, "fr_rank_1"), os.path.join(d, "fr_rank_2"),
                             os.path.join(d, "fr_rank_0"))
    as_json(out, "explicit fifo")


def case_sparse_and_bomb_dumps_are_errors():
    d = os.path.join(TMP, "fr")
    os.makedirs(d)
    json_dump(os.path.join(d, "fr_rank_0"))
    with open(os.path.join(d, "fr_rank_1"), "wb") as f:
        f.write(memo_bomb())
    with open(os.path.join(d, "fr_rank_2"), "w") as f:
        f.write('{"version": "2.10", "entries": [{"collective_seq_id": 1e400}]}')
    with open(os.path.join(d, "fr_rank_3"), "wb") as f:
        f.write(b"\x80")
        f.truncate(30 << 30)
    rc, out, err, secs = run("diagnose", "--json", "--flight-recorder", d, timeout=60)
    j = as_json(out, "hostile dumps")
    text = json.dumps(j)
    for want in ("expands to more than", "out of range", "cap"):
        if want not in text:
            fail(f"no {want!r} error in {text[:2000]}")
    if secs > 20:
        fail(f"took {secs:.1f} s")


def case_invalid_utf8_in_every_field_gives_json():
    root = os.path.join(TMP.encode(), b"run")
    node = os.path.join(root, b"gpu\xff01")
    os.makedirs(os.path.join(node, b"fr"))
    with open(os.path.join(node, b"status.json"), "w") as f:
        json.dump({"node": "gpu01"}, f)
    with open(os.path.join(node, b"rank_\xfe0.log"), "wb") as f:
        f.write(b"[rank0]: torch.OutOfMemoryError: CUDA out of memory \xff\xfe on gpu\xc3\n")
    e = dict(ENTRY)
    e["profiling_name"] = "nccl:all_reduce\udcff"
    e["frames"] = [{"name": "f\udcfe", "filename": "/x\udcff.py", "line": 1}]
    p = b"\x80\x02}(" + pickle_str("version") + pickle_str("2.10\udcff") + pickle_str("entries")
    p += b"](}(" + pickle_str("collective_seq_id") + b"K\x01" + pickle_str("profiling_name")
    p += pickle_str("nccl:all_reduce\udcff") + pickle_str("state") + pickle_str("scheduled")
    p += b"ueu."
    for r in (0, 1):
        with open(os.path.join(node, b"fr", b"fr_rank_%d" % r), "wb") as f:
            f.write(p)
    outputs = []
    for args in ([b"diagnose", b"--json", b"--no-write", root],
                 [b"diagnose", b"--json", b"--flight-recorder", root],
                 [b"diagnose", b"--json", os.path.join(node, b"rank_\xfe0.log")]):
        rc, out, err, _ = run(*[a.decode("utf-8", "surrogateescape") for a in args])
        as_json(out, repr(args))
        outputs.append(out)
    rc, out, err, _ = run("diagnose", root.decode("utf-8", "surrogateescape"))
    for name in ("diagnosis.md", "diagnosis.json"):
        if not os.path.exists(os.path.join(root, name.encode())):
            fail(f"diagnose RUN_ROOT wrote no {name}: {err[-500:]!r}")
    as_json(open(os.path.join(root, b"diagnosis.json"), "rb").read(), "diagnosis.json")
    # Other --json outputs with the bytes in their inputs.
    bad = os.path.join(TMP.encode(), b"imp\xff.txt")
    with open(bad, "wb") as f:
        f.write(open(NVS, "rb").read().replace(b"# nThread", b"# \xff\xfe nThread", 1))
    for args in ([b"bench", b"--sysroot", os.path.join(FX.encode(), b"ib-healthy"),
                  b"--import", bad, b"--run-dir", os.path.join(TMP.encode(), b"r\xff")],
                 [b"preflight", b"--json", b"--sysroot", os.path.join(FX.encode(), b"ib-healthy")]):
        env = dict(os.environ)
        env["NCCL_SOCKET_IFNAME"] = "eth\udcff0"
        env["HOSTNAME"] = "h\udcfe"
        cmd = [SL] + [a.decode("utf-8", "surrogateescape") for a in args]
        p = subprocess.run(cmd, capture_output=True, timeout=60, env=env)
        if p.returncode < 0 or p.returncode == 70:
            fail(f"{args}: exit {p.returncode}: {p.stderr[-800:]!r}")
        if b"--json" in args and p.stdout.strip():
            as_json(p.stdout, repr(args))


def case_history_link_is_not_copied():
    secret = os.path.join(TMP, "secret")
    with open(secret, "w") as f:
        f.write("root only\n")
    os.chmod(secret, 0o600)
    hist = os.path.join(TMP, "hist.jsonl")
    os.symlink(secret, hist)
    run("bench", "--sysroot", os.path.join(FX, "ib-healthy"), "--import", NVS, "--history", hist,
        "--run-dir", os.path.join(TMP, "r"))
    if not os.path.islink(hist):
        fail("the planted link was replaced by a file (the target's bytes copied out)")
    if open(secret).read() != "root only\n":
        fail("the link's target was written")
    fifo = os.path.join(TMP, "fifo.jsonl")
    os.mkfifo(fifo)
    run("bench", "--sysroot", os.path.join(FX, "ib-healthy"), "--import", NVS, "--history", fifo,
        "--run-dir", os.path.join(TMP, "r2"), timeout=30)


def case_history_keeps_every_record_of_concurrent_runs():
    hist = os.path.join(TMP, "hist.jsonl")
    runs = 16
    # Four writers, each a loop of bench imports appending to one history.
    loop = ('for i in $(seq %d); do "$0" bench --sysroot "$1" --import "$2" --history "$3" '
            '--run-dir "$4/$i" >/dev/null 2>&1; done' % runs)
    procs = [subprocess.Popen(["bash", "-c", loop, SL, os.path.join(FX, "ib-healthy"), NVS, hist,
                               os.path.join(TMP, f"w{w}")]) for w in range(4)]
    for p in procs:
        p.wait(timeout=170)
    lines = open(hist).read().splitlines()
    if len(lines) != 4 * runs:
        fail(f"{len(lines)} history lines from {4 * runs} runs")
    for l in lines:
        json.loads(l)


def case_a_requeued_job_ignores_the_previous_launchs_hang():
    # The previous launch (restart 0) of job 812 declared a hang 5 s ago on node b; this is its
    # requeue (restart 1) on node a, in the same job root, as Slurm would start it.
    root = os.path.join(TMP, "job")
    os.makedirs(os.path.join(root, ".events"), mode=0o700)
    os.makedirs(os.path.join(root, "nodeb"))
    ev = {"schema": "safe-launch.peer-event/1", "kind": "hang", "node": "nodeb",
          "time_unix": time.time() - 5, "trigger": "stall", "category": "stall",
          "severity": "hang", "headline": "stall", "rank": None, "exit_status": None,
          "first_error": "", "launch": {"job_id": "812", "restart": 0, "launch_id": "SLURM_STEP_ID=0"}}
    with open(os.path.join(root, ".events", "hang-nodeb-0123456789abcdef.json"), "w") as f:
        json.dump(ev, f)
    env = dict(os.environ, SLURM_JOB_ID="812", SLURM_RESTART_COUNT="1", SLURM_STEP_ID="0")
    t0 = time.time()
    p = subprocess.run([SL, "run", "--no-preflight", "--no-warmup", "--node-name", "nodea",
                        "--run-dir", os.path.join(root, "nodea.1"), "--coordinate", "on",
                        "--stall-timeout", "300",
                        "--", "sleep", "3"], capture_output=True, timeout=60, env=env)
    if p.returncode != 0:
        fail(f"the requeued job exited {p.returncode} after {time.time() - t0:.1f} s (took the "
             f"old launch's hang?): {p.stderr.decode(errors='replace')[-1500:]}")


OOM = b"[rank0]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n"


def case_own_files_are_not_job_lines_and_the_md_escapes():
    root = os.path.join(TMP, "runs")
    node = os.path.join(root, "<img src=x onerror=alert(1)>")
    b = os.path.join(node, "hang-n1-20261201T000000Z")
    for d in ("output", "node", "run"):
        os.makedirs(os.path.join(b, d))
    with open(os.path.join(node, "status.json"), "w") as f:
        json.dump({"node": "n1"}, f)
    with open(os.path.join(b, "output", "rank_0.tail"), "wb") as f:
        f.write(b"step 1 <script>alert(2)</script>\n" + OOM)
    # safe-launch's own files in the bundle and an earlier diagnosis quote the same line.
    for rel in ("summary.md", "summary.json", "node/rank_environment.txt", "node/limits.txt"):
        with open(os.path.join(b, rel), "wb") as f:
            f.write(b"SOME_VAR=" + OOM)
    for name in ("diagnosis.md", "diagnosis.json"):
        with open(os.path.join(root, name), "wb") as f:
            f.write(OOM * 3)
    with open(os.path.join(b, "manifest.json"), "w") as f:
        json.dump({"host": "n1"}, f)
    for target in (b, root):
        rc, out, err, _ = run("diagnose", "--json", "--no-write", target)
        j = as_json(out, target)
        files = [e["file"] for c in j["causes"] for e in c["evidence"]]
        files += [s["first"]["file"] for s in j["symptoms"]]
        bad = [f for f in files if any(x in f for x in ("summary.", "environment", "limits",
                                                         "diagnosis."))]
        if bad:
            fail(f"{target}: safe-launch's own files read as job lines: {bad}")
        counts = [s["count"] for s in j["symptoms"]] + [len(c["evidence"]) for c in j["causes"]]
        if not files or max(counts) > 1:
            fail(f"{target}: the one OOM line counted {counts}: {json.dumps(j)[:1500]}")
    os.remove(os.path.join(root, "diagnosis.md"))
    os.remove(os.path.join(root, "diagnosis.json"))
    run("diagnose", root)
    md = open(os.path.join(root, "diagnosis.md")).read()
    if "<img" in md or "<script" in md:
        fail(f"diagnosis.md passes HTML through: {md[:1500]}")


CASES = {k[5:]: v for k, v in globals().items() if k.startswith("case_")}
if CASE not in CASES:
    fail(f"no case {CASE}")
CASES[CASE]()
print("ok")

#!/usr/bin/env python3
"""safe-launch diagnose --flight-recorder driven as a user would.

usage: diagnose_fr_test.py SAFE_LAUNCH CASE
Exit 0 when the case passes, 1 with a message when not, 77 when it cannot run here (no chromium).
"""
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile

SL, CASE = sys.argv[1], sys.argv[2]
GEN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "fixtures", "gen",
                   "fr_dumps.py")
TMP = tempfile.mkdtemp(prefix="sl-diag-fr-")


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def gen(name, *args):
    out = os.path.join(TMP, name)
    p = subprocess.run([sys.executable, GEN, out, "--ranks", "16", "--entries", "200", "--seed", "11",
                        *args], capture_output=True, text=True, check=True)
    return out, json.loads(p.stdout)


def diagnose(*args):
    p = subprocess.run([SL, "diagnose", *args], capture_output=True, text=True, timeout=120)
    return p.returncode, p.stdout, p.stderr


def diagnose_json(*paths):
    rc, out, err = diagnose("--json", "--flight-recorder", *paths)
    try:
        return rc, json.loads(out)
    except ValueError:
        fail(f"not JSON (rc {rc}): {out[:500]} {err[:500]}")


def case_scenarios():
    expect = {
        # One exit rule for every diagnose: 0 when a cause was named, 1 when none (healthy).
        "healthy": (1, "healthy"),
        "missing-rank": (0, "straggler_or_slow_rank"),
        "op-mismatch": (0, "desync_collective_mismatch"),
        "size-mismatch": (0, "desync_collective_mismatch"),
        "stuck-network": (0, "retry_exceeded_network"),
    }
    for scenario, (want_rc, want_cat) in expect.items():
        d, summary = gen(scenario, "--scenario", scenario, "--fault-rank", "13")
        rc, j = diagnose_json(d)
        if rc != want_rc:
            fail(f"{scenario}: exit {rc}, want {want_rc}")
        if j["schema"] != "safe-launch.diagnosis/1" or j["verdict"] != want_cat:
            fail(f"{scenario}: verdict {j['verdict']}, want {want_cat}")
        if scenario in ("missing-rank", "op-mismatch", "size-mismatch"):
            top = j["causes"][0]
            if top["entity"] != "rank 13":
                fail(f"{scenario}: entity {top['entity']!r}, want 'rank 13'")
            if f"#{summary['fault_seq']}" not in top["message"]:
                fail(f"{scenario}: seq {summary['fault_seq']} not in {top['message']!r}")
            if not any("fr_rank_13" in e["file"] for e in top["evidence"]):
                fail(f"{scenario}: no evidence from rank 13's dump: {top['evidence']}")
        # The text form says the same first.
        rc, out, _ = diagnose("--flight-recorder", d)
        first = out.splitlines()[1]
        if (want_cat == "healthy") != ("no stuck collective" in first) or (
                want_cat != "healthy" and want_cat not in first):
            fail(f"{scenario}: text verdict line {first!r}")


def bundle(root, host, ranks, src, collected):
    b = os.path.join(root, host, f"hang-{host}-20261201T103000Z")
    os.makedirs(os.path.join(b, "fr"))
    dumps = []
    for r in ranks:
        if collected:
            shutil.copy(os.path.join(src, f"fr_rank_{r}"), os.path.join(b, "fr", f"fr_rank_{r}.pkl"))
        dumps.append({"rank": r, "path": f"/tmp/fr_rank_{r}",
                      "status": "collected" if collected else "missing"})
    manifest = {"schema": "safe-launch.bundle-manifest/1", "host": host,
                "collectors": [{"id": "flight_recorder", "status": "ok" if collected else "error",
                                "details": {"dumps": dumps}}]}
    with open(os.path.join(b, "manifest.json"), "w") as f:
        json.dump(manifest, f)
    with open(os.path.join(b, "summary.md"), "w") as f:
        f.write("# hang\n")


def case_bundles():
    src, _ = gen("stuck", "--scenario", "stuck-network")
    root = os.path.join(TMP, "safe-launch-runs", "4242")
    bundle(root, "gpu06", range(0, 8), src, True)
    bundle(root, "gpu07", range(8, 16), src, False)  # the node died: no dump, only its manifest
    rc, j = diagnose_json(root)
    if rc != 0:
        fail(f"exit {rc}")
    top = j["causes"][0]
    if top["category"] != "oom_or_crash_other_rank" or top["entity"] != "node gpu07 (ranks 8-15)":
        fail(f"top cause {top['category']} / {top['entity']!r}")
    hosts = {r["rank"]: r["host"] for r in j["flight_recorder"]["ranks"]}
    if hosts.get(3) != "gpu06":
        fail(f"rank 3's host {hosts.get(3)!r}")


def case_unreadable():
    d, _ = gen("lag", "--scenario", "missing-rank", "--fault-rank", "4")
    with open(os.path.join(d, "fr_rank_2"), "rb") as f:
        data = f.read()
    with open(os.path.join(d, "fr_rank_2"), "wb") as f:
        f.write(data[: len(data) // 3])
    # A pickle that would run os.system on load: refused, never executed.
    marker = os.path.join(TMP, "pwned")
    evil = b"\x80\x02cos\nsystem\nq\x00X" + len(f"touch {marker}").to_bytes(4, "little") + \
        f"touch {marker}".encode() + b"\x85R."
    with open(os.path.join(d, "fr_rank_7"), "wb") as f:
        f.write(evil)
    rc, j = diagnose_json(d)
    if os.path.exists(marker):
        fail("the GLOBAL/REDUCE pickle ran code")
    if rc != 0 or j["causes"][0]["entity"] != "rank 4":
        fail(f"exit {rc}, top {j['causes'][0] if j['causes'] else None}")
    errs = {os.path.basename(e["file"]): e for e in j["flight_recorder"]["errors"]}
    if set(errs) != {"fr_rank_2", "fr_rank_7"}:
        fail(f"errors {errs}")
    if errs["fr_rank_7"]["offset"] != 2 or "GLOBAL" not in errs["fr_rank_7"]["message"]:
        fail(f"GLOBAL error {errs['fr_rank_7']}")
    if errs["fr_rank_2"]["offset"] <= 0 or "truncated" not in errs["fr_rank_2"]["message"]:
        fail(f"truncation error {errs['fr_rank_2']}")
    if j["flight_recorder"]["missing_ranks"] != [2, 7]:
        fail(f"missing {j['flight_recorder']['missing_ranks']}")
    rc, out, _ = diagnose("--flight-recorder", d)
    if f"{os.path.join(d, 'fr_rank_7')} at byte 2" not in out:
        fail(f"text does not name file and byte: {out}")


def case_usage():
    empty = os.path.join(TMP, "empty")
    os.makedirs(empty)
    rc, out, err = diagnose("--flight-recorder", empty)
    if rc != 2 or "no Flight Recorder dump" not in err:
        fail(f"empty dir: exit {rc}, {err!r}")
    rc, out, err = diagnose()
    if rc != 2:
        fail(f"no arguments: exit {rc}")


def case_named_dump_files():
    """Dumps named on their own (no --flight-recorder, no directory) are read as dumps, not as
    logs, alone and beside a log file; a text file whose name ends in a number stays a log."""
    d, summary = gen("named", "--scenario", "missing-rank", "--fault-rank", "13")
    dumps = sorted(glob.glob(os.path.join(d, "*")))
    dumps = [p for p in dumps if open(p, "rb").read(1) == b"\x80"]
    if len(dumps) < 15:
        fail(f"generator wrote {len(dumps)} pickle dumps")
    rc, out, err = diagnose("--json", "--no-write", *dumps)
    if rc != 0:
        fail(f"named dumps: exit {rc}: {err[:500]}")
    j = json.loads(out)
    top = j["causes"][0]
    if top["category"] != "straggler_or_slow_rank":
        fail(f"named dumps: top cause {top['category']}, want straggler_or_slow_rank: {out[:800]}")
    if not any("13" in e["text"] for e in top["evidence"]):
        fail(f"named dumps: the planted rank 13 is not in the evidence: {top['evidence'][:3]}")
    # Beside a log: the log is read as a log (its line is evidence), the dumps as dumps.
    log = os.path.join(TMP, "job.log")
    with open(log, "w") as f:
        f.write("[rank0]:[E ProcessGroupNCCL.cpp:1] [Rank 0] Watchdog caught collective operation "
                "timeout: WorkNCCL(SeqNum=7, OpType=ALLREDUCE, NumelIn=4, NumelOut=4, "
                "Timeout(ms)=600000) ran for 600001 milliseconds before timing out.\n")
    rc, out, err = diagnose("--json", "--no-write", log, *dumps)
    j = json.loads(out)
    files = {e["file"] for c in j["causes"] for e in c["evidence"]}
    if not any(f.endswith("job.log") for f in files) or not any(f in dumps for f in files):
        fail(f"log and dumps: evidence files {sorted(files)[:5]}")
    if j["causes"][0]["category"] != "straggler_or_slow_rank":
        fail(f"log and dumps: top cause {j['causes'][0]['category']}")
    # A log named like a dump (a rank number at the end) is still a log.
    text = os.path.join(TMP, "worker_3")
    shutil.copy(log, text)
    rc, out, err = diagnose("--json", "--no-write", text)
    j = json.loads(out)
    if not any(e["file"].endswith("worker_3") for c in j["causes"] for e in c["evidence"]):
        fail(f"a text file named worker_3 was not read as a log: {out[:500]}")


def case_html_in_chromium():
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if not chromium:
        print("SKIP: no chromium (bash scripts/install-deps.sh installs it)")
        sys.exit(77)
    d, _ = gen("lag", "--scenario", "missing-rank", "--fault-rank", "9")
    html = os.path.join(TMP, "diagnosis.html")
    rc, out, err = diagnose("--flight-recorder", d, "--html", html)
    if rc != 0 or not os.path.exists(html):
        fail(f"exit {rc}, {err}")
    p = subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu",
                        f"--user-data-dir={os.path.join(TMP, 'chromium')}",
                        "--dump-dom", "file://" + html],
                       capture_output=True, text=True, timeout=120)
    dom = p.stdout
    if "<table" not in dom:
        fail(f"chromium rendered nothing (rc {p.returncode}): {p.stderr[-2000:]}")
    for want in ("Verdict: straggler_or_slow_rank", "rank 9 never entered ALLREDUCE #",
                 'class="c absent"', 'class="c wait"', 'class="c done"', 'class="nodes"'):
        if want not in dom:
            fail(f"{want!r} not in the rendered DOM")
    # The laggard's own row: rank 9 alone, never entered the stuck column.
    if "<td>9</td>" not in dom:
        fail("no grid row of its own for rank 9")


def case_run_root_joins_logs_and_dumps():
    # `safe-launch diagnose RUN_ROOT` (no --flight-recorder): the logs' symptom (a watchdog
    # timeout names no cause) and the dumps' laggard become one diagnosis naming the laggard.
    d, summary = gen("root/node0/fr", "--scenario", "missing-rank", "--fault-rank", "6")
    log = os.path.join(TMP, "root", "node0", "job.log")
    with open(log, "w") as f:
        f.write("[rank0]:[E1201 10:00:00.000 ProcessGroupNCCL.cpp:632] [Rank 0] Watchdog caught "
                "collective operation timeout: WorkNCCL(SeqNum=9, OpType=ALLREDUCE, NumelIn=1024, "
                "NumelOut=1024, Timeout(ms)=600000) ran for 600010 milliseconds before timing out.\n")
    root = os.path.join(TMP, "root")
    rc, out, err = diagnose("--json", root)
    if rc != 0:
        fail(f"exit {rc}: {err}")
    j = json.loads(out)
    top = j["causes"][0]
    if top["category"] != "straggler_or_slow_rank" or "6" not in json.dumps(top["entity"]):
        fail(f"top cause {top}")
    if not any(e["file"].endswith("fr_rank_6") for e in top["evidence"]):
        fail(f"no evidence from rank 6's dump: {top['evidence']}")
    # Without the dumps the same log names no cause (exit 1): the join is what decides.
    rc, out, _ = diagnose(log)
    if rc != 1:
        fail(f"the log alone: exit {rc}, want 1")


FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "fixtures")


def sl_node(root, name, fixture, hang=False):
    """One node's run directory, written by the real binary: status.json, preflight.json of the
    fixture sysroot, and with hang=True a real hang bundle (the job prints once, then stalls)."""
    cmd = [SL, "run", "--sysroot", os.path.join(FIXTURES, fixture), "--on-preflight-fail", "warn",
           "--no-warmup", "--run-dir", os.path.join(root, name)]
    if hang:
        cmd += ["--stall-timeout", "1", "--", "sh", "-c", "echo started; exec sleep 60"]
    else:
        cmd += ["--", "true"]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    if p.returncode != (124 if hang else 0):
        fail(f"run {name}: exit {p.returncode}: {p.stderr[-2000:]}")
    if hang:
        bundles = [b for b in glob.glob(os.path.join(root, name, "hang-*")) if os.path.isdir(b)]
        if len(bundles) != 1:
            fail(f"{name}: bundles {bundles}")
        # The kernel-log collector copied this machine's /dev/kmsg since the job started:
        # whatever other tests did to links here is not this job's. The cases plant their own.
        with open(os.path.join(bundles[0], "node", "kernel.log"), "w") as f:
            f.write("")
        return bundles[0]
    return None


def four_nodes(name, memlock=()):
    """n1..n4 (n4 with a hang bundle), the nodes named in `memlock` on the 64 KiB sysroot."""
    root = os.path.join(TMP, name)
    bundle = None
    for n in ("n1", "n2", "n3", "n4"):
        b = sl_node(root, n, "memlock-64k" if n in memlock else "ib-healthy", hang=n == "n4")
        bundle = b or bundle
    return root, bundle


def root_json(root, *extra):
    rc, out, err = diagnose("--json", "--no-write", *extra, root)
    try:
        return rc, json.loads(out), err
    except ValueError:
        fail(f"not JSON (rc {rc}): {out[:500]} {err[:500]}")


def expect_top(root, category, node, port=None, evidence_in=None):
    rc, j, err = root_json(root)
    top = j["causes"][0]
    if rc != 0 or top["category"] != category or top["entity"].get("node") != node:
        fail(f"{root}: exit {rc}, top {top['category']} {top['entity']}, want {category} {node}")
    if port and top["entity"].get("port") != port:
        fail(f"{root}: port {top['entity']}, want {port}")
    if evidence_in and not any(evidence_in in e["file"] for e in top["evidence"]):
        fail(f"{root}: no evidence from {evidence_in}: {top['evidence']}")
    return top


def case_run_root_joins_node_facts():
    base, bundle = four_nodes("base")
    rc, j, _ = root_json(base)
    if rc != 1 or j["named"]:
        fail(f"healthy nodes and a bare stall: exit {rc}, causes {j['causes'][0]}")
    # Preflight: one node's memlock limit, then every node's.
    root, _ = four_nodes("memlock", memlock=("n2",))
    top = expect_top(root, "memlock", "n2 only (1 of 4 nodes)", evidence_in="n2/preflight.json")
    if not any(e["text"].startswith("/findings/") and e["line"] > 1 for e in top["evidence"]):
        fail(f"no finding pointer and line: {top['evidence']}")
    root, _ = four_nodes("memlock-all", memlock=("n1", "n2", "n3", "n4"))
    expect_top(root, "memlock", "all 4 nodes")
    # Warm-up: the report every node wrote names node 2 (n3) for the MTU of mlx5_0:1.
    warm = os.path.join(TMP, "warm")
    shutil.copytree(base, warm, symlinks=True)
    report = {"schema": "safe-launch.warmup/1", "verdict": "fail", "passed": False, "nnodes": 4,
              "findings": [{"check": "warmup.consistency.mtu", "code": "", "entity": "node 2 (n3)",
                            "outcome": "fail", "waived": False, "evidence": [],
                            "message": "the MTU of mlx5_0:1 is 1024 on node 2 (n3) but 4096 on 3 "
                                       "other nodes (node 0 (n1), node 1 (n2), node 3 (n4))",
                            "next_step": "set one MTU"}]}
    for n in ("n1", "n2", "n3", "n4"):
        with open(os.path.join(warm, n, "warmup.json"), "w") as f:
            json.dump(report, f, indent=2)
    expect_top(warm, "mtu_mismatch", "n3 only (1 of 4 nodes)", port="mlx5_0:1",
               evidence_in="warmup.json")
    # IB counters in n4's bundle: link_downed grew on mlx5_1:1 during the job.
    ib = os.path.join(TMP, "ib")
    shutil.copytree(base, ib, symlinks=True)
    ib_bundle = bundle.replace(base, ib)
    with open(os.path.join(ib_bundle, "node", "ib_counters.json"), "w") as f:
        json.dump({"ports": {}, "error_deltas": [
            {"port": "mlx5_1:1", "counter": "link_downed", "delta": 3}]}, f, indent=2)
    expect_top(ib, "ib_port_down_or_link_flap", "n4 only (1 of 4 nodes)", port="mlx5_1:1",
               evidence_in="node/ib_counters.json")
    # Kernel log in n4's bundle: an Xid, named with its node.
    kern = os.path.join(TMP, "kern")
    shutil.copytree(base, kern, symlinks=True)
    with open(os.path.join(bundle.replace(base, kern), "node", "kernel.log"), "w") as f:
        f.write("[  812.100000] NVRM: Xid (PCI:0000:b3:00): 79, pid=1234, name=python, GPU has "
                "fallen off the bus.\n")
    expect_top(kern, "gpu_xid_or_driver", "n4 only (1 of 4 nodes)", evidence_in="kernel.log")


def case_run_root_writes_diagnosis():
    root, _ = four_nodes("w", memlock=("n2",))
    # A link planted at one of the names is replaced, never written through.
    target = os.path.join(TMP, "target")
    with open(target, "w") as f:
        f.write("keep\n")
    os.symlink(target, os.path.join(root, "diagnosis.html"))
    rc, out, err = diagnose("--json", root)
    if rc != 0:
        fail(f"exit {rc}: {err}")
    for name in ("diagnosis.md", "diagnosis.json", "diagnosis.html"):
        path = os.path.join(root, name)
        if not os.path.isfile(path) or os.path.islink(path):
            fail(f"{name} not written as a file: {os.listdir(root)}")
    with open(target) as f:
        if f.read() != "keep\n":
            fail("written through the planted link")
    with open(os.path.join(root, "diagnosis.json")) as f:
        if json.load(f) != json.loads(out):
            fail("diagnosis.json is not the --json document")
    with open(os.path.join(root, "diagnosis.md")) as f:
        md = f.read()
    if "**Verdict: memlock**" not in md or "| n2 | preflight | memlock |" not in md:
        fail(f"diagnosis.md: {md[:1500]}")
    # A second run reads its own diagnosis files as nothing: the same answer.
    rc2, out2, _ = diagnose("--json", root)
    if rc2 != rc or json.loads(out2)["causes"] != json.loads(out)["causes"]:
        fail("the second run differs (read its own diagnosis files?)")
    # --no-write writes nothing; --out DIR writes there.
    fresh, _ = four_nodes("w2", memlock=("n2",))
    rc, _, _ = diagnose("--no-write", fresh)
    if rc != 0 or any(n.startswith("diagnosis.") for n in os.listdir(fresh)):
        fail(f"--no-write: exit {rc}, {os.listdir(fresh)}")
    elsewhere = os.path.join(TMP, "elsewhere")
    rc, _, _ = diagnose("--out", elsewhere, fresh)
    if rc != 0 or sorted(os.listdir(elsewhere)) != ["diagnosis.html", "diagnosis.json",
                                                    "diagnosis.md"]:
        fail(f"--out: exit {rc}")
    # Another user's run root: said on stderr, still printed, exit status unchanged.
    if os.geteuid() == 0:
        os.chown(fresh, 4242, 4242)
        rc, out, err = diagnose(fresh)
        if rc != 0 or "memlock" not in out or "not writing" not in err or "uid 4242" not in err:
            fail(f"foreign root: exit {rc}, stderr {err!r}")
        if any(n.startswith("diagnosis.") for n in os.listdir(fresh)):
            fail("wrote into another user's run root")


def case_run_root_html_in_chromium():
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if not chromium:
        print("SKIP: no chromium (bash scripts/install-deps.sh installs it)")
        sys.exit(77)
    root, bundle = four_nodes("html", memlock=("n2",))
    # n4's bundle holds the ranks' dumps: rank 9 never entered the stuck all_reduce.
    d, _ = gen("html-dumps", "--scenario", "missing-rank", "--fault-rank", "9")
    shutil.copytree(d, os.path.join(bundle, "fr"))
    rc, out, err = diagnose(root)
    html = os.path.join(root, "diagnosis.html")
    if rc != 0 or not os.path.exists(html):
        fail(f"exit {rc}, {err}")
    p = subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu",
                        f"--user-data-dir={os.path.join(TMP, 'chromium')}",
                        "--dump-dom", "file://" + html],
                       capture_output=True, text=True, timeout=120)
    dom = p.stdout
    if "<table" not in dom:
        fail(f"chromium rendered nothing (rc {p.returncode}): {p.stderr[-2000:]}")
    for want in ("Verdict: straggler_or_slow_rank", 'class="node-facts"', "<td>n2</td>",
                 "os.memlock/soft_below_min", 'class="c absent"', "<details>"):
        if want not in dom:
            fail(f"{want!r} not in the rendered DOM")


try:
    globals()["case_" + CASE]()
    print("ok")
finally:
    shutil.rmtree(TMP, ignore_errors=True)

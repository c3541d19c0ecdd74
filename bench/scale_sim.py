#!/usr/bin/python3
"""The body of bench/scale.sh (see there): N simulated nodes on one host, figures per N, an SVG.
Standard library only. Every process started here is in its own process group and is killed
(the group) on the way out, also on failure or ^C."""
import glob
import json
import os
import re
import secrets
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

B = os.path.abspath(sys.argv[1])
NS = [int(n) for n in sys.argv[2:]]
SL = os.path.join(B, "bin", "safe-launch")
SIM = os.path.join(B, "bin", "safe-launch-warmup-sim")
PEER = os.path.join(B, "bin", "sl-scale-peer")
CHILD = os.path.join(B, "bin", "sl-test-child")
SRC = os.getcwd()
DEADLINE_S = float(os.environ.get("SCALE_DEADLINE", "20"))
SKIP = set(filter(None, os.environ.get("SCALE_SKIP", "").split(",")))
SVG = os.environ.get("SCALE_SVG", os.path.join(tempfile.gettempdir(), "sl-scale.svg"))
WORK = tempfile.mkdtemp(prefix="sl-bench-scale-")
LIVE = []  # every Popen not yet reaped


def spawn(argv, **kw):
    p = subprocess.Popen(argv, start_new_session=True, **kw)
    LIVE.append(p)
    return p


def reap(p, timeout):
    """Waits for p (os.wait4: its own rusage); kills its group at the timeout."""
    end = time.monotonic() + timeout
    while True:
        pid, status, ru = os.wait4(p.pid, os.WNOHANG)
        if pid == p.pid:
            p.returncode = os.waitstatus_to_exitcode(status)
            LIVE.remove(p)
            return ru
        if time.monotonic() > end:
            kill_group(p)
            end = time.monotonic() + 5
        time.sleep(0.01)


def kill_group(p):
    try:
        os.killpg(p.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def cleanup(*_):
    for p in list(LIVE):
        kill_group(p)
        try:
            os.waitpid(p.pid, 0)
        except ChildProcessError:
            pass
    shutil.rmtree(WORK, ignore_errors=True)


def load():
    return open("/proc/loadavg").read().split()[0]


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def facts_of(fixture):
    """A node's facts as `safe-launch preflight --json` gathers them from a fixture tree."""
    p = subprocess.run([SL, "preflight", "--json", "--sysroot",
                        os.path.join(SRC, "tests", "fixtures", fixture)],
                       capture_output=True, text=True, timeout=60)
    return json.loads(p.stdout)["facts"]


def count_sockets(pid):
    n = 0
    try:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            try:
                n += os.readlink(f"/proc/{pid}/fd/{fd}").startswith("socket:")
            except OSError:
                pass
    except OSError:
        pass
    return n


class SocketSampler(threading.Thread):
    """Peak socket count of one process (node 0: the store's connections + its own client)."""

    def __init__(self, pid):
        super().__init__(daemon=True)
        self.pid, self.peak, self.stop = pid, 0, False

    def run(self):
        while not self.stop:
            self.peak = max(self.peak, count_sockets(self.pid))
            time.sleep(0.005)


def warmup_run(n, facts, odd_facts=None, missing=None):
    """One facts exchange over n simulated nodes. odd_facts: node n-1's facts instead; missing:
    a node rank never started. Returns the figures."""
    d = os.path.join(WORK, f"warmup-{n}-{'odd' if odd_facts else 'miss' if missing else 'ok'}")
    os.makedirs(d)
    port = free_port()
    now_ms = time.time() * 1000
    auth = {"job_id": f"port-{port}", "key_hex": secrets.token_hex(32), "source": "bench"}
    procs = {}
    for r in range(n):
        node = {"node_rank": r, "node_name": f"sim{r:04d}",
                "facts": odd_facts if (odd_facts and r == n - 1) else facts, "env": {}}
        plan = {"nnodes": n, "node_rank": r, "nproc_per_node": 1, "store_host": "127.0.0.1",
                "store_port": port, "local_address": "127.0.0.1",
                "deadline_unix_ms": now_ms + DEADLINE_S * 1000, "spawn_unix_ms": now_ms,
                "backend": "gloo", "node": node, "auth": auth, "collectives": False}
        path = os.path.join(d, f"plan{r}.json")
        with open(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600), "w") as f:
            json.dump(plan, f)
    sampler = None
    for r in range(n):
        if r == missing:
            continue
        log = open(os.path.join(d, f"rank{r}.log"), "w")
        procs[r] = spawn([SIM, "--plan", os.path.join(d, f"plan{r}.json"), "--local-rank", "0",
                          "--out", os.path.join(d, f"out{r}.json")], stdout=log, stderr=log)
        log.close()
        if r == 0:
            sampler = SocketSampler(procs[0].pid)
            sampler.start()
    spawned = time.time()
    rusage = {r: reap(p, DEADLINE_S + 30) for r, p in procs.items()}
    sampler.stop = True
    # Only what is measured is kept: this process's size is the floor of every child's peak RSS
    # (a forked child's high-water mark starts at its parent's; see the RSS note in main()).
    t, errors, reports, report = {}, {}, 0, {}
    for r in procs:
        try:
            o = json.load(open(os.path.join(d, f"out{r}.json")))
        except (OSError, ValueError):
            o = {"result": {"error": "no output file"}}
        t[r] = o.get("result", {}).get("timings", {})
        err = o.get("result", {}).get("error", "")
        if err:
            errors[err[:120]] = errors.get(err[:120], 0) + 1
        reports += bool(o.get("report"))
        if r == 0:
            report = o.get("report", {})
        del o
    arrivals = [x.get("store", 0) for x in t.values() if x.get("store")]
    verdicts = [x.get("verdict", 0) for x in t.values()]
    ends = [x.get("end", 0) for x in t.values()]
    rss = sorted(ru.ru_maxrss for ru in rusage.values())
    fig = {
        "n": n, "started": len(procs), "spawn_s": spawned - now_ms / 1000,
        "arrived": len(arrivals), "verdicts": sum(1 for v in verdicts if v > 0),
        "reports": reports, "errors": errors,
        "last_arrival_to_verdict_s": (max(verdicts) - max(arrivals)) / 1000 if arrivals and min(verdicts) > 0 else None,
        "last_arrival_to_report_s": (max(ends) - max(arrivals)) / 1000 if arrivals and min(ends) > 0 else None,
        "first_start_to_verdict_s": (max(verdicts) - now_ms) / 1000 if min(verdicts) > 0 else None,
        "node0_cpu_s": rusage[0].ru_utime + rusage[0].ru_stime,
        "node0_peak_rss_mib": rusage[0].ru_maxrss / 1024,
        "node_median_rss_mib": rss[len(rss) // 2] / 1024,
        "store_peak_sockets": sampler.peak,
        "report_bytes": len(json.dumps(report)),
        "verdict": report.get("verdict"),
        "findings": [f"{f.get('check')} {f.get('entity')}: {f.get('message', '')[:160]}"
                     for f in report.get("findings", []) if f.get("outcome") in ("fail", "warn")],
    }
    shutil.rmtree(d, ignore_errors=True)
    return fig


def capture_run(n, kill=None):
    """Coordinated capture over n simulated nodes; `kill`: a node killed before the detection."""
    root = os.path.join(WORK, f"capture-{n}")
    os.makedirs(root)
    events = os.path.join(root, ".events")
    lead = 1.0 + n * 0.004  # time for every process to start and open its channel
    detect_at = time.time() + lead
    run_for = lead + float(os.environ.get("SCALE_CAPTURE_S", "5"))
    procs = {}
    for r in range(n):
        argv = [PEER, "--events", events, "--run-dir", os.path.join(root, f"sim{r:04d}"),
                "--node", f"sim{r:04d}", "--for", f"{run_for:.2f}"]
        if r == 0:
            argv += ["--detect-at", f"{detect_at:.3f}"]
        procs[r] = spawn(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    if kill is not None:
        time.sleep(max(0.0, detect_at - time.time() - 0.5))
        kill_group(procs[kill])
    outs = {}
    for r, p in procs.items():
        line = p.stdout.read()
        reap(p, run_for + 30)
        try:
            outs[r] = json.loads(line)
        except ValueError:
            outs[r] = {}
    detected = outs[0].get("detected_unix", 0)
    started = {r: o.get("bundle_started_unix") for r, o in outs.items()}
    late = [started[r] - detected for r in started if started[r] and r != 0]
    cpu = [o["cpu_s"] / o["ran_s"] for o in outs.values() if o.get("ran_s")]
    # The node named missing: the run directory with no bundle started (ScanPeerBundles' view).
    without = sorted(r for r in range(n)
                     if not glob.glob(os.path.join(root, f"sim{r:04d}", ".hang-*.partial")))
    shutil.rmtree(root, ignore_errors=True)
    return {"n": n, "bundles_started": sum(1 for v in started.values() if v),
            "detect_to_all_started_s": max(late) if late else None,
            "detect_to_median_started_s": statistics.median(late) if late else None,
            "poll_cpu_ms_per_s_median": 1000 * statistics.median(cpu) if cpu else None,
            "poll_cpu_ms_per_s_max": 1000 * max(cpu) if cpu else None,
            "without_bundle": [f"sim{r:04d}" for r in without]}


def real_run_dir():
    """One real node run directory with a hang bundle: `safe-launch run` on a replayed NCCL
    watchdog-timeout log that then hangs (as bench/coord.sh), node name scalesrc."""
    root = os.path.join(WORK, "source")
    os.makedirs(root)
    log = os.path.join(SRC, "tests", "fixtures", "logs", "watchdog_timeout.torchrun.txt")
    p = spawn([SL, "run", "--no-preflight", "--no-warmup", "--node-name", "scalesrc",
               "--run-dir", os.path.join(root, "scalesrc"), "--kill-grace", "3",
               "--post-mortem-wait", "0", "--stall-timeout", "0", "--",
               CHILD, "--marker=slbenchscale", "replay", log, "300", "hang"],
              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    reap(p, 90)
    src = os.path.join(root, "scalesrc")
    if not glob.glob(os.path.join(src, "hang-*.tar.gz")):
        sys.exit(f"the source run produced no bundle in {src}: {os.listdir(src)}")
    return src


def copy_node(src, dst, name, bundle=True):
    """src's tree at dst with every 'scalesrc' in names and text files replaced by `name`."""
    for dp, dirs, files in os.walk(src):
        rel = os.path.relpath(dp, src).replace("scalesrc", name)
        if not bundle and re.match(r"^\.?hang-", rel.split(os.sep)[0]):
            continue
        os.makedirs(os.path.join(dst, rel), exist_ok=True)
        for f in files:
            if not bundle and f.startswith("hang-"):
                continue
            s, t = os.path.join(dp, f), os.path.join(dst, rel, f.replace("scalesrc", name))
            data = open(s, "rb").read()
            if not f.endswith((".gz", ".tgz")) and b"\0" not in data[:4096]:
                data = data.replace(b"scalesrc", name.encode())
            with open(t, "wb") as out:
                out.write(data)


def diagnose_run(n, src):
    root = os.path.join(WORK, f"runroot-{n}")
    os.makedirs(root)
    for r in range(n):
        copy_node(src, os.path.join(root, f"sim{r:04d}"), f"sim{r:04d}", bundle=(r != n // 2))
    files = sum(len(f) for _, _, f in os.walk(root))
    size = sum(os.path.getsize(os.path.join(dp, f)) for dp, _, fs in os.walk(root) for f in fs)
    t0 = time.monotonic()
    p = spawn([SL, "diagnose", "--json", root], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    out = p.stdout.read()
    ru = reap(p, 600)
    wall = time.monotonic() - t0
    try:
        doc = json.loads(out)
    except ValueError:
        doc = {}
    causes = doc.get("causes", [])
    shutil.rmtree(root, ignore_errors=True)
    return {"n": n, "wall_s": wall, "cpu_s": ru.ru_utime + ru.ru_stime,
            "peak_rss_mib": ru.ru_maxrss / 1024, "files": files, "mib": size / 2**20,
            "files_per_node": files / n, "kib_per_node": size / 1024 / n,
            "top": causes[0].get("category") if causes else None,
            "nodes_seen": len(doc.get("nodes", [])), "job_nodes": doc.get("job_nodes")}


def fmt(v, spec):
    return "-" if v is None else format(v, spec)


def svg(series):
    """Small multiples, one panel per figure, log2 N on x; stdlib only."""
    panels = [(k, label) for k, label in [
        ("last_arrival_to_verdict_s", "warm-up: last arrival -> every verdict (s)"),
        ("node0_cpu_s", "warm-up: node 0 CPU (s)"),
        ("node0_peak_rss_mib", "warm-up: node 0 peak RSS (MiB)"),
        ("store_peak_sockets", "warm-up: store sockets (peak)"),
        ("detect_to_all_started_s", "capture: detection -> all bundles started (s)"),
        ("poll_cpu_ms_per_s_median", "capture: polling CPU per node (ms/s)"),
        ("wall_s", "diagnose RUN_ROOT wall (s)"),
        ("peak_rss_mib", "diagnose RUN_ROOT peak RSS (MiB)")] if any(k in s for s in series)]
    w, h, cols = 320, 200, 2
    rows = (len(panels) + cols - 1) // cols
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w * cols}" height="{h * rows + 30}" '
           f'font-family="sans-serif" font-size="11">',
           f'<text x="8" y="18" font-size="13">safe-launch scale bench: {len(series)} N values, '
           f'load {load()}, {os.cpu_count()} cores</text>']
    for i, (key, label) in enumerate(panels):
        pts = [(s["n"], s[key]) for s in series if s.get(key) is not None]
        ox, oy = (i % cols) * w + 45, 30 + (i // cols) * h
        pw, ph = w - 60, h - 60
        out.append(f'<text x="{ox}" y="{oy + 14}">{label}</text>')
        out.append(f'<rect x="{ox}" y="{oy + 20}" width="{pw}" height="{ph}" fill="none" '
                   f'stroke="#999"/>')
        if not pts:
            continue
        import math
        xs = [math.log2(n) for n, _ in pts]
        ymax = max(v for _, v in pts) or 1
        x0, x1 = min(xs), max(xs) if max(xs) > min(xs) else min(xs) + 1
        coords = [(ox + (x - x0) / (x1 - x0) * pw, oy + 20 + ph - v / ymax * ph)
                  for x, (_, v) in zip(xs, pts)]
        out.append('<polyline fill="none" stroke="#1f77b4" stroke-width="2" points="' +
                   " ".join(f"{x:.1f},{y:.1f}" for x, y in coords) + '"/>')
        for (x, y), (n, v) in zip(coords, pts):
            out.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3" fill="#1f77b4"/>')
            out.append(f'<text x="{x:.1f}" y="{oy + 20 + ph + 14}" text-anchor="middle">{n}</text>')
            out.append(f'<text x="{x + 4:.1f}" y="{y - 4:.1f}" font-size="9">{v:.3g}</text>')
        out.append(f'<text x="{ox - 4}" y="{oy + 28}" text-anchor="end" font-size="9">'
                   f'{ymax:.3g}</text>')
    out.append("</svg>")
    with open(SVG, "w") as f:
        f.write("\n".join(out) + "\n")


def main():
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    print(f"scale bench: N = {' '.join(map(str, NS))}; {os.cpu_count()} cores, load {load()}, "
          f"{os.sysconf('SC_PHYS_PAGES') * os.sysconf('SC_PAGE_SIZE') / 2**30:.0f} GiB; "
          f"warm-up deadline {DEADLINE_S:.0f} s; 1 process per node (nproc_per_node 1)")
    rows = {n: {"n": n} for n in NS}
    if "warmup" not in SKIP:
        facts, odd = facts_of("roce-jumbo"), facts_of("roce-mtu1500")
        print("\n1. warm-up facts exchange (safe-launch-warmup-sim: real protocol and comparisons, "
              "simulator's store)")
        print("   arr->verdict / arr->report: last arrival (of a node at the store) -> every node "
              "holding the verdict / the job-wide report; node 0 CPU and peak RSS: node 0's "
              "process (store + comparison); sockets: node 0's peak")
        print(f"{'N':>5} {'arr->verdict':>12} {'arr->report':>11} {'node0 CPU':>9} "
              f"{'node0 RSS':>9} {'node RSS':>8} {'sockets':>7} {'report':>8} verdict | "
              f"odd node named (s) | missing node named (s)  load")
        for n in NS:
            ok = warmup_run(n, facts)
            odd_fig = warmup_run(n, facts, odd_facts=odd)
            miss = warmup_run(n, facts, missing=n // 2) if n > 1 else None
            named_odd = any(f"sim{n - 1:04d}" in f and "mtu" in f.lower() for f in odd_fig["findings"])
            named_miss = miss and any(f"node {n // 2}" in f for f in miss["findings"])
            rows[n].update(ok)
            rows[n]["odd_named"], rows[n]["odd_named_s"] = named_odd, odd_fig["first_start_to_verdict_s"]
            rows[n]["missing_named"] = bool(named_miss)
            rows[n]["missing_named_s"] = miss["first_start_to_verdict_s"] if miss else None
            print(f"{n:>5} {fmt(ok['last_arrival_to_verdict_s'], '12.3f')} "
                  f"{fmt(ok['last_arrival_to_report_s'], '11.3f')} {ok['node0_cpu_s']:9.2f} "
                  f"{ok['node0_peak_rss_mib']:8.1f}M {ok['node_median_rss_mib']:7.1f}M "
                  f"{ok['store_peak_sockets']:>7} {ok['report_bytes'] / 1024:7.0f}K "
                  f"{ok['verdict']} ({ok['verdicts']}/{n}) | "
                  f"{'yes' if named_odd else 'NO'} {fmt(odd_fig['first_start_to_verdict_s'], '.2f')} | "
                  f"{'yes' if named_miss else 'NO'} {fmt(rows[n]['missing_named_s'], '.2f')}  "
                  f"{load()}", flush=True)
            for fig in (ok, odd_fig):
                if fig["errors"]:
                    print("   errors on the nodes:", fig["errors"])
            if not named_odd or not named_miss:
                print("   odd run findings:", odd_fig["findings"][:3])
                print("   missing run findings:", (miss or {}).get("findings", [])[:3])
    if "capture" not in SKIP:
        print("\n2. coordinated capture (sl-scale-peer: real PeerChannel, poll 0.5 s, tick 0.1 s)")
        print("   ->all started: node 0's detection -> all bundles started (every other node); poll "
              "CPU: each node's CPU per second of running (median, max); node N-1 is killed "
              "before the detection (N > 2)")
        print(f"{'N':>5} {'->all started':>13} {'->median':>8} {'poll CPU ms/s':>13} "
              f"{'(max)':>6} bundles | killed node without a bundle  load")
        for n in NS:
            c = capture_run(n, kill=n - 1 if n > 2 else None)
            rows[n].update(c)
            print(f"{n:>5} {fmt(c['detect_to_all_started_s'], '13.2f')} "
                  f"{fmt(c['detect_to_median_started_s'], '8.2f')} "
                  f"{fmt(c['poll_cpu_ms_per_s_median'], '13.2f')} "
                  f"{fmt(c['poll_cpu_ms_per_s_max'], '6.2f')} {c['bundles_started']}/{n} | "
                  f"{', '.join(c['without_bundle']) or '-'}  {load()}", flush=True)
    if "diagnose" not in SKIP:
        src = real_run_dir()
        print("\n3. safe-launch diagnose RUN_ROOT (N copies of one real run directory with its "
              "hang bundle; the middle node without one)")
        print(f"{'N':>5} {'wall s':>7} {'CPU s':>6} {'peak RSS':>9} {'files':>7} {'MiB':>7} "
              f"{'files/node':>10} {'KiB/node':>8} top cause | nodes seen  load")
        for n in NS:
            g = diagnose_run(n, src)
            for k, v in g.items():
                rows[n]["diagnose_" + k if k in ("files", "mib", "top") else k] = v
            print(f"{n:>5} {g['wall_s']:7.2f} {g['cpu_s']:6.2f} {g['peak_rss_mib']:8.1f}M "
                  f"{g['files']:>7} {g['mib']:7.1f} {g['files_per_node']:10.1f} "
                  f"{g['kib_per_node']:8.0f} {g['top']} | {g['nodes_seen']}  {load()}", flush=True)
    series = [rows[n] for n in NS]
    svg(series)
    print(f"\ncurves: {SVG}")
    if os.environ.get("SCALE_JSON"):
        with open(os.environ["SCALE_JSON"], "w") as f:
            json.dump(series, f, indent=1)


if __name__ == "__main__":
    try:
        main()
    finally:
        cleanup()

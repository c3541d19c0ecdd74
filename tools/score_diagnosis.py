#!/usr/bin/env python3
"""Scores `safe-launch diagnose --json LOG` against the corpus labels of one split: top-1, top-3,
confirmed top-1 (labels of confidence high), expected calibration error (10 equal-width bins of
the top-1 probability), per category, and a confusion table. Development tooling
(bench/diagnose_corpus.sh runs it on the test split, then the train split).

A log labelled `unknown` counts as a hit when the answer is `unknown`.

usage: score_diagnosis.py --split test|train [--binary B] [--corpus DIR]
"""
import argparse
import concurrent.futures
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fit_diagnosis  # noqa: E402  (the same label reader)


def answer(binary, path):
    p = subprocess.run([binary, "diagnose", "--json", "--no-write", path], capture_output=True,
                       timeout=300)
    if p.returncode not in (0, 1):
        raise SystemExit(f"diagnose {path}: exit {p.returncode}: {p.stderr.decode(errors='replace')}")
    j = json.loads(p.stdout)
    return [(c["category"], float(c.get("probability", 0))) for c in j["causes"]]


def ece(pairs, bins=10):
    """pairs: (top-1 probability, hit) -> expected calibration error."""
    total, err = len(pairs), 0.0
    for b in range(bins):
        lo, hi = b / bins, (b + 1) / bins
        inb = [(p, h) for p, h in pairs if (lo <= p < hi) or (b == bins - 1 and p == 1.0)]
        if inb:
            conf = sum(p for p, _ in inb) / len(inb)
            acc = sum(h for _, h in inb) / len(inb)
            err += len(inb) / total * abs(conf - acc)
    return err


def pct(a, b):
    return f"{a}/{b} ({100.0 * a / b:.0f}%)" if b else "0/0"


def confusion(results):
    truths = sorted({t for t, _, _ in results})
    preds = sorted({p[0][0] for _, p, _ in results})
    short = {c: "".join(w[0] for w in c.split("_"))[:4] for c in set(truths) | set(preds)}
    head = "truth \\ top-1".ljust(28) + " ".join(short[p].rjust(4) for p in preds)
    lines = [head]
    for t in truths:
        row = [sum(1 for tt, p, _ in results if tt == t and p[0][0] == c) for c in preds]
        lines.append(t[:27].ljust(28) + " ".join((str(n) if n else ".").rjust(4) for n in row))
    lines.append("columns: " + ", ".join(f"{short[p]}={p}" for p in preds))
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--split", required=True, choices=("train", "test"))
    ap.add_argument("--binary", default=os.path.join(fit_diagnosis.ROOT, "build", "bin",
                                                     "safe-launch"))
    ap.add_argument("--corpus", default=os.path.join(fit_diagnosis.ROOT, "tests", "corpus"))
    args = ap.parse_args()
    rows = [r for r in fit_diagnosis.read_labels(args.corpus) if r["split"] == args.split]
    if not rows:
        print(f"no {args.split} rows in {args.corpus}")
        return 0
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        answers = list(pool.map(
            lambda r: answer(args.binary, fit_diagnosis.log_path(args.corpus, r["file"])), rows))
    results = [(r["root_cause"], a, r.get("confidence", "").strip() == "high")
               for r, a in zip(rows, answers)]
    n = len(results)
    top1 = sum(1 for t, a, _ in results if a[0][0] == t)
    top3 = sum(1 for t, a, _ in results if t in [c for c, _ in a[:3]])
    conf = [(t, a) for t, a, h in results if h]
    conf1 = sum(1 for t, a in conf if a[0][0] == t)
    cal = ece([(a[0][1], a[0][0] == t) for t, a, _ in results])
    unknown = sum(1 for _, a, _ in results if a[0][0] == "unknown")
    print(f"{args.split} split: {n} logs, {len({r['thread'] for r in rows})} threads")
    print(f"  top-1            {pct(top1, n)}")
    print(f"  top-3            {pct(top3, n)}")
    print(f"  confirmed top-1  {pct(conf1, len(conf))}  (labels of confidence high)")
    print(f"  ECE (10 bins)    {cal:.3f}  (top-1 probability against top-1 hits)")
    print(f"  answered unknown {unknown}")
    print("  per category (top-1 right / top-3 right / logs):")
    for c in sorted({t for t, _, _ in results}, key=lambda c: -sum(1 for t, _, _ in results
                                                                  if t == c)):
        mine = [(t, a) for t, a, _ in results if t == c]
        r1 = sum(1 for t, a in mine if a[0][0] == t)
        r3 = sum(1 for t, a in mine if t in [x for x, _ in a[:3]])
        print(f"    {c:<28} {r1:>3} / {r3:>3} / {len(mine):>3}")
    print("  confusion (rows: label, columns: top-1 answer):")
    for line in confusion(results).split("\n"):
        print("    " + line)
    return 0


if __name__ == "__main__":
    sys.exit(main())

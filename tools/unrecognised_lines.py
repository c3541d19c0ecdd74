#!/usr/bin/env python3
"""Lists failure-looking lines of the corpus's TRAIN split that no catalog row recognises,
normalised (numbers, addresses, paths) and counted by the threads they appear in, with the
labels of those threads: where a new catalog row (with its NCCL/PyTorch provenance) would give
the model a feature. Development tooling; never reads the test split.

usage: unrecognised_lines.py [--binary B] [--corpus DIR] [--top N]
"""
import argparse
import collections
import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fit_diagnosis  # noqa: E402

FAILURE = re.compile(r"error|fail|warn|exception|killed|timeout|timed out|refused|abort|"
                     r"unable|cannot|could not|invalid|mismatch|unhandled|fatal|denied|xid",
                     re.I)


def recognised_lines(binary, path):
    p = subprocess.run([binary, "diagnose", "--json", "--explain", "--no-write", path],
                       capture_output=True, timeout=300)
    j = json.loads(p.stdout)
    seen = set()
    for f in j.get("features", []):
        for line in f.get("lines", []):
            seen.add(line["line"])
    for r in j.get("rules_fired", []):
        for lines in r.get("conditions", {}).values():
            for line in lines:
                seen.add(line["line"])
    for s in j.get("symptoms", []):
        seen.add(s["first"]["line"])
    return seen


def normalise(line):
    line = re.sub(r"0x[0-9a-fA-F]+", "H", line)
    line = re.sub(r"(/[\w.\-]+)+", "/P", line)
    line = re.sub(r"\d+", "N", line)
    return line.strip()[:160]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--binary", default=os.path.join(fit_diagnosis.ROOT, "build", "bin",
                                                     "safe-launch"))
    ap.add_argument("--corpus", default=os.path.join(fit_diagnosis.ROOT, "tests", "corpus"))
    ap.add_argument("--top", type=int, default=60)
    args = ap.parse_args()
    rows = [r for r in fit_diagnosis.read_labels(args.corpus) if r["split"] == "train"]
    threads = collections.defaultdict(set)
    labels = collections.defaultdict(collections.Counter)
    for r in rows:
        path = fit_diagnosis.log_path(args.corpus, r["file"])
        seen = recognised_lines(args.binary, path)
        text = open(path, encoding="utf-8", errors="replace").read().split("\n")
        for n, line in enumerate(text, 1):
            if n in seen or not FAILURE.search(line):
                continue
            key = normalise(line)
            if r["thread"] not in threads[key]:
                threads[key].add(r["thread"])
                labels[key][r["root_cause"]] += 1
    ranked = sorted(threads, key=lambda k: -len(threads[k]))
    for k in ranked[:args.top]:
        top = ", ".join(f"{c} {n}" for c, n in labels[k].most_common(3))
        print(f"{len(threads[k]):>3}  {k}\n     [{top}]")
    return 0


if __name__ == "__main__":
    sys.exit(main())

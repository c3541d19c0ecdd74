#!/usr/bin/env python3
# Copyright 2026 The safe-launch Authors. SPDX-License-Identifier: Apache-2.0
"""Checks tests/corpus/LABELS.tsv and prints its counts.

    check_corpus.py [--table]

Fails (exit 1, naming the row) when a row has the wrong number of fields, a category outside the
vocabulary (doc/causes.md), a confidence other than high/low, a split other than train/test, a
log file that is missing, empty or not listed, or when a thread is in both splits or twice.
--table prints the per-category counts as the Markdown table of tests/corpus/README.md.
"""
import collections
import csv
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
COLS = ["file", "source", "thread", "root_cause", "confidence", "fix", "url", "split"]


def vocabulary():
    text = open(os.path.join(HERE, "..", "..", "doc", "causes.md"), encoding="utf-8").read() \
        if os.path.exists(os.path.join(HERE, "..", "..", "doc", "causes.md")) else ""
    # doc/causes.md names each category in a heading (## `name`); older copies used a table.
    names = set(re.findall(r"^(?:## |\| )`([a-z0-9_]+)`", text, re.M))
    return names


def main(argv):
    bad = []
    rows = []
    with open(os.path.join(HERE, "LABELS.tsv"), encoding="utf-8", newline="") as f:
        header = f.readline().rstrip("\n").split("\t")
        if header != COLS:
            bad.append(f"LABELS.tsv:1: header {header}, want {COLS}")
        for n, line in enumerate(f, start=2):
            fields = line.rstrip("\n").split("\t")
            if len(fields) != len(COLS):
                bad.append(f"LABELS.tsv:{n}: {len(fields)} fields, want {len(COLS)}")
                continue
            rows.append((n, dict(zip(COLS, fields))))
    vocab = vocabulary()
    threads = {}
    files = set()
    for n, r in rows:
        where = f"LABELS.tsv:{n} ({r['file']})"
        if vocab and r["root_cause"] not in vocab:
            bad.append(f"{where}: category {r['root_cause']!r} is not in doc/causes.md")
        if r["confidence"] not in ("high", "low"):
            bad.append(f"{where}: confidence {r['confidence']!r}, want high or low")
        if r["split"] not in ("train", "test"):
            bad.append(f"{where}: split {r['split']!r}, want train or test")
        key = r["thread"].lower()
        if key in threads:
            bad.append(f"{where}: thread {r['thread']} also in LABELS.tsv:{threads[key]}")
        threads[key] = n
        path = os.path.join(HERE, "logs", r["file"])
        if not os.path.isfile(path) or os.path.getsize(path) == 0:
            bad.append(f"{where}: logs/{r['file']} is missing or empty")
        files.add(r["file"])
    for name in sorted(os.listdir(os.path.join(HERE, "logs"))):
        if name not in files:
            bad.append(f"logs/{name}: not listed in LABELS.tsv")
    for b in bad:
        print("corpus:", b)
    if "--table" in argv:
        c = collections.Counter()
        for _, r in rows:
            c[(r["root_cause"], r["split"], r["confidence"])] += 1
        cats = sorted({r["root_cause"] for _, r in rows})
        print("| category | train | test | high | low | total |")
        print("|---|---|---|---|---|---|")
        for k in cats:
            tr = sum(v for (a, s, _), v in c.items() if a == k and s == "train")
            te = sum(v for (a, s, _), v in c.items() if a == k and s == "test")
            hi = sum(v for (a, _, h), v in c.items() if a == k and h == "high")
            print(f"| `{k}` | {tr} | {te} | {hi} | {tr + te - hi} | {tr + te} |")
        tr = sum(1 for _, r in rows if r["split"] == "train")
        hi = sum(1 for _, r in rows if r["confidence"] == "high")
        print(f"| **all** | {tr} | {len(rows) - tr} | {hi} | {len(rows) - hi} | {len(rows)} |")
    else:
        print(f"corpus: {len(rows)} logs, {len(threads)} threads, "
              f"{sum(1 for _, r in rows if r['split'] == 'test')} in the test split")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

#!/usr/bin/env python3
# Copyright 2026 The safe-launch Authors. SPDX-License-Identifier: Apache-2.0
"""Adds a batch of labelled logs to the corpus and assigns its split, once.

    add_batch.py DIR            move DIR/*.log into logs/ and append DIR/PENDING.tsv to LABELS.tsv
    add_batch.py --check P[,P...] recompute the split of the batch whose files start with P
                                (batch 1: a,b,c,d,s; batch 2: e; batch 3: f; batch 4: g)

DIR/PENDING.tsv has the columns of LABELS.tsv without `split`. The split is the README's rule,
applied to this batch alone: within each category of the batch, the threads sorted by the
SHA-256 (hex) of their `thread` id, the first 30% (rounded half up) are `test`, the rest `train`.
Earlier rows are never read for the split nor rewritten; the batch is refused (nothing moved)
when a thread or a file name is already in LABELS.tsv, a row is malformed, or a log is missing.
--check exits 1 when the rows of a batch in LABELS.tsv do not carry the split the rule gives.
"""
import collections
import hashlib
import math
import os
import shutil
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
COLS = ["file", "source", "thread", "root_cause", "confidence", "fix", "url", "split"]


def assign(rows):
    """rows: dicts with `thread` and `root_cause`. Returns {thread: split}."""
    by_cat = collections.defaultdict(list)
    for r in rows:
        by_cat[r["root_cause"]].append(r["thread"])
    split = {}
    for threads in by_cat.values():
        threads.sort(key=lambda t: hashlib.sha256(t.encode("utf-8")).hexdigest())
        n_test = math.floor(len(threads) * 0.3 + 0.5)
        for i, t in enumerate(threads):
            split[t] = "test" if i < n_test else "train"
    return split


def read_tsv(path, cols):
    rows, bad = [], []
    with open(path, encoding="utf-8", newline="") as f:
        header = f.readline().rstrip("\n").split("\t")
        if header != cols:
            bad.append(f"{path}:1: header {header}, want {cols}")
            return rows, bad
        for n, line in enumerate(f, start=2):
            fields = line.rstrip("\n").split("\t")
            if len(fields) != len(cols):
                bad.append(f"{path}:{n}: {len(fields)} fields, want {len(cols)}")
                continue
            rows.append(dict(zip(cols, fields)))
    return rows, bad


def add(batch_dir):
    labels = os.path.join(HERE, "LABELS.tsv")
    old, bad = read_tsv(labels, COLS)
    new, bad2 = read_tsv(os.path.join(batch_dir, "PENDING.tsv"), COLS[:-1])
    bad += bad2
    threads = {r["thread"].lower() for r in old}
    files = {r["file"] for r in old}
    seen = set()
    for r in new:
        t = r["thread"].lower()
        if t in threads:
            bad.append(f"{r['file']}: thread {r['thread']} is already in LABELS.tsv")
        if t in seen:
            bad.append(f"{r['file']}: thread {r['thread']} twice in the batch")
        seen.add(t)
        if r["file"] in files or os.path.exists(os.path.join(HERE, "logs", r["file"])):
            bad.append(f"{r['file']}: a log of that name is already in the corpus")
        src = os.path.join(batch_dir, r["file"])
        if not os.path.isfile(src) or os.path.getsize(src) == 0:
            bad.append(f"{r['file']}: {src} is missing or empty")
    if bad:
        for b in bad:
            print("add_batch:", b)
        return 1
    split = assign(new)
    with open(labels, "a", encoding="utf-8", newline="") as f:
        for r in new:
            f.write("\t".join([r[c] for c in COLS[:-1]] + [split[r["thread"]]]) + "\n")
    for r in new:
        shutil.move(os.path.join(batch_dir, r["file"]), os.path.join(HERE, "logs", r["file"]))
    os.remove(os.path.join(batch_dir, "PENDING.tsv"))
    n_test = sum(1 for s in split.values() if s == "test")
    print(f"add_batch: {len(new)} logs added, {n_test} in the test split")
    return 0


def check(prefix):
    rows, bad = read_tsv(os.path.join(HERE, "LABELS.tsv"), COLS)
    batch = [r for r in rows if r["file"].startswith(tuple(prefix.split(",")))]
    split = assign(batch)
    bad += [f"{r['file']}: split {r['split']}, the rule gives {split[r['thread']]}"
            for r in batch if r["split"] != split[r["thread"]]]
    for b in bad:
        print("add_batch:", b)
    print(f"add_batch: batch {prefix!r}: {len(batch)} logs, "
          f"{'split as the rule gives' if not bad else 'split differs'}")
    return 1 if bad or not batch else 0


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--check":
        sys.exit(check(sys.argv[2]))
    if len(sys.argv) == 2 and not sys.argv[1].startswith("-"):
        sys.exit(add(sys.argv[1]))
    print(__doc__, file=sys.stderr)
    sys.exit(2)

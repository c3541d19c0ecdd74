#!/usr/bin/env python3
"""Fits the diagnosis model on the corpus's train split; development tooling, not needed by CI.

The features are exactly what the C++ engine computes: `safe-launch diagnose --features --json LOG`
for every log of the train split (tests/corpus/LABELS.tsv, split == train), plus the vocabulary's
own pseudo-observations (`safe-launch diagnose --priors`: each rule, cause row and claim code by
itself, labelled with the category it names) at a small weight chosen by cross-validation.

The model is scikit-learn's L2-regularised multinomial LogisticRegression. C and the prior weight
are chosen by cross-validation grouped by thread on the train split only (no thread in two folds;
the pseudo-observations are always in the training folds); a temperature fitted on those
out-of-fold scores calibrates the probabilities. The table written (diagnose/model/
weights.tsv) holds the intercepts (priors) per category, the weight per (feature, category), the
temperature and a fingerprint of the training inputs (feature vectors, labels, vocabulary).
The test split is never read here.

usage: fit_diagnosis.py [--binary B] [--corpus DIR] [--out TSV] [--misses]
           fit and write the table (--misses: list the train logs cross-validation gets wrong)
       fit_diagnosis.py --check [--binary B] [--corpus DIR] [--out TSV]
           recompute the fingerprint only (no scikit-learn) and exit 1 when the table is stale
"""
import argparse
import concurrent.futures
import csv
import hashlib
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REFIT = "bash scripts/fit-diagnosis.sh"


def read_labels(corpus):
    """The rows of LABELS.tsv as dicts; split defaults to train, thread to the source."""
    path = os.path.join(corpus, "LABELS.tsv")
    if not os.path.exists(path):
        path = os.path.join(corpus, "logs", "LABELS.tsv")
    with open(path, newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE))
    for r in rows:
        r["split"] = (r.get("split") or "train").strip()
        r["thread"] = (r.get("thread") or r.get("source") or r["file"]).strip()
        r["root_cause"] = r["root_cause"].strip()
    return rows


def log_path(corpus, name):
    return os.path.join(corpus, "logs", name)


def features_of(binary, path):
    p = subprocess.run([binary, "diagnose", "--features", "--json", path],
                       capture_output=True, timeout=300)
    if p.returncode != 0:
        raise SystemExit(f"{binary} diagnose --features {path}: exit {p.returncode}: "
                         f"{p.stderr.decode(errors='replace')}")
    return json.loads(p.stdout)["features"]


def all_features(binary, corpus, rows, jobs=2):
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        futures = [pool.submit(features_of, binary, log_path(corpus, r["file"])) for r in rows]
        return [f.result() for f in futures]


def priors_of(binary):
    p = subprocess.run([binary, "diagnose", "--priors"], capture_output=True, timeout=60,
                       check=True)
    return json.loads(p.stdout)["priors"]


def vocabulary_categories():
    """The cause categories of common/cause.cpp, in order (the table's own text)."""
    import re
    text = open(os.path.join(ROOT, "common", "cause.cpp"), encoding="utf-8").read()
    return re.findall(r'^    \{"([a-z_0-9]+)",', text, re.M)


def training_inputs(binary, corpus):
    """(rows, feature dicts, labels, priors) of the train split's labelled causes."""
    causes = set(vocabulary_categories())
    rows = [r for r in read_labels(corpus) if r["split"] == "train" and r["root_cause"] in causes]
    rows.sort(key=lambda r: r["file"])
    feats = all_features(binary, corpus, rows)
    return rows, feats, [r["root_cause"] for r in rows], priors_of(binary)


def fingerprint(rows, feats, labels, priors):
    """sha256 of the training inputs: every log's feature vector and label, the pseudo-
    observations and the feature vocabulary, in a canonical text."""
    h = hashlib.sha256()
    vocab = set()
    for r, f, y in zip(rows, feats, labels):
        vocab.update(f)
        h.update(("log\t%s\t%s\t%s\n" % (r["file"], y, ",".join(
            "%s=%.6g" % (k, f[k]) for k in sorted(f)))).encode())
    for p in sorted(priors, key=lambda p: (p["id"], p["category"], p.get("weight", -1))):
        vocab.update(p["features"])
        weight = "" if "weight" not in p else "\t%.6g" % p["weight"]
        h.update(("prior\t%s\t%s%s\t%s\n" % (p["id"], p["category"], weight, ",".join(
            "%s=%.6g" % (k, p["features"][k]) for k in sorted(p["features"])))).encode())
    h.update(("vocabulary\t" + ",".join(sorted(vocab)) + "\n").encode())
    return h.hexdigest()


def table_meta(path):
    meta = {}
    if os.path.exists(path):
        for line in open(path, encoding="utf-8"):
            cols = line.rstrip("\n").split("\t")
            if len(cols) == 3 and cols[0] == "meta":
                meta[cols[1]] = cols[2]
    return meta


# ---- the fit (scikit-learn, imported only here) ----

def softmax(s, t=1.0):
    import numpy as np
    z = s / t
    z = z - z.max(axis=1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)


def design(feats, priors, vocab):
    import numpy as np
    index = {k: i for i, k in enumerate(vocab)}
    x = np.zeros((len(feats) + len(priors), len(vocab)))
    for i, f in enumerate(list(feats) + [p["features"] for p in priors]):
        for k, v in f.items():
            if k in index:
                x[i, index[k]] = v
    return x


def fit_one(x, y, w, c, class_weight):
    from sklearn.linear_model import LogisticRegression
    m = LogisticRegression(C=c, class_weight=class_weight, max_iter=5000)
    m.fit(x, y, sample_weight=w)
    return m


def scores(m, x, classes):
    """Scores per class of `classes`; a class the fold's training data lacks scores far below."""
    import numpy as np
    raw = m.decision_function(x)
    if raw.ndim == 1:  # two classes: sklearn gives one column
        raw = np.stack([-raw / 2, raw / 2], axis=1)
    out = np.full((x.shape[0], len(classes)), -1e3)
    for j, c in enumerate(m.classes_):
        out[:, classes.index(c)] = raw[:, j]
    return out


def cross_validate(x, labels, groups, n_logs, prior_labels, prior_conf, c, pw, cw, classes,
                   folds):
    """Out-of-fold scores of the real logs, grouped by thread; priors always train."""
    import numpy as np
    from sklearn.model_selection import GroupKFold
    y = np.array(list(labels) + list(prior_labels))
    w = np.array([1.0] * n_logs + [pw * c for c in prior_conf])
    oof = np.zeros((n_logs, len(classes)))
    for tr, te in GroupKFold(n_splits=folds).split(np.zeros(n_logs), labels[:n_logs], groups):
        idx = np.concatenate([tr, np.arange(n_logs, len(y))])
        m = fit_one(x[idx], y[idx], w[idx], c, cw)
        oof[te] = scores(m, x[te], classes)
    return oof


def metrics(s, labels, classes, t=1.0):
    import numpy as np
    p = softmax(s, t)
    truth = np.array([classes.index(y) for y in labels])
    order = np.argsort(-p, axis=1)
    top1 = float(np.mean(order[:, 0] == truth))
    top3 = float(np.mean([truth[i] in order[i, :3] for i in range(len(truth))]))
    nll = float(-np.mean(np.log(np.maximum(p[np.arange(len(truth)), truth], 1e-12))))
    return top1, top3, nll


def oof_ece(s, labels, classes, t, bins=10):
    """Expected calibration error of the out-of-fold top-1 probabilities (10 equal bins), the
    figure bench/diagnose_corpus.sh reports on the test split."""
    import numpy as np
    p = softmax(s, t)
    top = p.max(axis=1)
    hit = p.argmax(axis=1) == np.array([classes.index(y) for y in labels])
    err = 0.0
    for b in range(bins):
        inb = (top >= b / bins) & ((top < (b + 1) / bins) | (b == bins - 1))
        if inb.any():
            err += inb.mean() * abs(top[inb].mean() - hit[inb].mean())
    return float(err)


def print_misses(s, rows, labels, classes, t):
    """The train logs the out-of-fold model gets wrong: what to read next (--misses)."""
    import numpy as np
    p = softmax(s, t)
    for i, r in enumerate(rows):
        order = np.argsort(-p[i])
        if classes[order[0]] == labels[i]:
            continue
        rank = [classes[k] for k in order].index(labels[i]) + 1
        print(f"  miss {r['file']:10} truth {labels[i]:28} (rank {rank}) top "
              f"{classes[order[0]]} {p[i, order[0]]:.2f}", file=sys.stderr)


def fit_temperature(s, labels, classes):
    from scipy.optimize import minimize_scalar
    r = minimize_scalar(lambda t: metrics(s, labels, classes, t)[2], bounds=(0.05, 20),
                        method="bounded")
    return float(r.x)


def choose(x, labels, groups, n_logs, prior_labels, prior_conf, classes):
    """The grid point to fit: among those whose grouped-CV top-1 is within one log of the best
    (differences the size of one log are noise on a few hundred logs), the one of lowest log
    loss (the proper score, which moves with every log's probability, not only with the few at
    a rank boundary), then the better top-3."""
    folds = min(5, len(set(groups)))
    results = []
    for c in (0.03, 0.1, 0.3, 1.0, 3.0, 10.0):
        for pw in (0.3, 1.0, 3.0, 10.0, 30.0):
            # class_weight "balanced" is left out: it multiplies the weight of the thinnest
            # categories' few logs (rail_topology_cross_nic: 4 train logs, x5) until a plain
            # status-12 completion reads as rail routing rather than the fabric, which the
            # engine and verdict tests (tests/unit/diagnose) reject as an expert would.
            for cw in (None,):
                oof = cross_validate(x, labels, groups, n_logs, prior_labels, prior_conf, c, pw,
                                     cw, classes, folds)
                top1, top3, nll = metrics(oof, labels, classes)
                print(f"  C={c:<5} prior_weight={pw:<4} class_weight={cw}: CV top-1 {top1:.3f} "
                      f"top-3 {top3:.3f} log-loss {nll:.3f}", file=sys.stderr)
                results.append((top1, top3, nll, c, pw, cw, oof))
    best_top1 = max(r[0] for r in results)
    near = [r for r in results if r[0] >= best_top1 - 1.0 / n_logs - 1e-9]
    top1, top3, nll, c, pw, cw, oof = min(near, key=lambda r: (round(r[2], 4), -r[1]))
    return (round(top1, 4), round(top3, 4), -nll), c, pw, cw, oof


def write_table(path, m, classes, vocab, t, meta):
    import numpy as np
    coef = np.zeros((len(classes), m.coef_.shape[1]))
    icpt = np.full(len(classes), -30.0)
    for j, c in enumerate(m.classes_):
        coef[classes.index(c)] = m.coef_[j]
        icpt[classes.index(c)] = m.intercept_[j]
    lines = ["# The fitted diagnosis model (tools/fit_diagnosis.py); do not edit. Refit: " + REFIT,
             "# meta KEY VALUE | class CATEGORY INTERCEPT | weight FEATURE CATEGORY WEIGHT"]
    for k in sorted(meta):
        lines.append(f"meta\t{k}\t{meta[k]}")
    lines.append(f"meta\ttemperature\t{t:.6g}")
    for c, b in zip(classes, icpt):
        lines.append(f"class\t{c}\t{b:.6g}")
    for i, feature in enumerate(vocab):
        for k, c in enumerate(classes):
            if abs(coef[k, i]) >= 1e-4:
                lines.append(f"weight\t{feature}\t{c}\t{coef[k, i]:.6g}")
    with open(path + ".tmp", "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    os.replace(path + ".tmp", path)


def fit(args):
    import numpy as np
    rows, feats, labels, priors = training_inputs(args.binary, args.corpus)
    if not rows:
        raise SystemExit(f"no labelled train logs in {args.corpus}")
    fp = fingerprint(rows, feats, labels, priors)
    vocab = sorted(set(k for f in feats for k in f) | set(k for p in priors for k in p["features"]))
    order = vocabulary_categories()
    prior_labels = [p["category"] for p in priors]
    # A pseudo-observation weighs as much as its source trusts it (the rule's, row's or claim
    # code's confidence: its engine:<category> value).
    # An expert's alternative (engine.cpp kAlternatives) carries its own weight.
    prior_conf = [p["weight"] if "weight" in p else p["features"].get("engine:" + p["category"], 0.5)
                  for p in priors]
    classes = [c for c in order if c in set(labels) | set(prior_labels)]
    x = design(feats, priors, vocab)
    groups = [r["thread"] for r in rows]
    print(f"{len(rows)} train logs, {len(set(groups))} threads, {len(priors)} pseudo-observations, "
          f"{len(vocab)} features, {len(classes)} classes", file=sys.stderr)
    key, c, pw, cw, oof = choose(x, labels, groups, len(rows), prior_labels, prior_conf, classes)
    t = fit_temperature(oof, labels, classes)
    top1, top3, nll = metrics(oof, labels, classes, t)
    print(f"chosen C={c} prior_weight={pw} class_weight={cw} temperature={t:.3f}: CV top-1 "
          f"{top1:.3f} top-3 {top3:.3f} log-loss {nll:.3f} ECE "
          f"{oof_ece(oof, labels, classes, t):.3f}", file=sys.stderr)
    if args.misses:
        print_misses(oof, rows, labels, classes, t)
    y = np.array(labels + prior_labels)
    w = np.array([1.0] * len(rows) + [pw * c for c in prior_conf])
    m = fit_one(x, y, w, c, cw)
    meta = {"fingerprint": fp, "C": f"{c:g}", "prior_weight": f"{pw:g}",
            "class_weight": str(cw), "train_logs": str(len(rows)),
            "train_threads": str(len(set(groups))), "features": str(len(vocab)),
            "corpus": os.path.relpath(os.path.abspath(args.corpus), ROOT),
            "cv_top1": f"{top1:.3f}", "cv_top3": f"{top3:.3f}"}
    write_table(args.out, m, classes, vocab, t, meta)
    print(f"wrote {os.path.relpath(args.out, ROOT)} (fingerprint {fp[:12]})", file=sys.stderr)


def check(args):
    rows, feats, labels, priors = training_inputs(args.binary, args.corpus)
    fp = fingerprint(rows, feats, labels, priors)
    have = table_meta(args.out).get("fingerprint", "")
    if fp != have:
        print(f"{os.path.relpath(args.out, ROOT)} is stale: the training inputs' fingerprint is "
              f"{fp[:12]}, the table's {have[:12] or 'none'} (a catalog row, rule, feature or "
              f"label changed). Refit: {REFIT}", file=sys.stderr)
        return 1
    print(f"{os.path.relpath(args.out, ROOT)} is current ({len(rows)} train logs, "
          f"fingerprint {fp[:12]})")
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--binary", default=os.path.join(ROOT, "build", "bin", "safe-launch"))
    ap.add_argument("--corpus", default=None, help="default: tests/corpus, else the fixtures")
    ap.add_argument("--out", default=os.path.join(ROOT, "diagnose", "model", "weights.tsv"))
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--misses", action="store_true",
                    help="list the train logs the cross-validated model gets wrong")
    args = ap.parse_args()
    if args.corpus is None:
        args.corpus = next(os.path.join(ROOT, c) for c in ("tests/corpus", "tests/fixtures/corpus")
                           if os.path.isdir(os.path.join(ROOT, c, "logs")))
    return check(args) if args.check else fit(args)


if __name__ == "__main__":
    sys.exit(main() or 0)

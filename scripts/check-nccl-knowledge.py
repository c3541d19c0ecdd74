#!/usr/bin/env python3
"""Checks that NCCL knowledge lives in nccl/ only (issue 27): every other module asks nccl/ how
NCCL reads a variable, which ports it listens on and which interfaces it picks or shuns.

It reads the tracked C++ files (.cpp, .h, .inc) of every module but nccl/ and common/ (common/ is
below nccl/ and cannot include it), not tests/ (tests state expected figures on their own), and
reports, one line each as path:line: rule: text,

  env-read     a string literal that is exactly an NCCL/torch variable name (NCCL_*, TORCH_NCCL_*,
               TORCH_FR_*) inside a call that reads the environment -- Lookup(, getenv(,
               IntParam(, PathPrefix( -- on the same line: the value is parsed outside nccl/.
  name-table   a braced list that starts with such a name literal followed by another one or by
               the end of the line ({"NCCL_NET", "NCCL_ALGO" ...): a table of variables kept
               outside the registry. A settings row ({"TORCH_FR_BUFFER_SIZE", "2000", ...}) is not.
  name-compare such a name literal compared with == or != (a rule about one variable's value).
  ras-port     the number 28028 (NCCL's RAS port), in code or comments: use nccl::kRasPort.
  interface    an interface-name literal of NCCL's order or the non-routable list ("docker",
               "virbr", "veth", "br-", "cni", "flannel", "tun", "tap", "cali", "weave",
               "kube-bridge", "lo", "ib") in code, comments and the text of messages aside.

Mentions in messages ("set NCCL_IB_HCA=...") and comments never count for the name rules: those
rules look at literals that are a bare name. ALLOWED lists the exceptions, each with its reason.
Exit 1 when anything is found.
"""
import os
import re
import subprocess
import sys

NAME = r'"(?:NCCL|TORCH_NCCL|TORCH_FR)_[A-Z0-9_]+"'
RULES = [
    ("env-read", re.compile(r'\b(?:Lookup|getenv|IntParam|PathPrefix)\s*\([^;]*' + NAME)),
    ("name-table", re.compile(r'\{\s*' + NAME + r'\s*,\s*(?:' + NAME + r'|$)')),
    ("name-compare", re.compile(r'(?:[!=]=\s*' + NAME + r'|' + NAME + r'\s*[!=]=)')),
    ("interface", re.compile(r'"(?:docker|virbr|veth|br-|cni|flannel|tun|tap|cali|weave|'
                             r'kube-bridge|lo|ib)"')),
]
RAS_PORT = re.compile(r'\b28028\b')
SKIP_DIRS = ("nccl/", "common/", "tests/", "bench/")
# path -> reason. Each entry is a debt with an owner, not a licence.
ALLOWED: dict = {}


def strip_comments_and_messages(line, in_block):
    """The code of one line: comments removed, string literals kept only when they are a bare
    identifier-like token (names, interface prefixes), so prose in messages never matches."""
    out, i, n = [], 0, len(line)
    while i < n:
        if in_block:
            end = line.find("*/", i)
            if end < 0:
                return "".join(out), True
            i, in_block = end + 2, False
            continue
        c = line[i]
        if line.startswith("//", i):
            break
        if line.startswith("/*", i):
            in_block, i = True, i + 2
            continue
        if c == '"':
            j = i + 1
            while j < n and line[j] != '"':
                j += 2 if line[j] == "\\" else 1
            literal = line[i:j + 1]
            out.append(literal if re.fullmatch(r'"[A-Za-z0-9_\-]*"', literal) else '""')
            i = j + 1
            continue
        if c == "'":
            j = line.find("'", i + 2 if i + 1 < n and line[i + 1] == "\\" else i + 1)
            j = n - 1 if j < 0 else j
            out.append(line[i:j + 1])
            i = j + 1
            continue
        out.append(c)
        i += 1
    return "".join(out), in_block


def tracked_files(root):
    try:
        files = subprocess.run(["git", "-C", root, "ls-files"], check=True, capture_output=True,
                               text=True).stdout.split("\n")
    except (OSError, subprocess.CalledProcessError):
        files = []
        for dp, _, names in os.walk(root):
            files += [os.path.relpath(os.path.join(dp, f), root) for f in names]
    return sorted(f for f in files if f.endswith((".cpp", ".h", ".inc")) and "/" in f
                  and not f.startswith(SKIP_DIRS) and not f.startswith("build"))


def check_file(root, rel):
    found = []
    in_block = False
    with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as fh:
        for n, raw in enumerate(fh, 1):
            if RAS_PORT.search(raw):
                found.append(f"{rel}:{n}: ras-port: {raw.strip()}")
            code, in_block = strip_comments_and_messages(raw.rstrip("\n"), in_block)
            for rule, rx in RULES:
                if rx.search(code):
                    found.append(f"{rel}:{n}: {rule}: {raw.strip()}")
    return found


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(
        os.path.dirname(os.path.abspath(__file__)))
    bad = 0
    for rel in tracked_files(root):
        if not os.path.isfile(os.path.join(root, rel)):
            continue
        hits = check_file(root, rel)
        if rel in ALLOWED:
            for h in hits:
                print(f"allowed: {h} ({ALLOWED[rel]})")
            continue
        for h in hits:
            print(h)
        bad += len(hits)
    print(f"{bad} place(s) with NCCL knowledge outside nccl/"
          + ("" if not bad else ": move the rule or constant into nccl/ and call it from here"))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Lists C++ functions longer than a limit (default 80 lines, body braces included).

The architecture rule (doc/manual.md, "Layout"): no function longer than ~80 lines except data
tables. Data tables are initialisers (`= {`), never function bodies, so they are not counted.
Usage: scripts/long-functions.py [--limit N] [--allow FILE:FUNC ...] [DIR...]
Exit 1 when a function over the limit is not allowed. A heuristic brace matcher, not a parser:
comments, strings and character literals are blanked first.
"""
import argparse
import os
import re
import sys

CONTROL = re.compile(r"\b(if|for|while|switch|catch|do|else|try)\s*(\(|$)")
SIGNATURE = re.compile(
    r"([~\w:<>,*&\s]+?)\b([~\w]+(?:::[~\w]+)*|operator\S+)\s*\((?:[^()]|\([^()]*\))*\)\s*"
    r"(?:const\s*)?(?:noexcept\s*)?(?:override\s*)?(?:final\s*)?(?:->\s*[\w:<>,*&\s]+)?"
    r"(?::[^{;]*)?$", re.S)


def blank(text):
    """Comments, strings and char literals replaced by spaces (newlines kept)."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif text.startswith('R"', i):
            m = re.match(r'R"([^(]*)\(', text[i:])
            end = text.find(")" + (m.group(1) if m else "") + '"', i)
            j = n if end < 0 else end + len(m.group(1) if m else "") + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            out.append(c + " " * (j - i - 1) + c)
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def functions(path):
    text = blank(open(path, encoding="utf-8", errors="replace").read())
    stack = []  # per open brace: (kind, name, start_line)
    last = 0    # index after the last ; { or }
    line = 1
    for i, c in enumerate(text):
        if c == "\n":
            line += 1
        elif c == "{":
            head = text[last:i].strip()
            in_function = any(k == "fn" for k, _, _ in stack)
            head_tail = head.split("\n")[-3:]
            kind = "block"
            if not in_function and head and not head.endswith("=") and not CONTROL.search(head):
                m = SIGNATURE.search(head)
                if m and not re.match(r"^(namespace|struct|class|enum|union|extern)\b", head):
                    kind = "fn"
                    stack.append((kind, m.group(2), line))
                    last = i + 1
                    continue
            stack.append((kind, "", line))
            last = i + 1
        elif c == "}":
            if stack:
                kind, name, start = stack.pop()
                if kind == "fn":
                    yield name, start, line - start + 1
            last = i + 1
        elif c == ";":
            last = i + 1


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--limit", type=int, default=80)
    ap.add_argument("--allow", nargs="*", default=[])
    ap.add_argument("dirs", nargs="*")
    a = ap.parse_args()
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    dirs = a.dirs or [os.path.join(root, d) for d in
                      ("common", "nccl", "preflight", "recipes", "warmup", "watchdog", "diagnose",
                       "launcher")]
    bad = 0
    for d in dirs:
        for dp, _, files in os.walk(d):
            for f in sorted(files):
                if not f.endswith((".cpp", ".h")):
                    continue
                p = os.path.join(dp, f)
                rel = os.path.relpath(p, root)
                for name, start, n in functions(p):
                    if n > a.limit:
                        allowed = f"{rel}:{name}" in a.allow
                        print(f"{rel}:{start}: {name} is {n} lines"
                              f"{' (allowed)' if allowed else ''}")
                        bad += not allowed
    print(f"{bad} function(s) over {a.limit} lines")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

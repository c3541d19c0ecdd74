#!/usr/bin/env python3
"""Checks the dependency rule of README.md "Layout" on every #include "module/..." line:
launcher -> {preflight, recipes, warmup, watchdog, diagnose} -> nccl -> common, watchdog may use
diagnose, nothing includes anything above it or a sibling. Exit 1 and one line per violation.
"""
import os
import re
import sys

RANK = {"common": 0, "nccl": 1, "preflight": 2, "recipes": 2, "warmup": 2, "watchdog": 2,
        "diagnose": 2, "launcher": 3}
ALLOWED = {("watchdog", "diagnose")}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([a-z_]+)/')


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    bad = 0
    for module in RANK:
        for dp, _, files in os.walk(os.path.join(root, module)):
            for f in sorted(files):
                if not f.endswith((".cpp", ".h", ".inc")):
                    continue
                path = os.path.join(dp, f)
                for n, line in enumerate(open(path, encoding="utf-8", errors="replace"), 1):
                    m = INCLUDE.match(line)
                    if not m or m.group(1) not in RANK or m.group(1) == module:
                        continue
                    dep = m.group(1)
                    if RANK[dep] < RANK[module] and (RANK[dep] < 2 or RANK[module] == 3):
                        continue
                    if (module, dep) in ALLOWED:
                        continue
                    print(f"{os.path.relpath(path, root)}:{n}: {module}/ must not include {dep}/"
                          f" ({line.strip()})")
                    bad += 1
    print(f"{bad} layering violation(s)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

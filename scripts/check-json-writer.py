#!/usr/bin/env python3
"""Every JSON text safe-launch writes goes through sl::JsonText (common/json_text.h), which
replaces invalid UTF-8 instead of throwing: no nlohmann::json::dump() call anywhere else in the
sources. Exit 1 and one line per violation.
"""
import os
import re
import sys

MODULES = ("common", "nccl", "preflight", "recipes", "warmup", "watchdog", "diagnose", "launcher")
DUMP = re.compile(r"\.dump\(")
ALLOWED = {os.path.join("common", "json_text.cpp")}


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    bad = 0
    for module in MODULES:
        for dp, _, files in os.walk(os.path.join(root, module)):
            for f in sorted(files):
                if not f.endswith((".cpp", ".h", ".inc")):
                    continue
                path = os.path.join(dp, f)
                rel = os.path.relpath(path, root)
                if rel in ALLOWED:
                    continue
                for n, line in enumerate(open(path, encoding="utf-8", errors="replace"), 1):
                    code = line.split("//", 1)[0]
                    if DUMP.search(code):
                        print(f"{rel}:{n}: json dump() outside JsonText: {line.strip()}")
                        bad += 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

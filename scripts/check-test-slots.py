#!/usr/bin/env python3
"""Every ctest test of a build tree takes a `cores` slot (RESOURCE_GROUPS cores:1) or is labelled
`waits` (tests/CMakeLists.txt, "Scheduling"): a tests CMakeLists.txt that forgets
sl_test_resources() would let scripts/test.sh run its tests beyond the CPUs. Exit 1 and one line
per test with neither.
usage: check-test-slots.py BUILD_DIR
"""
import json
import subprocess
import sys


def main():
    out = subprocess.run(["ctest", "--test-dir", sys.argv[1], "--show-only=json-v1"],
                         check=True, capture_output=True, text=True).stdout
    bad = 0
    for t in json.loads(out)["tests"]:
        props = {p["name"]: p["value"] for p in t.get("properties", [])}
        slots = [r for g in props.get("RESOURCE_GROUPS", []) for r in g.get("requirements", [])
                 if r.get(".type") == "cores"]
        if not slots and "waits" not in props.get("LABELS", []):
            print(f"{t['name']}: neither a cores slot nor the waits label")
            bad += 1
    print(f"{bad} test(s) without a slot")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

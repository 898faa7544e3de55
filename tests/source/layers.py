#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""The floors of the house (docs/architecture.md): checks/ stands on src/, src/ on include/.

1. No file of include/ includes a header of src/ or checks/.
2. No file of src/ includes a header of checks/: what the commands need of the probes is declared
   in include/halo (builtin_probes in probe.hpp, plan::measure in plan.hpp) and linked in.

A quoted include is looked up beside the including file, then in every folder of src/ and checks/
(CMake's include folders of halo_core and halo_checks); an angled one under include/.

Usage: layers.py SOURCE_DIR. Exit 0 when both hold, 1 with one line per finding.
"""
import pathlib
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^">]+)[">]', re.M)


def main():
    src = pathlib.Path(sys.argv[1])
    checks_headers = {p.name for p in (src / "checks").rglob("*.hpp")}
    src_headers = {p.name for p in (src / "src").rglob("*.hpp")}
    findings = []
    for floor, forbidden in (("include", {"src", "checks"}), ("src", {"checks"})):
        for f in sorted((src / floor).rglob("*")):
            if f.suffix not in (".hpp", ".cpp", ".h", ".in"):
                continue
            rel = f.relative_to(src).as_posix()
            for kind, name in INCLUDE.findall(f.read_text(errors="replace")):
                if kind == "<":
                    continue
                if (f.parent / name).exists():
                    where = (f.parent / name).resolve().relative_to(src.resolve()).parts[0]
                elif pathlib.PurePosixPath(name).name in src_headers:
                    where = "src"
                elif (src / "checks" / name).exists() or pathlib.PurePosixPath(name).name in checks_headers:
                    where = "checks"
                else:
                    continue
                if where in forbidden:
                    findings.append(f"{rel}: includes \"{name}\" of {where}/, a floor above {floor}/")
    for line in findings:
        print(line)
    if not findings:
        print("layers: include/ includes nothing of src/ or checks/, src/ nothing of checks/")
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())

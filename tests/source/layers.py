#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""The floors of the house (docs/architecture.md): checks/ stands on src/'s core, src/ on include/,
and only the program's top names checks/ (issue 42 item 4).

1. No file of include/ includes a header of src/ or checks/.
2. No file of src/ includes a header of checks/ (checks/include/halo/checks.hpp included), except
   the program's top: src/cli (which assembles the probe set and hands it to the doctor) and
   src/tools (the build-time compilers, which load the rules against the probes' declarations).
3. In CMakeLists.txt, halo_core and halo_doctor link nothing of halo_checks: the dependency is
   the program's, visible where the program is linked.

A quoted include is looked up beside the including file, then in every folder of src/ and checks/;
an angled one under include/, except <halo/checks.hpp>, which is checks/'s one public header.

Usage: layers.py SOURCE_DIR. Exit 0 when all hold, 1 with one line per finding.
"""
import pathlib
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^">]+)[">]', re.M)
LINK = re.compile(r'target_link_libraries\(\s*(\w+)([^)]*)\)', re.S)
TOP = ("src/cli/", "src/tools/")


def where_of(src, f, kind, name, src_headers, checks_headers):
    if kind == "<":
        if (src / "checks" / "include" / name).exists():
            return "checks"
        return None
    if (f.parent / name).exists():
        return (f.parent / name).resolve().relative_to(src.resolve()).parts[0]
    if pathlib.PurePosixPath(name).name in src_headers:
        return "src"
    if (src / "checks" / name).exists() or pathlib.PurePosixPath(name).name in checks_headers:
        return "checks"
    return None


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
            if floor == "src" and rel.startswith(TOP):
                continue
            for kind, name in INCLUDE.findall(f.read_text(errors="replace")):
                where = where_of(src, f, kind, name, src_headers, checks_headers)
                if where in forbidden:
                    findings.append(f"{rel}: includes \"{name}\" of {where}/, a floor above {floor}/")
    cmake = (src / "CMakeLists.txt").read_text()
    for target, libs in LINK.findall(cmake):
        if target in ("halo_core", "halo_doctor") and re.search(r"\bhalo_checks\b", libs):
            findings.append(f"CMakeLists.txt: {target} links halo_checks; only the program's top may")
    for line in findings:
        print(line)
    if not findings:
        print("layers: include/ includes nothing of src/ or checks/; src/ below its top (src/cli,"
              " src/tools) nothing of checks/; halo_core and halo_doctor link no halo_checks")
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())

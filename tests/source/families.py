#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""One home per fact family (issue 33): every probe and derivation lives in the folder of checks/
of the families it provides.

The map is src/core/fact_families.cpp (halo::fact_families(): a key's first segment -> a folder
of checks/); the probes and their declarations come from the binary (`facts --declared --format
json`), and each probe's file from the source (the factory that builds it names its id).

1. Every built-in probe is built in exactly one file, under checks/<folder>/.
2. Every key pattern it provides belongs to a family of the map whose folder is that folder: so
   no family is provided from two folders, and no pattern by two probes in different folders.
3. No probe reads a `**` pattern (its inputs are exact keys or `*` patterns, so the read audit,
   FactSet::ReadGuard, sees what it reads).
4. No file in checks/ is longer than MAX_LINES lines (the largest is printed).
5. The tests of the probes follow the same folders: every test file of tests/probes/ is in a folder
   named after a folder of the map (tests/probes/gpus/ tests checks/gpus/), none loose at its top.

Usage: families.py SOURCE_DIR HALO_DOCTOR. Exit 0 when all hold, 1 with one line per finding.
"""
import json
import pathlib
import re
import subprocess
import sys

MAX_LINES = 700
FAMILY = re.compile(r'^\s*\{"([a-z_0-9]+)",\s*"([a-z_0-9]+)"\},', re.M)
FACTORY = re.compile(r'make_unique<Basic(?:Probe|Derivation)>\(\s*"([a-z_0-9]+)"')


def main():
    src = pathlib.Path(sys.argv[1])
    binary = sys.argv[2]
    findings = []
    families = dict(FAMILY.findall((src / "src/core/fact_families.cpp").read_text()))
    if len(families) < 10:
        findings.append("src/core/fact_families.cpp: could not read the family map")
    declared = json.loads(subprocess.run([binary, "facts", "--declared", "--format", "json"],
                                         check=True, capture_output=True, text=True).stdout)
    files = {}
    for f in sorted((src / "checks").rglob("*.cpp")):
        for pid in FACTORY.findall(f.read_text()):
            files.setdefault(pid, []).append(f.relative_to(src).as_posix())
    provided_by = {}
    for probe in declared:
        pid = probe["probe"]
        if pid == "registry":  # the registry's own probe.*.status, in src/core
            continue
        where = files.get(pid, [])
        if len(where) != 1:
            findings.append(f"probe {pid}: built in {len(where)} files of checks/ ({where})")
            continue
        parts = where[0].split("/")
        folder = parts[1] if len(parts) == 3 else ""
        for fact in probe["facts"]:
            pattern = fact["pattern"]
            prefix = pattern.split(".")[0]
            want = families.get(prefix)
            if want is None:
                findings.append(f"{where[0]}: probe {pid} provides {pattern}, of family '{prefix}' "
                                "that src/core/fact_families.cpp does not map to a folder")
            elif want != folder:
                findings.append(f"{where[0]}: probe {pid} provides {pattern}, whose family "
                                f"'{prefix}' lives in checks/{want}/")
            other = provided_by.setdefault(pattern, (pid, folder))
            if other[1] != folder:
                findings.append(f"{pattern}: provided by {other[0]} (checks/{other[1]}/) and {pid} "
                                f"(checks/{folder}/)")
        for pattern in probe.get("inputs", []):
            if "**" in pattern:
                findings.append(f"{where[0]}: probe {pid} reads '{pattern}': name the keys or "
                                "use `*` segments")
    largest = (0, "")
    for f in sorted((src / "checks").rglob("*")):
        if f.suffix not in (".cpp", ".hpp", ".py") or not f.is_file():
            continue
        rel = f.relative_to(src).as_posix()
        n = len(f.read_text(errors="replace").splitlines())
        largest = max(largest, (n, rel))
        if n > MAX_LINES:
            findings.append(f"{rel}: {n} lines, more than {MAX_LINES}: split it along its seams")
    folders = set(families.values())
    for f in sorted((src / "tests/probes").rglob("*.cpp")):
        rel = f.relative_to(src / "tests/probes").parts
        if len(rel) != 2 or rel[0] not in folders:
            findings.append(f"tests/probes/{'/'.join(rel)}: put it in tests/probes/<folder>/, the folder of "
                            f"checks/ whose code it tests (one of {', '.join(sorted(folders))})")
    print(f"largest file in checks/: {largest[1]}, {largest[0]} lines")
    for line in findings:
        print(line)
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Issue 45: every rule's failing side is shown at least once through its real probe, not only by
its examples (which give facts as the rule expects them, and so passed while the probe produced
another type). tests/rules_failing_sides.json lists, for each rule in rules/*.json, one of:
  fixture: a root under tests/fixtures on which `check` fails the rule (run here);
  test:    a test that shows it through a probe (a fixture copy with planted files, a runtime
           capture, a plan config, a bench facts file); the file must exist and name the rule (a plan
           golden must list it as ERROR, WARN or NOTE);
  reason:  why no fixture or test shows it yet.
Fails when a rule has none of them, when an entry names a rule that does not exist, or when a fixture
no longer fails its rule.  Usage: failing_sides.py HALO-DOCTOR REPO"""
import collections
import glob
import json
import os
import re
import subprocess
import sys

doctor, repo = sys.argv[1], sys.argv[2]
table = json.load(open(os.path.join(repo, "tests/rules_failing_sides.json")))["rules"]
ids = []
for path in sorted(glob.glob(os.path.join(repo, "rules/*.json"))):
    if os.path.basename(path) in ("schema.json", "predicates.json"):
        continue
    ids += [r["id"] for r in json.load(open(path)).get("rules", [])]
bad = []
for rid in ids:
    if rid not in table:
        bad.append(f"{rid}: no entry (name the fixture or test that shows its failing side, or the reason none can)")
for rid in table:
    if rid not in ids:
        bad.append(f"{rid}: no such rule in rules/")
by_fixture = collections.defaultdict(list)
kinds = collections.Counter()
for rid, entry in table.items():
    keys = set(entry) - {"shows"}
    if len(keys) != 1 or not keys <= {"fixture", "test", "reason"}:
        bad.append(f"{rid}: needs exactly one of fixture, test, reason: {entry}")
        continue
    kind = keys.pop()
    kinds[kind] += 1
    value = entry[kind]
    if not isinstance(value, str) or not value.strip():
        bad.append(f"{rid}: empty {kind}")
    elif kind == "fixture":
        if not os.path.isfile(os.path.join(repo, "tests/fixtures", value, "README.md")):
            bad.append(f"{rid}: no fixture root tests/fixtures/{value}")
        else:
            by_fixture[value].append(rid)
    elif kind == "test":
        path = os.path.join(repo, value)
        if not os.path.isfile(path):
            bad.append(f"{rid}: no test file {value}")
            continue
        text = open(path, encoding="utf-8", errors="replace").read()
        if value.startswith("tests/plan/golden/"):
            if not re.search(r"^\s*(ERROR|WARN|NOTE)\s+" + re.escape(rid) + r"\s", text, re.M):
                bad.append(f"{rid}: {value} does not list it as ERROR, WARN or NOTE")
        elif rid not in text:
            bad.append(f"{rid}: {value} does not name it")
for fixture, rids in sorted(by_fixture.items()):
    proc = subprocess.run([doctor, "check", "--root", os.path.join(repo, "tests/fixtures", fixture),
                           "--format", "json", "--no-runtime", "--fail-on", "never"],
                          capture_output=True, text=True, env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin"})
    try:
        results = json.loads(proc.stdout)["results"]
    except (ValueError, KeyError):
        bad.append(f"{fixture}: check gave no JSON report (exit {proc.returncode}): {proc.stderr[:300]}")
        continue
    for rid in rids:
        statuses = sorted({r["status"] for r in results if r["id"] == rid})
        if "fail" not in statuses:
            bad.append(f"{rid}: does not fail on tests/fixtures/{fixture} (got {statuses or 'no result'})")
for b in bad:
    print("FAIL " + b)
print(f"{len(ids)} rules: {kinds['fixture']} shown on a fixture root, {kinds['test']} by a test through "
      f"their probe, {kinds['reason']} with a reason only; {len(bad)} problems")
sys.exit(1 if bad else 0)

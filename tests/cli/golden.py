#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""End-to-end golden test: the real binary over every fixture root, as a user runs it
(docs/fixtures.md "Goldens and verdict tables"; DESIGN.md "Tests that change with the change").

Every fixture root (a directory with a README.md) is judged by its verdict table, verdicts.tsv: the
exit code of `check`, then one line per rule result that is not a skip (rule, GPU, status, severity
and the key evidence: the facts the rule's conditions name, with their values). A rule that starts
or stops applying, changes its verdict or severity, or decides on other values changes the table.
A few roots also keep full reports, each where its file exists: expected.json (`--format json`),
expected.txt (the text report, no colour) and expected.md (`--format markdown`). The full reports
are stored without their skip results and with the skip count as <skips>: those list every rule,
so a rule added anywhere would rewrite every full report; the tables judge when a rule applies.

HALO_UPDATE_GOLDEN=1 rewrites every table and the full reports that exist (create an empty
expected.* file to add one); read the diff before committing (docs/fixtures.md).

usage: golden.py HALO_DOCTOR FIXTURES_DIR RULES_DIR [CASE...]
"""
import json
import os
import re
import subprocess
import sys

UPDATE = os.environ.get("HALO_UPDATE_GOLDEN", "0") == "1"
SKIPS = "<skips>"


# ---------------------------------------------------------------- the rules' deciding facts

def condition_facts(node, predicates, out, seen=()):
    """Adds every fact a condition names (a predicate by its own condition) to out."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "fact" and isinstance(value, str):
                out.add(value)
            elif key == "predicate" and isinstance(value, str) and value not in seen:
                condition_facts(predicates.get(value, {}).get("when"), predicates, out, seen + (value,))
            elif key not in ("examples", "message", "fix", "why", "sources", "title"):
                condition_facts(value, predicates, out, seen)
    elif isinstance(node, list):
        for value in node:
            condition_facts(value, predicates, out, seen)


def load_rules(rules_dir):
    """rule id -> (the facts its fail conditions name, the facts its applies conditions name)."""
    predicates = {}
    path = os.path.join(rules_dir, "predicates.json")
    if os.path.exists(path):
        with open(path) as f:
            predicates = json.load(f).get("predicates", {})
    rules = {}
    for name in sorted(os.listdir(rules_dir)):
        if not name.endswith(".json") or name in ("schema.json", "predicates.json"):
            continue
        with open(os.path.join(rules_dir, name)) as f:
            data = json.load(f)
        for rule in data.get("rules", []) if isinstance(data, dict) else []:
            fail, applies = set(), set()
            condition_facts(rule.get("fail"), predicates, fail)
            condition_facts(rule.get("applies"), predicates, applies)
            rules[rule.get("id")] = (fail, applies)
    return rules


def pattern_regex(pattern, gpu):
    """A fact a condition names as a regex over evidence keys: `gpu.this` is the result's GPU,
    `*` one dotted segment, `**` one or more."""
    parts = []
    for i, seg in enumerate(pattern.split(".")):
        if seg == "this" and i == 1 and pattern.startswith("gpu.") and gpu is not None:
            parts.append(re.escape(str(gpu)))
        elif seg == "**":
            parts.append(r"[^.]+(?:\.[^.]+)*")
        elif seg == "*":
            parts.append(r"[^.]+")
        else:
            parts.append(re.escape(seg))
    return re.compile(r"\.".join(parts) + r"\Z")


def gpu_index(result):
    """The result's GPU index (`gpu.N`), None for a rule that is not per GPU."""
    gpu = result.get("gpu")
    return gpu.get("index") if isinstance(gpu, dict) else gpu


def key_evidence(result, rules):
    """The evidence that decides the verdict: the evidence facts the rule's fail conditions name,
    else those its applies conditions name, else all of its evidence."""
    evidence = result.get("evidence") or {}
    fail, applies = rules.get(result.get("id"), (set(), set()))
    for names in (fail, applies):
        regexes = [pattern_regex(n, gpu_index(result)) for n in names]
        keys = [k for k in evidence if any(r.match(k) for r in regexes)]
        if keys:
            return {k: evidence[k] for k in sorted(keys)}
    return {k: evidence[k] for k in sorted(evidence)}


def show(key, value, sources):
    status = (sources.get(key) or {}).get("status", "ok")
    if status != "ok":
        return f"{key}=<{status}>"
    return f"{key}=" + json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True)


def verdict_table(report, rules):
    lines = [
        "# verdicts: every result of `check --root <case> --no-runtime` that is not a skip (docs/fixtures.md)",
        f"exit\t{report.get('exit_code')}",
        "# rule\tgpu\tstatus\tseverity\tkey evidence",
    ]
    rows = []
    for r in report.get("results", []):
        if r.get("status") == "skip":
            continue
        sources = r.get("evidence_sources") or {}
        evidence = " ".join(show(k, v, sources) for k, v in key_evidence(r, rules).items())
        gpu = "-" if gpu_index(r) is None else str(gpu_index(r))
        rows.append(f"{r['id']}\t{gpu}\t{r['status']}\t{r.get('severity', '')}\t{evidence}")
    return "\n".join(lines + rows) + "\n"


# ---------------------------------------------------------------- the full reports

def normalize(text):
    text = re.sub(r'"digest": "sha256:[0-9a-f]+"', '"digest": "sha256:<digest>"', text)
    return re.sub(r"\(sha256:[0-9a-f]+\)", "(sha256:<digest>)", text)


def full_json(report):
    """The JSON report as stored: no skip results, the skip count <skips>, keys as the tool
    writes them (indent 2, sorted)."""
    report = dict(report)
    report["results"] = [r for r in report.get("results", []) if r.get("status") != "skip"]
    if isinstance(report.get("summary"), dict) and "skip" in report["summary"]:
        report["summary"] = dict(report["summary"], skip=SKIPS)
    return json.dumps(report, indent=2, ensure_ascii=False, sort_keys=True) + "\n"


def mask_skips(text):
    """The text and markdown summary line: `N skipped` as `<skips> skipped`."""
    return re.sub(r"\b\d+ skipped\b", SKIPS + " skipped", text)


def run(binary, args):
    p = subprocess.run([binary] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    return p.returncode, p.stdout.decode("utf-8", errors="surrogateescape")


def first_difference(want, got, limit=40):
    import difflib
    diff = list(difflib.unified_diff(want.splitlines(), got.splitlines(), "expected", "actual", lineterm="", n=2))
    return "\n".join(diff[:limit])


def write(path, text):
    with open(path, "w", encoding="utf-8", errors="surrogateescape") as f:
        f.write(text)


def read(path):
    with open(path, encoding="utf-8", errors="surrogateescape") as f:
        return f.read()


def check_case(binary, case, rules):
    """Returns the failures of one fixture (empty: ok)."""
    code, out = run(binary, ["check", "--root", case, "--format", "json", "--no-runtime"])
    try:
        report = json.loads(normalize(out))
    except ValueError as e:
        return [f"FAIL {case}: the JSON report does not parse ({e}); exit {code}"]
    # The stored expected.json is this parse written back (full_json); the tool's own bytes are
    # that form exactly (indent 2, sorted keys, UTF-8 as is), so nothing of them goes unchecked.
    if json.dumps(report, indent=2, ensure_ascii=False, sort_keys=True) + "\n" != normalize(out):
        return [f"FAIL {case}: the JSON report is not written as indent 2, sorted keys, UTF-8 (the form "
                "expected.json stores): change full_json with the reporter"]
    if report.get("exit_code") != code:
        return [f"FAIL {case}: exit code {code}, the report says {report.get('exit_code')}"]
    outputs = {"verdicts.tsv": lambda: verdict_table(report, rules),
               "expected.json": lambda: full_json(report),
               "expected.txt": lambda: mask_skips(run(binary, ["check", "--root", case, "--color", "never",
                                                               "--no-runtime"])[1]),
               "expected.md": lambda: mask_skips(normalize(run(binary, ["check", "--root", case, "--format",
                                                                        "markdown", "--no-runtime"])[1]))}
    failures = []
    for name, make in outputs.items():
        path = os.path.join(case, name)
        if name != "verdicts.tsv" and not os.path.exists(path):
            continue
        got = make()
        if UPDATE:
            write(path, got)
            continue
        if not os.path.exists(path):
            failures.append(f"FAIL {case}: no {name} (HALO_UPDATE_GOLDEN=1 writes it)")
            continue
        want = read(path)
        if want != got:
            what = "verdicts differ from" if name == "verdicts.tsv" else "report differs from"
            failures.append(f"FAIL {case}: {what} {name}\n{first_difference(want, got)}")
    return failures


def main():
    if len(sys.argv) < 4:
        print(__doc__, file=sys.stderr)
        return 2
    binary = os.path.realpath(sys.argv[1])
    os.chdir(sys.argv[2])
    rules = load_rules(os.path.realpath(os.path.join(os.path.dirname(__file__), "..", "..", "rules"))
                       if sys.argv[3] == "-" else sys.argv[3])
    cases = sys.argv[4:] or sorted(d for d in os.listdir(".") if os.path.isfile(os.path.join(d, "README.md")))
    failed = 0
    for case in cases:
        failures = check_case(binary, case, rules)
        if failures:
            failed += 1
            print("\n".join(failures))
        else:
            print(("updated " if UPDATE else "ok ") + case)
    if failed:
        print(f"{failed} of {len(cases)} fixtures differ; after an intended change: "
              "HALO_UPDATE_GOLDEN=1 tests/cli/golden.sh BIN tests/fixtures, then read the diff (docs/fixtures.md)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

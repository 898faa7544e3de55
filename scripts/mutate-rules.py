#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Mutation pass over rules/: does some rule example notice a changed threshold, operator or severity?

Each mutant is a copy of the rules directory with one change:
  threshold  a number in a condition (a literal, `times`, `plus`) moved up and down by 10% (at least 1
             for an integer), a version literal moved one step up and down ("6.18.4" -> "6.18.5", "6.18.3");
  operator   lt<->le, gt<->ge, eq<->ne, in<->not_in, version_lt<->version_ge, exists and empty flipped,
             and a boolean `eq` literal flipped (`"eq": true` -> `"eq": false`);
  severity   a fail case's severity replaced by each other severity.
A mutant is killed when `halo-doctor rules --test --rules DIR` exits 1 (an example got another verdict or
lost its coverage); it survives when it exits 0. A mutant the loader refuses (exit 2) is not counted.

Usage: scripts/mutate-rules.py BINARY [--rules DIR] [--sample N] [--seed S]
                               [--min-kill PCT] [--min-threshold-kill PCT] [--list]
Prints the kill rate per kind and every survivor; exits 1 when a rate is under its minimum.
"""
import argparse
import copy
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile

GROUPS = ("all", "any", "none")
SWAP = {"lt": "le", "le": "lt", "gt": "ge", "ge": "gt", "eq": "ne", "ne": "eq", "in": "not_in",
        "not_in": "in", "version_lt": "version_ge", "version_ge": "version_lt"}
SEVERITIES = ("error", "warning", "info")


def number_moves(v):
    """The two moved values of a threshold number: 10% down and up, at least 1 for an integer."""
    if isinstance(v, int):
        step = max(1, abs(v) // 10)
        return [v - step, v + step]
    if v == 0:
        return [-0.1, 0.1]
    return [v * 0.9, v * 1.1]


def version_moves(v):
    """One version step down and up in the last component: 6.18.4 -> 6.18.3, 6.18.5; 6.18.0 -> 6.17.999."""
    m = re.fullmatch(r"(\d+(?:\.\d+)*)(.*)", v)
    if not m:
        return []
    parts = [int(x) for x in m.group(1).split(".")]
    up = parts[:-1] + [parts[-1] + 1]
    down = list(parts)
    i = len(down) - 1
    while i >= 0 and down[i] == 0:
        down[i] = 999
        i -= 1
    if i < 0:
        return [".".join(map(str, up)) + m.group(2)]
    down[i] -= 1
    return [".".join(map(str, down)) + m.group(2), ".".join(map(str, up)) + m.group(2)]


def condition_mutants(cond, path):
    """Yields (kind, path, description, mutate) for one condition tree; mutate(cond) changes a copy."""
    if not isinstance(cond, dict):
        return
    for g in GROUPS:
        if g in cond:
            for i, child in enumerate(cond[g]):
                for kind, p, desc, fn in condition_mutants(child, f"{path}.{g}[{i}]"):
                    yield kind, p, desc, (lambda c, g=g, i=i, fn=fn: fn(c[g][i]))
            return
    if "fact" not in cond:
        return
    (op, operand), = [(k, v) for k, v in cond.items() if k != "fact"]
    where = f"{path} ({cond['fact']} {op})"
    if op in SWAP:
        new = SWAP[op]

        def swap(c, op=op, new=new):
            c[new] = c.pop(op)
        yield "operator", where, f"{op} -> {new}", swap
    if op in ("exists", "empty") or (op in ("eq", "ne") and isinstance(operand, bool)):
        def flip(c, op=op):
            c[op] = not c[op]
        yield "operator", where, f"{op}: {json.dumps(operand)} -> {json.dumps(not operand)}", flip
    if isinstance(operand, (int, float)) and not isinstance(operand, bool) and op in ("lt", "le", "gt", "ge", "eq", "ne"):
        for moved in number_moves(operand):
            def set_num(c, op=op, moved=moved):
                c[op] = moved
            yield "threshold", where, f"{operand} -> {moved}", set_num
    if isinstance(operand, str) and op in ("version_lt", "version_ge"):
        for moved in version_moves(operand):
            def set_ver(c, op=op, moved=moved):
                c[op] = moved
            yield "threshold", where, f"{operand} -> {moved}", set_ver
    if isinstance(operand, dict):
        for key in ("times", "plus"):
            if key in operand:
                for moved in number_moves(operand[key]):
                    def set_scale(c, op=op, key=key, moved=moved):
                        c[op][key] = moved
                    yield "threshold", where, f"{key} {operand[key]} -> {moved}", set_scale


def rule_mutants(rule):
    applies = rule.get("applies")
    if isinstance(applies, list):
        for i, pre in enumerate(applies):
            for kind, p, desc, fn in condition_mutants(pre["when"], f"applies[{i}].when"):
                yield kind, p, desc, (lambda r, i=i, fn=fn: fn(r["applies"][i]["when"]))
    elif isinstance(applies, dict):
        for kind, p, desc, fn in condition_mutants(applies, "applies"):
            yield kind, p, desc, (lambda r, fn=fn: fn(r["applies"]))
    if "gpus" in rule:
        for kind, p, desc, fn in condition_mutants(rule["gpus"]["when"], "gpus.when"):
            yield kind, p, desc, (lambda r, fn=fn: fn(r["gpus"]["when"]))
    for i, case in enumerate(rule["fail"]):
        for kind, p, desc, fn in condition_mutants(case["when"], f"fail[{i}].when"):
            yield kind, p, desc, (lambda r, i=i, fn=fn: fn(r["fail"][i]["when"]))
        for sev in SEVERITIES:
            if sev != case["severity"]:
                def set_sev(r, i=i, sev=sev):
                    r["fail"][i]["severity"] = sev
                yield "severity", f"fail[{i}].severity", f"{case['severity']} -> {sev}", set_sev
    if "pending_when" in rule:
        for kind, p, desc, fn in condition_mutants(rule["pending_when"], "pending_when"):
            yield kind, p, desc, (lambda r, fn=fn: fn(r["pending_when"]))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("binary")
    ap.add_argument("--rules", default=os.path.join(os.path.dirname(__file__), "..", "rules"))
    ap.add_argument("--sample", type=int, default=0, help="test N mutants drawn at random (0: all)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--min-kill", type=float, default=0.0, help="percent of all mutants")
    ap.add_argument("--min-threshold-kill", type=float, default=0.0, help="percent of threshold mutants")
    ap.add_argument("--list", action="store_true", help="list the mutants and stop")
    ap.add_argument("--only", action="append", default=[], metavar="RULE_ID",
                    help="mutate only this rule (repeatable); other rules may lack examples")
    args = ap.parse_args()

    files = sorted(f for f in os.listdir(args.rules) if f.endswith(".json") and f != "schema.json")
    docs = {f: json.load(open(os.path.join(args.rules, f))) for f in files}
    mutants = []
    for f in files:
        if f == "predicates.json":
            # A named condition is mutated once; the examples of every rule that uses it judge.
            for name, pred in docs[f]["predicates"].items():
                for kind, path, desc, fn in condition_mutants(pred["when"], "when"):
                    if not args.only:
                        mutants.append((kind, f, name, f"predicate {name}", path, desc,
                                        lambda p, fn=fn: fn(p["when"])))
            continue
        for ri, rule in enumerate(docs[f]["rules"]):
            for kind, path, desc, fn in rule_mutants(rule):
                if not args.only or rule["id"] in args.only:
                    mutants.append((kind, f, ri, rule["id"], path, desc, fn))
    if args.list:
        for kind, f, _, rid, path, desc, _ in mutants:
            print(f"{kind}\t{rid}\t{path}\t{desc}")
        print(f"{len(mutants)} mutants")
        return 0
    if args.sample and args.sample < len(mutants):
        mutants = random.Random(args.seed).sample(mutants, args.sample)

    def problems(directory):
        """(exit code, the problem lines without their FILE:LINE prefix) of `rules --test`."""
        run = subprocess.run([args.binary, "rules", "--test", "--rules", directory],
                             capture_output=True, text=True)
        lines = {re.sub(r"^.*?:\d+: (rule ')", r"\1", line) for line in run.stdout.splitlines()
                 if " rule '" in line}
        return run.returncode, lines

    tally = {}
    survivors = []
    invalid = 0
    with tempfile.TemporaryDirectory(prefix="halo-mutate.") as tmp:
        for name in os.listdir(args.rules):
            src = os.path.join(args.rules, name)
            if os.path.isfile(src):
                shutil.copy(src, tmp)
        for f in files:
            with open(os.path.join(tmp, f), "w") as out:
                json.dump(docs[f], out, indent=1)
        base_rc, base_problems = problems(tmp)
        if base_rc != 0 and not args.only:
            print("the unmutated rules do not pass their own examples (halo-doctor rules --test)")
            return 1
        for kind, f, ri, rid, path, desc, fn in mutants:
            doc = copy.deepcopy(docs[f])
            fn(doc["predicates"][ri] if f == "predicates.json" else doc["rules"][ri])
            with open(os.path.join(tmp, f), "w") as out:
                json.dump(doc, out, indent=1)
            rc, found = problems(tmp)
            with open(os.path.join(tmp, f), "w") as out:
                json.dump(docs[f], out, indent=1)
            if rc == 2:
                invalid += 1
                continue
            if rc not in (0, 1):
                print(f"unexpected exit {rc} for {f}: {rid}: {path}: {desc}")
                return 1
            killed = rc == 1 and bool(found - base_problems)
            k, t = tally.get(kind, (0, 0))
            tally[kind] = (k + killed, t + 1)
            if not killed:
                survivors.append(f"{f}: {rid}: {path}: {desc}")

    for s in survivors:
        print("survived:", s)
    all_killed = sum(k for k, _ in tally.values())
    all_total = sum(t for _, t in tally.values())
    status = 0
    for kind in ("threshold", "operator", "severity"):
        k, t = tally.get(kind, (0, 0))
        print(f"{kind:9} {k:4}/{t:<4} killed ({100.0 * k / t if t else 100.0:.1f}%)")
    rate = 100.0 * all_killed / all_total if all_total else 100.0
    print(f"{'all':9} {all_killed:4}/{all_total:<4} killed ({rate:.1f}%); {invalid} refused by the loader")
    tk, tt = tally.get("threshold", (0, 0))
    if rate < args.min_kill or (tt and 100.0 * tk / tt < args.min_threshold_kill):
        print(f"FAIL: under the minimum (all {args.min_kill}%, thresholds {args.min_threshold_kill}%)")
        status = 1
    return status


if __name__ == "__main__":
    sys.exit(main())

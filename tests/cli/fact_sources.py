#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A fact's source names its probe and what the probe read, never a file of this repository
(DESIGN.md "Tests that change with the change"; include/halo/fact.hpp Fact::source, Fact::probe).

Over every fixture root, `halo-doctor facts --format json --no-runtime`:
- no fact's source names a file or folder of this repository (a path that exists under the
  repository: checks/gpus/gfx.cpp, src/core/..., include/halo/...), so moving a probe's code
  changes no report;
- every fact but the registry's own (`probe.<id>.status`) names the probe that read it, and that
  probe is one the binary declares (`facts --declared --format json`).
Then a facts file in the form written before the `probe` field (no `probe`, a source naming
checks/gpus/gfx.cpp) still loads: `check --facts FILE` gives the verdicts and exit code of the
root it was saved from.

usage: fact_sources.py HALO_DOCTOR FIXTURES_DIR REPOSITORY_DIR
"""
import json
import os
import re
import subprocess
import sys
import tempfile

# Tokens that look like a path of the repository; each is checked against the checkout.
PATH_TOKEN = re.compile(r"(?<![\w/.-])((?:checks|src|include|tests|bench|rules|scripts|docs)/[\w./<>*-]*)")


def run(binary, *args):
    p = subprocess.run([binary, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    return p.returncode, p.stdout.decode("utf-8", errors="replace"), p.stderr.decode("utf-8", errors="replace")


def repository_paths(text, repo):
    """The tokens of text that name a file or folder of the repository."""
    out = []
    for token in PATH_TOKEN.findall(text):
        token = token.rstrip(".,:;)")
        head = re.split(r"[<*]", token)[0].rstrip("/")
        if head and os.path.exists(os.path.join(repo, head)):
            out.append(token)
    return out


def main():
    if len(sys.argv) != 4:
        print(__doc__, file=sys.stderr)
        return 2
    binary, fixtures, repo = (os.path.realpath(a) for a in sys.argv[1:4])
    code, out, err = run(binary, "facts", "--declared", "--format", "json")
    if code != 0:
        print(f"FAIL: facts --declared exited {code}: {err}")
        return 1
    declared = {p["probe"] for p in json.loads(out)}
    failures = []
    cases = sorted(d for d in os.listdir(fixtures) if os.path.isfile(os.path.join(fixtures, d, "README.md")))
    saved = {}
    for case in cases:
        root = os.path.join(fixtures, case)
        code, out, err = run(binary, "facts", "--root", root, "--format", "json", "--no-runtime")
        if code != 0:
            failures.append(f"{case}: facts exited {code}: {err.strip()[:300]}")
            continue
        saved[case] = out
        for key, fact in json.loads(out)["facts"].items():
            named = repository_paths(fact.get("source", ""), repo)
            if named:
                failures.append(f"{case}: {key}'s source names {named[0]} of this repository: "
                                f"{fact['source']!r} (name what the probe read and the documented table)")
            probe = fact.get("probe")
            if re.fullmatch(r"probe\.[a-z0-9_]+\.status", key):
                continue
            if not probe:
                failures.append(f"{case}: {key} names no probe (the registry sets Fact::probe)")
            elif probe not in declared:
                failures.append(f"{case}: {key} names probe {probe!r}, which the binary does not declare")
    # A facts file as written before the probe field, its gpu.N facts sourced as they were then.
    case = "strix-halo-default-ttm"
    if case in saved:
        old = json.loads(saved[case])
        for key, fact in old["facts"].items():
            fact.pop("probe", None)
            if re.fullmatch(r"gpu\.\d+\.(instinct|mi300_series)", key):
                fact["source"] = "derived: checks/gpus/gfx.cpp"
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
            json.dump(old, f)
            path = f.name
        try:
            want_code, want, _ = run(binary, "check", "--root", os.path.join(fixtures, case), "--format", "json",
                                     "--no-runtime")
            got_code, got, err = run(binary, "check", "--facts", path, "--format", "json")
        finally:
            os.unlink(path)
        verdicts = lambda text: [(r["id"], r["status"], r["severity"]) for r in json.loads(text)["results"]]
        if got_code != want_code or not got.strip() or verdicts(got) != verdicts(want):
            failures.append(f"a facts file without probe fields does not replay as {case} checks "
                            f"(exit {got_code}, expected {want_code}): {err.strip()[:300]}")
    if failures:
        print(f"FAIL {failures[0]}")
        for f in failures[1:20]:
            print(f"  {f}")
        if len(failures) > 20:
            print(f"  ... {len(failures) - 20} more")
        return 1
    print(f"ok: the facts of {len(cases)} fixture roots name their probe and no file of the repository; "
          "a facts file without probe fields replays")
    return 0


if __name__ == "__main__":
    sys.exit(main())

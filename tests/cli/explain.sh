#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# halo-doctor explain and rules, as a user reads them (issue 35): explain fills in a machine's
# values (strix-halo-default-ttm: 128 GB Strix Halo with TTM at half of RAM, its README.md) and
# says the rule's verdict there; a misspelt rule id gets "did you mean"; rules --format json.
set -u
bin=$(realpath "$1")
fixtures=$(realpath "$2")
fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
bad() { echo "FAIL: $*"; fail=1; }

"$bin" explain ttm-limit-low --root "$fixtures/strix-halo-default-ttm" --no-runtime >"$tmp/x.txt" || bad "explain exited $?"
grep -qF 'on this machine (' "$tmp/x.txt" || bad "explain: no verdict for the machine"
grep -qF 'FAIL (error): the GPU may use only 62.54 GiB of 125.08 GiB RAM' "$tmp/x.txt" ||
  { bad "explain: the machine's failure is not shown with its values"; cat "$tmp/x.txt"; }
grep -qF 'kernel command line: add ttm.page_pool_size=31719424 ttm.pages_limit=31719424' "$tmp/x.txt" ||
  bad "explain: the fix for this machine is missing"
# A case about a modprobe.d limit stays a template here: this machine sets none (text.cpp's
# on_machine keeps a template whose facts the machine lacks); every other line is filled in.
if grep -vF 'ttm.modprobe.' "$tmp/x.txt" | grep -qE '\{(gib|pages_gib|param):'; then
  bad "explain on a machine with the facts still prints templates:"
  grep -nE '\{(gib|pages_gib|param):' "$tmp/x.txt"
fi
grep -qF 'FAIL (error): the GPU may use only 62.54 GiB of 125.08 GiB RAM: ttm.pages_limit is' "$tmp/x.txt" ||
  bad "explain: the case that decided on this machine is not the one shown filled in"
# Without the facts (a facts file of another machine: no APU), templates stay templates.
"$bin" explain ttm-limit-low --root "$fixtures/mi300x-numa-4021" --no-runtime >"$tmp/y.txt" || bad "explain mi300x exited $?"
grep -qF 'SKIP: no APU' "$tmp/y.txt" || { bad "explain on an MI300X node: not skipped for no APU"; cat "$tmp/y.txt"; }

"$bin" explain ttm-limit-lo >"$tmp/out" 2>"$tmp/err"
code=$?
[ "$code" = 2 ] || bad "explain with a misspelt id: exit $code, want 2"
grep -qF "did you mean 'ttm-limit-low'?" "$tmp/err" || bad "explain: no 'did you mean' ($(cat "$tmp/err"))"
"$bin" check --only kfdaccess --root "$fixtures/strix-halo-default-ttm" --no-runtime >"$tmp/out" 2>"$tmp/err"
code=$?
if [ "$code" != 2 ] || ! grep -qF "did you mean 'kfd-access'?" "$tmp/err"; then
  bad "--only: exit $code, $(cat "$tmp/err")"
fi
"$bin" explain completely-unrelated-words >"$tmp/out" 2>"$tmp/err"
grep -q "did you mean" "$tmp/err" && bad "a suggestion for an id like none: $(cat "$tmp/err")"

"$bin" rules --format json >"$tmp/rules.json" || bad "rules --format json exited $?"
text_count=$("$bin" rules | tail -n +2 | wc -l)
/usr/bin/python3 - "$tmp/rules.json" "$text_count" <<'PY' || fail=1
import json, sys
d = json.load(open(sys.argv[1]))
rules = d["rules"]
assert len(rules) == int(sys.argv[2]), (len(rules), sys.argv[2])
for r in rules:
    assert r["scope"] in ("host", "gpu") and r["file"].startswith("rules/") and r["line"] > 0, r
    assert r["severity"] in r["severities"], r
print(f"ok rules --format json: {len(rules)} rules")
PY
[ $fail = 0 ] && echo "explain and rules: all checks passed"
exit $fail

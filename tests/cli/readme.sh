#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# README.md's examples that run without a GPU, run as shown: the Strix Halo report of
# tests/fixtures/strix-halo-default-ttm (every line the README shows appears in the real output in
# that order, "..." standing for lines left out; the exit code is the one it states), and its
# `fix` example (asks for --stack without boot tools, writes a script with --stack grubby).
# Usage: readme.sh HALO_DOCTOR SOURCE_DIR
set -u
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
export COLUMNS=100 # the text report is wrapped to COLUMNS; the README shows it 100 wide
py=/usr/bin/python3
bin=$(realpath "$1")
src=$(realpath "$2")
cd "$src" || exit 2
fail=0
bad() { echo "FAIL $*"; fail=1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

"$bin" check --root tests/fixtures/strix-halo-default-ttm --no-runtime --color never >"$tmp/report.txt"
code=$?
# shellcheck disable=SC2016 # backquotes of Markdown, not a command substitution
grep -q '`halo-doctor check --root tests/fixtures/strix-halo-default-ttm`.*exit 1)' README.md ||
  bad "README no longer states the fixture's command and exit code"
[ "$code" = 1 ] || bad "check --root tests/fixtures/strix-halo-default-ttm exited $code, README says 1"
"$py" - README.md "$tmp/report.txt" <<'PY' || fail=1
import sys
readme = open(sys.argv[1]).read()
start = readme.index("## Output on a Strix Halo at the default TTM cap")
block = readme[start:].split("```\n", 2)[1]
shown = [l for l in block.splitlines()]
real = open(sys.argv[2]).read().splitlines()
i = 0
for line in shown:
    if line.strip() == "...":
        continue
    while i < len(real) and real[i] != line:
        i += 1
    if i == len(real):
        print("FAIL README line not in the real output (in order):", line)
        sys.exit(1)
    i += 1
print(f"ok: the README's Strix Halo report ({len(shown)} lines) matches the real one")
PY
rc=0
"$bin" fix --root tests/fixtures/strix-halo-default-ttm --no-runtime >/dev/null 2>"$tmp/err" || rc=$?
if [ "$rc" != 2 ] || ! grep -q -- '--stack' "$tmp/err"; then bad "fix without --stack: exit $rc: $(cat "$tmp/err")"; fi
grep -q 'fix --root tests/fixtures/strix-halo-default-ttm --stack grubby' README.md || bad "README lacks the fix example"
if "$bin" fix --root tests/fixtures/strix-halo-default-ttm --stack grubby --no-runtime >"$tmp/fix.sh" 2>/dev/null; then
  if ! grep -q 'ttm.pages_limit=31719424' "$tmp/fix.sh" || ! bash -n "$tmp/fix.sh"; then
    bad "the fix script lacks the TTM limit or does not parse"
  fi
else
  bad "fix --stack grubby failed"
fi
[ $fail = 0 ] && echo "ok: README examples run as shown"
exit $fail

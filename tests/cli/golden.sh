#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# End-to-end golden test: the real binary over every fixture root, as a user runs it.
# Compares `check --format json` and the text report (no colour) with expected.json / expected.txt
# and the exit code with the one recorded in expected.json; where a fixture has expected.md, also
# `check --format markdown` (the redacted report for a GitHub issue). HALO_UPDATE_GOLDEN=1 rewrites
# them (expected.md only where it exists: create one to add a fixture).
set -u
bin=$1
fixtures=$2
fail=0
tmp=$(mktemp)
trap 'rm -f "$tmp" /tmp/halo-golden-$$.diff' EXIT
normalize() { sed -E 's/"digest": "sha256:[0-9a-f]+"/"digest": "sha256:<digest>"/; s/\(sha256:[0-9a-f]+\)/(sha256:<digest>)/'; }
bin=$(realpath "$bin")
# The text report is wrapped to COLUMNS (else 100 columns): the goldens are 100 wide.
export COLUMNS=100
cd "$fixtures" || exit 1
for dir in */; do
  dir=${dir%/}
  name=$dir
  [ -f "$dir/README.md" ] || continue
  "$bin" check --root "$dir" --format json --no-runtime >"$tmp"
  code=$?
  json=$(normalize <"$tmp")
  text=$("$bin" check --root "$dir" --color never --no-runtime)
  md=""
  [ -f "$dir/expected.md" ] && md=$("$bin" check --root "$dir" --format markdown --no-runtime | normalize)
  if [ "${HALO_UPDATE_GOLDEN:-0}" = 1 ]; then
    printf '%s\n' "$json" >"$dir/expected.json"
    printf '%s\n' "$text" >"$dir/expected.txt"
    [ -f "$dir/expected.md" ] && printf '%s\n' "$md" >"$dir/expected.md"
    echo "updated $name (exit $code)"
    continue
  fi
  want_code=$(sed -nE 's/^  "exit_code": ([0-9]+).*/\1/p' "$dir/expected.json")
  if [ "$code" != "$want_code" ]; then
    echo "FAIL $name: exit code $code, expected $want_code"; fail=1
  fi
  if ! diff -u "$dir/expected.json" <(printf '%s\n' "$json") >/tmp/halo-golden-$$.diff; then
    echo "FAIL $name: JSON report differs from expected.json"; head -60 /tmp/halo-golden-$$.diff; fail=1
  fi
  if ! diff -u "$dir/expected.txt" <(printf '%s\n' "$text") >/tmp/halo-golden-$$.diff; then
    echo "FAIL $name: text report differs from expected.txt"; head -60 /tmp/halo-golden-$$.diff; fail=1
  fi
  if [ -f "$dir/expected.md" ] && ! diff -u "$dir/expected.md" <(printf '%s\n' "$md") >/tmp/halo-golden-$$.diff; then
    echo "FAIL $name: markdown report differs from expected.md"; head -60 /tmp/halo-golden-$$.diff; fail=1
  fi
  [ $fail = 0 ] && echo "ok $name (exit $code)"
done
rm -f /tmp/halo-golden-$$.diff
exit $fail

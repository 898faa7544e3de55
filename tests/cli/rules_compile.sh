#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The build step that validates and compiles the built-in rules (issue 33): halo-rules-compile
# accepts rules/ and refuses a copy with one invalid rule, naming its file, line and rule, so an
# invalid built-in rule fails the build.
# Usage: rules_compile.sh HALO-RULES-COMPILE RULES_DIR
set -u
tool=$(realpath "$1")
rules=$(realpath "$2")
fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
bad() { echo "FAIL: $*"; fail=1; }

"$tool" "$rules" "$tmp/ok.cpp" || bad "the source rules were refused (exit $?)"
grep -q 'std::string_view compiled_rules()' "$tmp/ok.cpp" || bad "no compiled form written"

# Each copy breaks ttm-limit-low (rules/memory.json, line 5) one way.
breakages=(
  's/"fact": "amd.gpu_present", "eq": true/"fact": "amd.gpu_present", "eqq": true/|unknown operator '"'"'eqq'"'"''
  's/"fact": "amd.gpu_present", "eq": true/"fact": "amd.no_such_fact", "eq": true/|no probe provides the fact'
  's/"title": "The GPU may use most of system RAM (TTM pages_limit on an APU)",/"title": 5,/|title: must be a string'
)
for b in "${breakages[@]}"; do
  sed_expr=${b%%|*}
  want=${b#*|}
  rm -rf "$tmp/rules"
  cp -r "$rules" "$tmp/rules"
  sed -i "5,12$sed_expr" "$tmp/rules/memory.json"
  cmp -s "$rules/memory.json" "$tmp/rules/memory.json" && { bad "the breakage '$sed_expr' changed nothing"; continue; }
  if "$tool" "$tmp/rules" "$tmp/bad.cpp" 2>"$tmp/err"; then
    bad "an invalid rule ($want) was compiled"
  else
    grep -qF "memory.json:5: rule 'ttm-limit-low': " "$tmp/err" || { bad "no FILE:LINE: rule 'ID' in:"; cat "$tmp/err"; }
    grep -qF "$want" "$tmp/err" || { bad "'$want' not in:"; cat "$tmp/err"; }
  fi
  [[ -e $tmp/bad.cpp ]] && bad "a compiled form was written for invalid rules"
done
exit $fail

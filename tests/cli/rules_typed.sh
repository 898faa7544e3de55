#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# shellcheck disable=SC2016 # backquotes and $ in single quotes are literal text (Markdown, sed patterns)
# Issue 45: every comparison and every example value is checked against the type the fact's probe
# declares (checks/*/facts.json). A string fact compared with a number never holds on a real
# machine (the engine compares numbers numerically, strings exactly: src/rules/engine.cpp), so
# amdgpu-gpu-recovery-off passed with gpu_recovery 0 while its examples, which gave the fact as a
# number, passed too. halo-rules-compile (the build step) and `--rules DIR` (at run time) refuse
# such a rule, naming the file, the rule's line and the rule.
# Usage: rules_typed.sh HALO-RULES-COMPILE HALO-DOCTOR RULES_DIR
set -u
tool=$(realpath "$1")
doctor=$(realpath "$2")
rules=$(realpath "$3")
fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
bad() { echo "FAIL: $*"; fail=1; }

"$tool" "$rules" "$tmp/ok.cpp" || bad "the source rules were refused (exit $?)"

# Each copy breaks amdgpu-gpu-recovery-off (rules/hangs.json, id on line 5) one way.
# amdgpu.param.lockup_timeout is text (a string parameter in amdgpu_drv.c); gpu_recovery is an int.
breakages=(
  's/"fact": "amdgpu.param.gpu_recovery", "eq": 0/"fact": "amdgpu.param.lockup_timeout", "eq": 0/|'"'"'amdgpu.param.lockup_timeout'"'"' is declared string (`amdgpu.param.*`'
  's/"fact": "amdgpu.param.gpu_recovery", "eq": 0/"fact": "amdgpu.param.gpu_recovery", "eq": "0"/|'"'"'amdgpu.param.gpu_recovery'"'"' is declared int'
  's/"fact": "amdgpu.param.gpu_recovery", "eq": 0/"fact": "amdgpu.param.gpu_recovery", "in": ["0", "-1"]/|`in` with the list ["0","-1"]'
  's/"fact": "amdgpu.param.gpu_recovery", "eq": 0/"fact": "amdgpu.param.gpu_recovery", "matches": "0"/|`matches` with the string "0"'
  's/"fact": "amdgpu.param.gpu_recovery", "eq": 0/"fact": "amdgpu.initstate", "lt": 1/|'"'"'amdgpu.initstate'"'"' is declared string'
  's/"amdgpu.param.gpu_recovery": -1, "kernel.cmdline"/"amdgpu.param.gpu_recovery": "-1", "kernel.cmdline"/|examples.base.amdgpu.param.gpu_recovery: '"'"'amdgpu.param.gpu_recovery'"'"' is declared int (`amdgpu.param.gpu_recovery`, checks/*/facts.json), but the example gives the string "-1"'
  's/"facts": {"amdgpu.param.gpu_recovery": 1}/"facts": {"amdgpu.param.gpu_recovery": 1.5}/|gives the number 1.5'
  's/"facts": {"amdgpu.live": false}/"facts": {"amdgpu.live": "N"}/|'"'"'amdgpu.live'"'"' is declared bool'
)
for b in "${breakages[@]}"; do
  sed_expr=${b%%|*}
  want=${b#*|}
  rm -rf "$tmp/rules"
  cp -r "$rules" "$tmp/rules"
  sed -i "5,36$sed_expr" "$tmp/rules/hangs.json"
  cmp -s "$rules/hangs.json" "$tmp/rules/hangs.json" && { bad "the breakage '$sed_expr' changed nothing"; continue; }
  rm -f "$tmp/bad.cpp"
  if "$tool" "$tmp/rules" "$tmp/bad.cpp" 2>"$tmp/err"; then
    bad "a mistyped rule ($want) was compiled"
  else
    grep -qF "hangs.json:5: rule 'amdgpu-gpu-recovery-off': " "$tmp/err" || { bad "no FILE:LINE: rule 'ID' in:"; cat "$tmp/err"; }
    grep -qF -- "$want" "$tmp/err" || { bad "'$want' not in:"; cat "$tmp/err"; }
  fi
  [[ -e $tmp/bad.cpp ]] && bad "a compiled form was written for mistyped rules"
  # The same check when a user's rules directory is loaded at run time (exit 2: malformed).
  "$doctor" rules --test --rules "$tmp/rules" >"$tmp/out" 2>&1
  code=$?
  [[ $code == 2 ]] || bad "rules --test --rules on a mistyped rule exited $code, not 2"
  grep -qF -- "$want" "$tmp/out" || { bad "--rules: '$want' not in:"; cat "$tmp/out"; }
done
exit $fail

#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# shellcheck disable=SC2015 # `test && ok ... || bad ...`: ok only echoes, so bad never follows it
# Issue 46 §3 and §4, as a user runs them: the commands listed for a bare `halo-doctor`, `help` and
# a mistyped command; --help naming what a value means, check's options in groups; --root on a
# directory that is no machine's root; the seed fixture's report fitting a 40-line screen, -q one
# line per finding, every line within the width (COLUMNS, else 100).
# Usage: cli_ux.sh HALO_DOCTOR FIXTURES
set -u
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
bin=$(realpath "$1")
fixtures=$(realpath "$2")
seed=$fixtures/strix-halo-default-ttm
fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
bad() { echo "FAIL $*"; fail=1; }
run() { # run: stdout to $tmp/out, stderr to $tmp/err, the exit code in $code
  "$@" >"$tmp/out" 2>"$tmp/err"
  code=$?
}

# A bare halo-doctor: the commands, one line each, on stderr; exit 2.
run "$bin"
[ "$code" = 2 ] || bad "bare halo-doctor exited $code, expected 2"
grep -q "A subcommand is required" "$tmp/err" && bad "bare halo-doctor still says only CLI11's message"
grep -qE '^  check +Probe this machine, evaluate the rules and report$' "$tmp/err" || bad "bare: no one-line 'check'"
[ "$(grep -cE '^  [a-z]+ +[A-Z]' "$tmp/err")" -ge 10 ] || bad "bare: fewer than 10 commands listed"
# `help`: the same list on stdout, exit 0; `help check` is check's --help.
run "$bin" help
[ "$code" = 0 ] && grep -qE '^  fix +Write a script' "$tmp/out" || bad "help exited $code or lacks fix"
run "$bin" help check
[ "$code" = 0 ] && grep -q -- "--fail-on" "$tmp/out" || bad "help check exited $code or is not check's --help"
# A typo: exit 2 and the closest command.
run "$bin" chekc
[ "$code" = 2 ] && grep -q "unknown command 'chekc'; did you mean check?" "$tmp/err" ||
  bad "chekc: exit $code: $(head -1 "$tmp/err")"
run "$bin" --debug chekc --root "$seed"
[ "$code" = 2 ] && grep -q "did you mean check?" "$tmp/err" || bad "--debug chekc: exit $code"
run "$bin" zzzzzzzz
[ "$code" = 2 ] && ! grep -q "did you mean" "$tmp/err" || bad "zzzzzzzz suggested a command"

# --help says what a value means, never CLI11's type names.
for cmd in check facts fix capture explain plan rules "slurm prolog" "fleet compare"; do
  # shellcheck disable=SC2086 # two words for the nested commands
  run "$bin" $cmd --help
  [ "$code" = 0 ] || bad "$cmd --help exited $code"
  if grep -nE '(TEXT|FLOAT|INT|UINT)(:| |$)|FINITE| in \[' "$tmp/out"; then bad "$cmd --help shows CLI11's type names"; fi
done
run "$bin" check --help
for want in "--reserve GiB" "--root DIR" "--runtime-timeout SECONDS" "--fail-on error|warning|info|never" \
  "--only RULE,..." "--batch SEQUENCES"; do
  grep -qF -- "$want" "$tmp/out" || bad "check --help lacks '$want'"
done
# The groups, in this order, plan's options under their own heading.
groups=$(grep -E '^[A-Z][^:]*:$' "$tmp/out" | tr '\n' '/')
case $groups in
*"What to judge:/Output:/Gate (the exit code):/A training run to judge too"*) ;;
*) bad "check --help groups: $groups" ;;
esac
awk '/^A training run/{p=1} p' "$tmp/out" | grep -q -- "--model" || bad "--model is not under the training-run heading"
awk '/^What to judge:/{p=1} /^Output:/{p=0} p' "$tmp/out" | grep -q -- "--model" && bad "--model listed among what to judge"
run "$bin" slurm prolog --help
grep -qF -- "--timeout SECONDS" "$tmp/out" || bad "slurm prolog --help lacks '--timeout SECONDS'"

# --root naming no machine's root: exit 2 with the reason, never a healthy report.
mkdir "$tmp/empty"
run "$bin" check --root "$tmp/empty" --no-runtime
[ "$code" = 2 ] && grep -q "no proc, sys or etc under it" "$tmp/err" || bad "empty --root: exit $code: $(cat "$tmp/err")"
[ -s "$tmp/out" ] && bad "empty --root printed a report"
run "$bin" facts --root "$tmp/empty"
[ "$code" = 2 ] || bad "facts on an empty --root exited $code"
mkdir "$tmp/empty/etc"
run "$bin" check --root "$tmp/empty" --no-runtime
[ "$code" = 2 ] && bad "a root with /etc was refused: $(cat "$tmp/err")"

# The seed's report: a 40-line screen, -q one line per finding, lines within the width.
unset COLUMNS
run "$bin" check --root "$seed" --no-runtime --color never
[ "$code" = 1 ] || bad "seed check exited $code"
cp "$tmp/out" "$tmp/default"
lines=$(wc -l <"$tmp/default")
[ "$lines" -le 40 ] || bad "the seed report is $lines lines, more than a 40-line screen"
awk 'length > 100 { print "FAIL line over 100 columns: " $0; bad=1 } END { exit bad }' "$tmp/default" || fail=1
grep -q "kernel.ubuntu_abi" "$tmp/default" && bad "the default report shows the Ubuntu ABI field on Fedora"
[ "$(grep -c 'rebuild the initramfs' "$tmp/default")" = 1 ] || bad "the initramfs step is not shown once"
grep -q "ERROR" "$tmp/default" && bad "the report prints ERROR"
tail -1 "$tmp/default" | grep -q '^next: sudo halo-doctor fix, then reboot' || bad "the last line is not the next step"
run "$bin" check --root "$seed" --no-runtime --color never -q
[ "$code" = 1 ] || bad "seed check -q exited $code"
[ "$(grep -cE '^(FAIL|WARN|UNKNOWN) ' "$tmp/out")" = 2 ] || bad "-q does not print 2 findings: $(cat "$tmp/out")"
grep -qE '^WARN +gfx1151-kernel-min, gfx1151-cwsr-hang ' "$tmp/out" || bad "-q: the kernel's two rules are not one finding"
qlines=$(wc -l <"$tmp/out")
[ "$qlines" -le 5 ] || bad "-q is $qlines lines"
COLUMNS=60 run "$bin" check --root "$seed" --no-runtime --color never
awk 'length > 60 { print "FAIL line over 60 columns with COLUMNS=60: " $0; bad=1 } END { exit bad }' "$tmp/out" || fail=1
# The JSON report still holds each rule's result.
run "$bin" check --root "$seed" --no-runtime --format json
for id in ttm-limit-low gfx1151-kernel-min gfx1151-cwsr-hang; do
  grep -q "\"id\": \"$id\"" "$tmp/out" || bad "JSON lacks $id"
done
echo "seed report: $lines lines (default), $qlines lines (-q)"
[ $fail = 0 ] && echo "ok: cli_ux"
exit $fail

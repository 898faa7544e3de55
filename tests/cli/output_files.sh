#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# shellcheck disable=SC2015 # `test && ok ... || bad ...`: ok only echoes, so bad never follows it
# Issue 44 item 1: every output is a new file. With the real binary, for each writer of a file
# (`fix -o`, `check -o`, `capture -o`, `slurm --report-dir`):
# - a planted file of mode 6777 (set-user-ID, set-group-ID, world-writable) is replaced by a new
#   file of mode 0644 (umask 022) owned by the doctor's user, never keeping the planted mode;
# - in a sticky world-writable directory (mode 1777, as /tmp), a file, a FIFO or a symlink owned by
#   another user is refused with exit 2 and left as it was (the kernel's fs.protected_regular,
#   protected_fifos and protected_symlinks, Documentation/admin-guide/sysctl/fs.rst), while the
#   doctor's own file there is replaced;
# - a symlink at the output path is never followed to its target.
# The ownership cases need root (chown); without it they are skipped with a message, the rest runs.
# Usage: output_files.sh HALO_DOCTOR FIXTURES_DIR
set -u
bin=$(realpath "$1")
fixtures=$(realpath "$2")
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
umask 022
fail=0
bad() { echo "FAIL: $*"; fail=1; }
ok() { echo "ok: $*"; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
chmod 755 "$tmp"
fx="$fixtures/strix-halo-default-ttm"
me=$(id -u)

# expect_new FILE WHAT: FILE is a regular file of mode 644 owned by this user, and not "planted".
expect_new() {
  local mode owner
  mode=$(stat -c %a "$1")
  owner=$(stat -c %u "$1")
  if [ ! -L "$1" ] && [ -f "$1" ] && [ "$mode" = 644 ] && [ "$owner" = "$me" ] &&
    [ "$(head -c 7 "$1")" != planted ]; then
    ok "$2: a new file, mode 644, owner $owner"
  else
    bad "$2: mode $mode owner $owner (expected 644 and $me), $(head -c 40 "$1" | tr -dc '[:print:]')"
  fi
}
plant() { # plant FILE MODE
  printf 'planted\n' >"$1"
  chmod "$2" "$1"
}

echo "== a planted mode-6777 file is replaced by a new 0644 file"
mkdir "$tmp/out"
plant "$tmp/out/fix.sh" 6777
[ "$(stat -c %a "$tmp/out/fix.sh")" = 6777 ] || bad "could not plant mode 6777 (got $(stat -c %a "$tmp/out/fix.sh"))"
"$bin" fix --root "$fx" --no-runtime --stack grubby -o "$tmp/out/fix.sh" >/dev/null 2>"$tmp/err" || bad "fix -o: $(cat "$tmp/err")"
expect_new "$tmp/out/fix.sh" "fix -o over a 6777 fix.sh"
grep -q '^#!' "$tmp/out/fix.sh" || bad "fix.sh holds no script"
plant "$tmp/out/report.json" 6777
"$bin" check --root "$fx" --no-runtime -o "json:$tmp/out/report.json" >/dev/null 2>&1
expect_new "$tmp/out/report.json" "check -o over a 6777 report"
plant "$tmp/out/bundle.tar.gz" 6777
"$bin" capture --root "$fx" --no-runtime -o "$tmp/out/bundle.tar.gz" >/dev/null 2>"$tmp/err" || bad "capture -o: $(cat "$tmp/err")"
expect_new "$tmp/out/bundle.tar.gz" "capture -o over a 6777 bundle"
mkdir "$tmp/reports"
plant "$tmp/reports/slurm-health-check.txt" 6777
plant "$tmp/reports/slurm-health-check.json" 6777
printf '#!/bin/sh\necho "NodeName=n1 State=IDLE"\n' >"$tmp/scontrol"
chmod 755 "$tmp/scontrol"
"$bin" slurm health-check --node n1 --scontrol "$tmp/scontrol" --no-syslog --report-dir "$tmp/reports" \
  --no-runtime --root "$fx" >/dev/null 2>&1
expect_new "$tmp/reports/slurm-health-check.txt" "slurm --report-dir text over a 6777 file"
expect_new "$tmp/reports/slurm-health-check.json" "slurm --report-dir JSON over a 6777 file"
# A stricter umask is honoured (it can only remove bits): 077 gives 600.
plant "$tmp/out/private.json" 6777
(umask 077 && "$bin" check --root "$fx" --no-runtime -o "json:$tmp/out/private.json" >/dev/null 2>&1)
[ "$(stat -c %a "$tmp/out/private.json")" = 600 ] && ok "umask 077: mode 600" || bad "umask 077: mode $(stat -c %a "$tmp/out/private.json")"

echo "== a symlink at the output path is not followed"
printf 'victim\n' >"$tmp/victim"
chmod 600 "$tmp/victim"
ln -s "$tmp/victim" "$tmp/out/link.sh"
"$bin" fix --root "$fx" --no-runtime --stack grubby -o "$tmp/out/link.sh" >/dev/null 2>"$tmp/err"
code=$?
if [ "$code" = 2 ] && [ -L "$tmp/out/link.sh" ] && [ "$(cat "$tmp/victim")" = victim ] &&
  [ "$(stat -c %a "$tmp/victim")" = 600 ]; then
  ok "fix -o through a symlink: exit 2, link and target untouched"
else
  bad "fix -o through a symlink: exit $code, $(cat "$tmp/err")"
fi

echo "== another user's entries in a sticky world-writable directory"
if [ "$me" != 0 ]; then
  echo "SKIP (not root): planting files owned by another uid needs chown"
else
  other=65534 # nobody
  mkdir "$tmp/shared"
  chmod 1777 "$tmp/shared"
  # refused TARGET WHAT COMMAND...: exit 2 naming the owner, TARGET unchanged.
  refused() {
    local target=$1 what=$2 before after code
    shift 2
    before=$(stat -c '%i %a %u %s %Y' "$target")
    "$@" >/dev/null 2>"$tmp/err"
    code=$?
    after=$(stat -c '%i %a %u %s %Y' "$target")
    if [ "$code" = 2 ] && [ "$before" = "$after" ] && grep -q "owned by uid $other in a sticky directory" "$tmp/err"; then
      ok "$what: exit 2, left as it was"
    else
      bad "$what: exit $code, before '$before' after '$after': $(cat "$tmp/err")"
    fi
  }
  plant "$tmp/shared/fix.sh" 6777
  chown "$other:$other" "$tmp/shared/fix.sh"
  refused "$tmp/shared/fix.sh" "fix -o over another user's file" \
    "$bin" fix --root "$fx" --no-runtime --stack grubby -o "$tmp/shared/fix.sh"
  plant "$tmp/shared/report.json" 644
  chown "$other:$other" "$tmp/shared/report.json"
  refused "$tmp/shared/report.json" "check -o over another user's file" \
    "$bin" check --root "$fx" --no-runtime -o "json:$tmp/shared/report.json"
  plant "$tmp/shared/bundle.tar.gz" 644
  chown "$other:$other" "$tmp/shared/bundle.tar.gz"
  refused "$tmp/shared/bundle.tar.gz" "capture -o over another user's file" \
    "$bin" capture --root "$fx" --no-runtime -o "$tmp/shared/bundle.tar.gz"
  # Another user's symlink to a character device is not followed (protected_symlinks); the
  # same link of the doctor's own user would be written through (a FIFO or /dev/null).
  ln -s /dev/null "$tmp/shared/null.json"
  chown -h "$other:$other" "$tmp/shared/null.json"
  refused "$tmp/shared/null.json" "check -o through another user's symlink" \
    "$bin" check --root "$fx" --no-runtime -o "json:$tmp/shared/null.json"
  mkfifo "$tmp/shared/fifo.json"
  chown "$other:$other" "$tmp/shared/fifo.json"
  refused "$tmp/shared/fifo.json" "check -o into another user's FIFO" \
    timeout 20 "$bin" check --root "$fx" --no-runtime -o "json:$tmp/shared/fifo.json"
  # The doctor's own file in the same directory, and one owned by the directory's owner, are
  # replaced (as the kernel allows both).
  plant "$tmp/shared/own.json" 6777
  "$bin" check --root "$fx" --no-runtime -o "json:$tmp/shared/own.json" >/dev/null 2>&1
  expect_new "$tmp/shared/own.json" "check -o over its own file in a sticky directory"
  mkdir "$tmp/dirowner"
  chown "$other:$other" "$tmp/dirowner"
  chmod 1777 "$tmp/dirowner"
  plant "$tmp/dirowner/r.json" 644
  chown "$other:$other" "$tmp/dirowner/r.json"
  "$bin" check --root "$fx" --no-runtime -o "json:$tmp/dirowner/r.json" >/dev/null 2>&1
  expect_new "$tmp/dirowner/r.json" "check -o over the directory owner's file"
  # Not sticky: another user's file in a directory the doctor may write is its to replace.
  mkdir "$tmp/plain"
  plant "$tmp/plain/r.json" 6777
  chown "$other:$other" "$tmp/plain/r.json"
  "$bin" check --root "$fx" --no-runtime -o "json:$tmp/plain/r.json" >/dev/null 2>&1
  expect_new "$tmp/plain/r.json" "check -o over another user's 6777 file in a private directory"
fi
exit $fail

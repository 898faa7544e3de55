#!/usr/bin/env bash
# Untrusted input and outputs (issue 12, docs/security.md), with the real binary:
# - outputs: regular files replaced atomically (never through a planted symlink), devices and
#   pipes written in place and never replaced, directories and links refused (exit 2), failed
#   writes exit 70 with the reason and leave no file;
# - escaping: facts holding bytes that are not UTF-8, control characters and terminal escapes give
#   valid JSON (python3 json), valid XML (xmllint), valid Prometheus text (promtool), one npd line
#   and a text report without escape sequences, the bytes kept visible as \xNN;
# - bounded reads, bundles, roots, policies and numbers: clear errors and documented exit codes,
#   never a signal, a hang or a host file's content.
set -u
bin=$(realpath "$1")
fixtures=$(realpath "$2")
fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
bad() { echo "FAIL: $*"; fail=1; }
ok() { echo "ok: $*"; }
fx="$fixtures/strix-halo-default-ttm"

# run CODE PATTERN -- command...: exit code CODE (within 20 s), stderr matching PATTERN.
run() {
  local want=$1 pattern=$2
  shift 3
  timeout -s KILL 20 "$@" >"$tmp/out" 2>"$tmp/err"
  local code=$?
  if [ "$code" != "$want" ]; then bad "'$*' exited $code, expected $want"; cat "$tmp/err"; return 1; fi
  if [ -n "$pattern" ] && ! grep -qE -- "$pattern" "$tmp/err"; then
    bad "'$*': stderr lacks /$pattern/"; cat "$tmp/err"; return 1
  fi
  ok "$* -> $code"
}

echo "== outputs"
# A FIFO is written in place, never replaced by a regular file.
mkfifo "$tmp/fifo"
timeout 20 cat "$tmp/fifo" >"$tmp/from-fifo" &
reader=$!
run 1 "" -- "$bin" check --root "$fx" --no-runtime -o "json:$tmp/fifo"
wait "$reader"
[ -p "$tmp/fifo" ] && ok "the FIFO is still a FIFO" || bad "the FIFO was replaced"
python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$tmp/from-fifo" && ok "JSON through the FIFO" ||
  bad "the FIFO's reader got no JSON report"
# Character devices are written in place, never replaced. As root the test makes its own null and
# full devices (a build that renamed over /dev/null would break the machine); otherwise the real
# ones are safe to use (an ordinary user cannot replace them).
if [ "$(id -u)" = 0 ] && mknod -m 666 "$tmp/null" c 1 3 && mknod -m 666 "$tmp/full" c 1 7; then
  null=$tmp/null full=$tmp/full
else
  null=/dev/null full=/dev/full
fi
run 1 "" -- "$bin" check --root "$fx" --no-runtime -o "json:$null" --format npd
[ -c "$null" ] && ok "$null is still a character device" || bad "$null is no longer a device"
# The report reaches a pipe through a link (/dev/stdout is one), and a redirected stdout through
# /dev/fd/1, without the link or the file behind it being replaced.
ln -s /proc/self/fd/1 "$tmp/stdout-link"
"$bin" check --root "$fx" --no-runtime --format json -o "$tmp/stdout-link" | python3 -c 'import json,sys; json.load(sys.stdin)' &&
  ok "a link to stdout into a pipe" || bad "a link to stdout into a pipe"
[ -L "$tmp/stdout-link" ] && ok "the link stays a link" || bad "the link to stdout was replaced"
"$bin" check --root "$fx" --no-runtime --format json -o /dev/fd/1 >"$tmp/stdout.json"
python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$tmp/stdout.json" && ok "-o /dev/fd/1 into a file" ||
  bad "-o /dev/fd/1 into a file"
# A directory is refused with exit 2 and nothing is left in it or beside it.
mkdir "$tmp/outdir"
run 2 "outdir: is a directory" -- "$bin" check --root "$fx" --no-runtime -o "json:$tmp/outdir"
[ -z "$(ls -A "$tmp/outdir")" ] && ! ls -a "$tmp" | grep -q '\.tmp' && ok "nothing left behind" || bad "files left: $(ls -a "$tmp" "$tmp/outdir")"
run 2 "is a directory" -- "$bin" facts --root "$fx" --no-runtime -o "$tmp/outdir"
run 2 "is a directory" -- "$bin" capture --root "$fx" --no-runtime -o "$tmp/outdir"
# A planted symlink where the old temporary file (PATH.tmp) was is never followed.
echo "victim" >"$tmp/victim"
ln -s "$tmp/victim" "$tmp/report.json.tmp"
run 1 "" -- "$bin" check --root "$fx" --no-runtime -o "json:$tmp/report.json"
[ "$(cat "$tmp/victim")" = "victim" ] && ok "the planted link's target is untouched" || bad "the planted link's target was written"
python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$tmp/report.json" && ok "report.json written" || bad "report.json"
# A symlink at the output path is not followed to a regular file.
ln -s "$tmp/victim" "$tmp/link.json"
run 2 "symbolic link" -- "$bin" check --root "$fx" --no-runtime -o "json:$tmp/link.json"
[ "$(cat "$tmp/victim")" = "victim" ] && [ -L "$tmp/link.json" ] && ok "the link and its target are untouched" || bad "the link was followed or replaced"
# An existing report is replaced and keeps its mode.
echo old >"$tmp/keep.json"
chmod 640 "$tmp/keep.json"
run 1 "" -- "$bin" check --root "$fx" --no-runtime -o "json:$tmp/keep.json"
[ "$(stat -c %a "$tmp/keep.json")" = 640 ] && grep -q '"schema_version"' "$tmp/keep.json" && ok "replaced, mode 640 kept" ||
  bad "keep.json: mode $(stat -c %a "$tmp/keep.json")"
# Failed writes: exit 70 with the reason, no partial file.
run 70 "full: cannot be written: No space left on device" -- "$bin" check --root "$fx" --no-runtime -o "json:$full"
[ -c "$full" ] && ok "$full is still a character device" || bad "$full is no longer a device"
run 70 "standard output cannot be written" -- sh -c "\"$bin\" check --root \"$fx\" --no-runtime >\"$full\""
run 70 "big.json: cannot be written: File too large" -- bash -c "trap '' XFSZ; ulimit -f 1; exec \"$bin\" check --root \"$fx\" --no-runtime -o json:$tmp/big.json >/dev/null"
[ ! -e "$tmp/big.json" ] && ! ls -a "$tmp" | grep -q 'big.json' && ok "no partial big.json" || bad "partial file: $(ls -a "$tmp" | grep big)"

echo "== escaping: bytes that are not UTF-8, control characters, terminal escapes"
evil="$tmp/evil-root"
cp -r "$fx" "$evil"
printf 'BOOT_IMAGE=/vmlinuz root=/dev/sda1 ro amdgpu.x=\xff\xa0 \033]0;pwned\007 \033[2J foo\001bar\r\n' >"$evil/proc/cmdline"
printf 'PRETTY_NAME="Evil \033[31m\xff OS"\nID=evil\n' >"$evil/etc/os-release"
for format in json text junit prometheus npd; do
  timeout -s KILL 20 "$bin" check --root "$evil" --no-runtime --format "$format" >"$tmp/evil.$format" 2>"$tmp/err"
  code=$?
  [ "$code" = 1 ] && ok "--format $format exits 1" || { bad "--format $format exited $code"; cat "$tmp/err"; }
done
"$bin" facts --root "$evil" --no-runtime --format json >"$tmp/evil-facts.json" || bad "facts --format json exited $?"
"$bin" facts --root "$evil" --no-runtime >"$tmp/evil-facts.txt" || bad "facts exited $?"
for f in "$tmp/evil.json" "$tmp/evil-facts.json"; do
  python3 - "$f" <<'PY' && ok "$(basename "$f"): valid JSON with the bytes as \\xNN" || bad "$(basename "$f")"
import json, sys
text = open(sys.argv[1], "rb").read().decode("utf-8")  # strict: valid UTF-8
doc = json.loads(text)
assert "amdgpu.x=\\xFF\\xA0" in text.replace("\\\\", "\\"), "raw bytes not kept as \\xNN"
PY
done
xmllint --noout "$tmp/evil.junit" && ok "junit is valid XML" || bad "junit is not valid XML"
grep -q 'amdgpu.x=\\xFF\\xA0' "$tmp/evil.junit" && ok "junit keeps the bytes as \\xNN" || bad "junit lost the bytes"
if command -v promtool >/dev/null; then
  promtool check metrics <"$tmp/evil.prometheus" >"$tmp/promtool.out" 2>&1 && ok "promtool accepts the exposition" ||
    { bad "promtool check metrics"; cat "$tmp/promtool.out"; }
fi
iconv -f UTF-8 -t UTF-8 "$tmp/evil.prometheus" >/dev/null && ok "prometheus text is UTF-8" || bad "prometheus text is not UTF-8"
for f in "$tmp/evil.text" "$tmp/evil-facts.txt" "$tmp/evil.npd" "$tmp/evil.prometheus"; do
  if LC_ALL=C grep -q $'[\001-\010\013-\037\177]' "$f"; then bad "$(basename "$f") holds control characters"; else ok "$(basename "$f") has no control characters"; fi
done
grep -qF 'amdgpu.x=\xFF\xA0 \x1B]0;pwned\x07' "$tmp/evil.text" && ok "text shows the bytes as \\xNN" || bad "text lost the bytes"
[ "$(wc -l <"$tmp/evil.npd")" = 1 ] && ok "npd: one line" || bad "npd: $(wc -l <"$tmp/evil.npd") lines"
"$bin" check --root "$evil" --no-runtime --color always >"$tmp/evil-color.txt"
if grep -q $'\033\\[2J\\|\033]0' "$tmp/evil-color.txt"; then bad "escape sequences from facts reach a colour terminal"; else ok "--color always: only the reporter's colours"; fi

exit $fail

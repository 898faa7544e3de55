#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
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
replay=$(realpath "$3")   # tests/replay's ROCr (HALO_REPLAY_MODE=hang keeps a child busy)
captures=$(realpath "$4") # tests/replay/captures
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
  timeout -s KILL 60 "$@" >"$tmp/out" 2>"$tmp/err"
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
# A FIFO nobody reads: a clear error after a bounded wait, not a hang.
mkfifo "$tmp/fifo-unread"
run 70 "fifo-unread: cannot be written: no process reads this FIFO" -- "$bin" check --root "$fx" --no-runtime -o "json:$tmp/fifo-unread"
if [ -p "$tmp/fifo" ]; then ok "the FIFO is still a FIFO"; else bad "the FIFO was replaced"; fi
if python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$tmp/from-fifo"; then ok "JSON through the FIFO"; else bad "the FIFO's reader got no JSON report"; fi
# Character devices are written in place, never replaced. As root the test makes its own null and
# full devices (a build that renamed over /dev/null would break the machine); otherwise the real
# ones are safe to use (an ordinary user cannot replace them).
if [ "$(id -u)" = 0 ] && mknod -m 666 "$tmp/null" c 1 3 && mknod -m 666 "$tmp/full" c 1 7; then
  null=$tmp/null full=$tmp/full
else
  null=/dev/null full=/dev/full
fi
run 1 "" -- "$bin" check --root "$fx" --no-runtime -o "json:$null" --format npd
if [ -c "$null" ]; then ok "$null is still a character device"; else bad "$null is no longer a device"; fi
# The report reaches a pipe through a link (/dev/stdout is one), and a redirected stdout through
# /dev/fd/1, without the link or the file behind it being replaced.
ln -s /proc/self/fd/1 "$tmp/stdout-link"
if "$bin" check --root "$fx" --no-runtime --format json -o "$tmp/stdout-link" | python3 -c 'import json,sys; json.load(sys.stdin)'; then
  ok "a link to stdout into a pipe"
else
  bad "a link to stdout into a pipe"
fi
if [ -L "$tmp/stdout-link" ]; then ok "the link stays a link"; else bad "the link to stdout was replaced"; fi
"$bin" check --root "$fx" --no-runtime --format json -o /dev/fd/1 >"$tmp/stdout.json"
if python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$tmp/stdout.json"; then ok "-o /dev/fd/1 into a file"; else bad "-o /dev/fd/1 into a file"; fi
# A directory is refused with exit 2 and nothing is left in it or beside it.
mkdir "$tmp/outdir"
run 2 "outdir: is a directory" -- "$bin" check --root "$fx" --no-runtime -o "json:$tmp/outdir"
if [ -z "$(ls -A "$tmp/outdir")" ] && [ -z "$(find "$tmp" -maxdepth 1 -name '*.tmp')" ]; then ok "nothing left behind"; else bad "files left: $(ls -a "$tmp" "$tmp/outdir")"; fi
run 2 "is a directory" -- "$bin" facts --root "$fx" --no-runtime -o "$tmp/outdir"
run 2 "is a directory" -- "$bin" capture --root "$fx" --no-runtime -o "$tmp/outdir"
# A planted symlink where the old temporary file (PATH.tmp) was is never followed.
echo "victim" >"$tmp/victim"
ln -s "$tmp/victim" "$tmp/report.json.tmp"
run 1 "" -- "$bin" check --root "$fx" --no-runtime -o "json:$tmp/report.json"
if [ "$(cat "$tmp/victim")" = "victim" ]; then ok "the planted link's target is untouched"; else bad "the planted link's target was written"; fi
if python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$tmp/report.json"; then ok "report.json written"; else bad "report.json"; fi
# A symlink at the output path is not followed to a regular file.
ln -s "$tmp/victim" "$tmp/link.json"
run 2 "symbolic link" -- "$bin" check --root "$fx" --no-runtime -o "json:$tmp/link.json"
if [ "$(cat "$tmp/victim")" = "victim" ] && [ -L "$tmp/link.json" ]; then ok "the link and its target are untouched"; else bad "the link was followed or replaced"; fi
# An existing report is replaced by a new file: mode 0644 less the umask, never the old file's
# (issue 44: a planted 6777 file must not come back set-user-ID; tests/cli/output_files.sh).
echo old >"$tmp/keep.json"
chmod 640 "$tmp/keep.json"
run 1 "" -- bash -c "umask 022; exec \"$bin\" check --root \"$fx\" --no-runtime -o \"json:$tmp/keep.json\""
if [ "$(stat -c %a "$tmp/keep.json")" = 644 ] && grep -q '"schema_version"' "$tmp/keep.json"; then ok "replaced by a new file, mode 644"; else bad "keep.json: mode $(stat -c %a "$tmp/keep.json")"; fi
# Failed writes: exit 70 with the reason, no partial file.
run 70 "full: cannot be written: No space left on device" -- "$bin" check --root "$fx" --no-runtime -o "json:$full"
if [ -c "$full" ]; then ok "$full is still a character device"; else bad "$full is no longer a device"; fi
run 70 "standard output cannot be written" -- sh -c "\"$bin\" check --root \"$fx\" --no-runtime >\"$full\""
run 70 "big.json: cannot be written: File too large" -- bash -c "trap '' XFSZ; ulimit -f 1; exec \"$bin\" check --root \"$fx\" --no-runtime -o json:$tmp/big.json >/dev/null"
if [ -z "$(find "$tmp" -maxdepth 1 -name '*big.json*')" ]; then ok "no partial big.json"; else bad "partial file: $(find "$tmp" -maxdepth 1 -name '*big.json*')"; fi

echo "== escaping: bytes that are not UTF-8, control characters, terminal escapes"
evil="$tmp/evil-root"
cp -r "$fx" "$evil"
printf 'BOOT_IMAGE=/vmlinuz root=/dev/sda1 ro amdgpu.x=\xff\xa0 \033]0;pwned\007 \033[2J foo\001bar\r\n' >"$evil/proc/cmdline"
printf 'PRETTY_NAME="Evil \033[31m\xff OS"\nID=evil\n' >"$evil/etc/os-release"
for format in json text junit prometheus npd; do
  timeout -s KILL 20 "$bin" check --root "$evil" --no-runtime --format "$format" >"$tmp/evil.$format" 2>"$tmp/err"
  code=$?
  if [ "$code" = 1 ]; then ok "--format $format exits 1"; else bad "--format $format exited $code"; cat "$tmp/err"; fi
done
"$bin" facts --root "$evil" --no-runtime --format json >"$tmp/evil-facts.json" || bad "facts --format json exited $?"
"$bin" facts --root "$evil" --no-runtime >"$tmp/evil-facts.txt" || bad "facts exited $?"
for f in "$tmp/evil.json" "$tmp/evil-facts.json"; do
  if python3 - "$f" <<'PY'
import json, sys
text = open(sys.argv[1], "rb").read().decode("utf-8")  # strict: valid UTF-8
doc = json.dumps(json.loads(text))
assert "amdgpu.x=\\\\xFF\\\\xA0" in doc, "raw bytes not kept as \\xNN"
PY
  then ok "$(basename "$f"): valid JSON with the bytes as \\xNN"; else bad "$(basename "$f")"; fi
done
if xmllint --noout "$tmp/evil.junit"; then ok "junit is valid XML"; else bad "junit is not valid XML"; fi
if grep -q 'amdgpu.x=\\xFF\\xA0' "$tmp/evil.junit"; then ok "junit keeps the bytes as \\xNN"; else bad "junit lost the bytes"; fi
if command -v promtool >/dev/null; then
  if promtool check metrics <"$tmp/evil.prometheus" >"$tmp/promtool.out" 2>&1; then ok "promtool accepts the exposition"; else bad "promtool check metrics"; cat "$tmp/promtool.out"; fi
fi
if iconv -f UTF-8 -t UTF-8 "$tmp/evil.prometheus" >/dev/null; then ok "prometheus text is UTF-8"; else bad "prometheus text is not UTF-8"; fi
for f in "$tmp/evil.text" "$tmp/evil-facts.txt" "$tmp/evil.npd" "$tmp/evil.prometheus"; do
  if LC_ALL=C grep -q $'[\001-\010\013-\037\177]' "$f"; then bad "$(basename "$f") holds control characters"; else ok "$(basename "$f") has no control characters"; fi
done
# The default text report shows only the facts that decided a verdict; -v shows every fact a rule read,
# the command line among them (wide, so the escaped value is not wrapped).
COLUMNS=1000 timeout -s KILL 20 "$bin" check -v --root "$evil" --no-runtime >"$tmp/evil-v.text" 2>/dev/null
if LC_ALL=C grep -q $'[\001-\010\013-\037\177]' "$tmp/evil-v.text"; then bad "evil-v.text holds control characters"; else ok "evil-v.text has no control characters"; fi
if grep -qF 'amdgpu.x=\xFF\xA0 \x1B]0;pwned\x07' "$tmp/evil-v.text"; then ok "text -v shows the bytes as \\xNN"; else bad "text -v lost the bytes"; fi
if [ "$(wc -l <"$tmp/evil.npd")" = 1 ]; then ok "npd: one line"; else bad "npd: $(wc -l <"$tmp/evil.npd") lines"; fi
"$bin" check --root "$evil" --no-runtime --color always >"$tmp/evil-color.txt"
if grep -q $'\033\\[2J\\|\033]0' "$tmp/evil-color.txt"; then bad "escape sequences from facts reach a colour terminal"; else ok "--color always: only the reporter's colours"; fi



echo "== bounded reads: only regular files of bounded size"
run 2 "/dev/zero: cannot be read: a character device, not a regular file" -- "$bin" check --facts /dev/zero
run 2 "/dev/zero: cannot be read" -- "$bin" check --root "$fx" --no-runtime --add-facts /dev/zero
mkdir "$tmp/rules-fifo"
printf '{"area": "a", "rules": [{"id": "x", "title": "t", "pass_message": "p", "why": "w", "sources": [],\n "fail": [{"severity": "error", "when": {"fact": "kernel.release", "eq": "0"}, "message": "m"}]}]}\n' >"$tmp/rules-fifo/a.json"
mkfifo "$tmp/rules-fifo/zz.json"
run 2 "zz.json: cannot be read: a FIFO, not a regular file" -- "$bin" check --root "$fx" --no-runtime --rules "$tmp/rules-fifo"
mkfifo "$tmp/policy-fifo.json"
run 2 "policy-fifo.json: cannot be read: a FIFO" -- "$bin" check --root "$fx" --no-runtime --policy "$tmp/policy-fifo.json"
head -c 20000000 /dev/zero | tr '\0' ' ' >"$tmp/huge.json"
run 2 "huge.json: cannot be read: longer than 16777216 bytes" -- "$bin" check --facts "$tmp/huge.json"

echo "== parsers and numbers"
python3 - "$tmp" <<'PY'
import json, sys
d = sys.argv[1]
deep = 200000
open(d + "/deep-facts.json", "w").write('{"schema_version":1,"facts":{"a":{"status":"ok","value":' + "[" * deep + "]" * deep + "}}}")
open(d + "/deep-policy.json", "w").write('{"policy_version":1,"thresholds":' + '{"a":' * deep + "1" + "}" * deep + "}")
open(d + "/huge-number.json", "w").write('{"schema_version":1,"facts":{"a":{"status":"ok","value":1e400}}}')
json.dump({"policy_version": 4294967297}, open(d + "/version-overflow.json", "w"))
waivers = [{"rule": "ttm-limit-low", "reason": "r%d" % i, "owner": "o", "expires": "2099-01-01"} for i in range(16000)]
json.dump({"policy_version": 1, "waivers": waivers}, open(d + "/waivers-16k.json", "w"), indent=2)
PY
run 2 "deep-facts.json:1: not valid JSON: nested deeper than 64 levels" -- "$bin" check --facts "$tmp/deep-facts.json"
run 2 "deep-policy.json:1: not valid JSON: nested deeper than 64 levels" -- "$bin" check --root "$fx" --no-runtime --policy "$tmp/deep-policy.json"
run 2 "huge-number.json: not valid JSON: .*number overflow parsing '1e400'" -- "$bin" check --facts "$tmp/huge-number.json"
printf '{"schema_version": 1, "facts": {"ttm.pages_limit_pages": {"status": "ok", "value": 18446744073709551615}}}\n' >"$tmp/u64.json"
run 2 "u64.json: not a halo-doctor facts file: fact 'ttm.pages_limit_pages': an integer value must fit a signed 64-bit integer" -- "$bin" check --facts "$tmp/u64.json"
run 2 "policy_version: must be 1" -- "$bin" check --root "$fx" --no-runtime --policy "$tmp/version-overflow.json"
run 2 "--runtime-timeout: 'nan' is not a finite number" -- "$bin" check --root "$fx" --runtime-timeout nan
run 2 "--runtime-timeout: 'inf' is not a finite number" -- "$bin" capture --root "$fx" -o "$tmp/x.tar.gz" --runtime-timeout inf
# 16,000 waivers load (once 14 s: a line lookup per waiver scanned the whole text). How fast is
# measured by scripts/bench-check.sh --suite, not here: a timed test fails on a loaded machine.
run 0 "" -- "$bin" check --root "$fx" --no-runtime --policy "$tmp/waivers-16k.json"
# A rule's regular expression cannot backtrack exponentially (RE2): `(a+)+$` against 40 a's and a b.
long=$tmp/long-release
cp -r "$fx" "$long"
printf '%s\n' "$(printf 'a%.0s' $(seq 40))b" >"$long/proc/sys/kernel/osrelease"
mkdir "$tmp/rules-re"
printf '{"area": "a", "rules": [{"id": "x", "title": "t", "pass_message": "p", "why": "w", "sources": [],\n "fail": [{"severity": "error", "when": {"fact": "kernel.release", "matches": "(a+)+$"}, "message": "m"}]}]}\n' >"$tmp/rules-re/re.json"
# Exponential backtracking would take about 2^40 steps: run's 60 s kill (exit 137) fails it.
run 0 "" -- "$bin" check --root "$long" --no-runtime --rules "$tmp/rules-re"
printf '{"area": "a", "rules": [{"id": "x", "title": "t", "pass_message": "p", "why": "w", "sources": [],\n "fail": [{"severity": "error", "when": {"fact": "kernel.release", "matches": "(a)\\\\1"}, "message": "m"}]}]}\n' >"$tmp/rules-re/re.json"
run 2 "re.json:.*bad regular expression" -- "$bin" check --root "$long" --no-runtime --rules "$tmp/rules-re"
# Unbounded recursion: a 30,000-digit HSA_OVERRIDE_GFX_VERSION and a 60,000-character kernel
# release crashed std::regex with SIGSEGV.
python3 - "$long" <<'PY'
import sys
root = sys.argv[1]
open(root + "/proc/self/environ", "wb").write(b"PATH=/usr/bin\0HSA_OVERRIDE_GFX_VERSION=" + b"1" * 30000 + b".0.0\0")
open(root + "/proc/sys/kernel/osrelease", "w").write("6.8.0-" + "a" * 60000 + "\n")
PY
run 1 "" -- "$bin" check --root "$long" --no-runtime
"$bin" facts --root "$long" --no-runtime --format json >"$tmp/long.json"
if python3 -c 'import json,sys; f=json.load(open(sys.argv[1]))["facts"]; assert f["kernel.version"]["value"]=="6.8.0", f["kernel.version"]' "$tmp/long.json"; then
  ok "the long release still gives kernel.version 6.8.0"
else
  bad "kernel.version of the long release"
fi
echo "== capture bundles are hostile input"
bundles=$tmp/bundles
mkdir -p "$bundles/tmp" "$bundles/bin"
"$bin" capture --root "$fx" --no-runtime --no-redact -o "$bundles/good.tar.gz" >/dev/null || bad "capture exited $?"
python3 - "$bundles" <<'PY'
import io, sys, tarfile
d = sys.argv[1]
good = tarfile.open(d + "/good.tar.gz")
members = [(m, good.extractfile(m).read() if m.isfile() else None) for m in good.getmembers()]
def make(name, extra, drop=(), mode="w:gz"):
    with tarfile.open(d + "/" + name, mode) as t:
        for m, data in members + extra:
            if m.name in drop and (m, data) not in extra:
                continue
            t.addfile(m, io.BytesIO(data) if data is not None else None)
def special(name, typ, target=""):
    m = tarfile.TarInfo(name)
    m.type, m.linkname, m.devmajor, m.devminor = typ, target, 1, 5
    return (m, None)
make("abs-link.tar.gz", [special("proc/sys/kernel/hostname", tarfile.SYMTYPE, "/etc/hostname")], drop=("proc/sys/kernel/hostname",))
make("up-link.tar.gz", [special("etc/os-release", tarfile.SYMTYPE, "../../../../../../etc/os-release")], drop=("etc/os-release",))
make("chardev.tar.gz", [special("proc/cmdline", tarfile.CHRTYPE)], drop=("proc/cmdline",))
make("fifo.tar.gz", [special("proc/meminfo", tarfile.FIFOTYPE)], drop=("proc/meminfo",))
big = tarfile.TarInfo("proc/big")
big.size = 40 * 1024 * 1024
make("bomb.tar.gz", [(big, b"\0" * big.size)])
many = []
for i in range(20001):
    m = tarfile.TarInfo("many/%d" % i)
    many.append((m, b""))
make("many.tar.gz", many)
make("good.tar.xz", [], mode="w:xz")
make("good.tar.bz2", [], mode="w:bz2")
open(d + "/x.lrz", "wb").write(b"LRZI\0\x06" + bytes(range(256)))
open(d + "/x.lzo", "wb").write(b"\x89LZO\0\r\n\x1a\n" + bytes(range(256)))
PY
for b in good.tar.gz good.tar.xz good.tar.bz2; do
  TMPDIR=$bundles/tmp run 1 "" -- "$bin" check --bundle "$bundles/$b" --no-runtime
done
TMPDIR=$bundles/tmp run 2 "hostname' is a symbolic link to '/etc/hostname', outside the bundle" -- "$bin" check --bundle "$bundles/abs-link.tar.gz" --no-runtime
if grep -qF "$(cat /etc/hostname 2>/dev/null || echo no-host-file)" "$tmp/out"; then bad "the host's /etc/hostname reached the report"; fi
TMPDIR=$bundles/tmp run 2 "os-release' is a symbolic link to .*outside the bundle" -- "$bin" check --bundle "$bundles/up-link.tar.gz" --no-runtime
TMPDIR=$bundles/tmp run 2 "'proc/cmdline' is not a regular file, directory or symbolic link" -- "$bin" check --bundle "$bundles/chardev.tar.gz" --no-runtime
TMPDIR=$bundles/tmp run 2 "'proc/meminfo' is not a regular file, directory or symbolic link" -- "$bin" check --bundle "$bundles/fifo.tar.gz" --no-runtime
TMPDIR=$bundles/tmp run 2 "'proc/big' is larger than 16777216 bytes" -- "$bin" check --bundle "$bundles/bomb.tar.gz" --no-runtime
TMPDIR=$bundles/tmp run 2 "more than 20000 members" -- "$bin" check --bundle "$bundles/many.tar.gz" --no-runtime
run 2 "/dev/zero: cannot be read: not a regular file" -- "$bin" check --bundle /dev/zero --no-runtime
# Decompressors that are external programs (lrzip, lzop) never run, even when on PATH.
for prog in lrzip lzop; do
  printf '#!/bin/sh\ntouch "%s/%s-ran"\ncat >/dev/null\n' "$bundles" "$prog" >"$bundles/bin/$prog"
  chmod +x "$bundles/bin/$prog"
done
PATH="$bundles/bin:$PATH" TMPDIR=$bundles/tmp run 2 "not a readable capture bundle" -- "$bin" check --bundle "$bundles/x.lrz" --no-runtime
PATH="$bundles/bin:$PATH" TMPDIR=$bundles/tmp run 2 "not a readable capture bundle" -- "$bin" check --bundle "$bundles/x.lzo" --no-runtime
if [ -e "$bundles/lrzip-ran" ] || [ -e "$bundles/lzop-ran" ]; then bad "an external decompressor ran"; else ok "no external decompressor ran"; fi
if [ -z "$(ls -A "$bundles/tmp")" ]; then ok "no extraction directory left"; else bad "left in TMPDIR: $(ls "$bundles/tmp")"; fi
# fix --bundle writes the bundle's host name, not this machine's.
"$bin" fix --bundle "$bundles/good.tar.gz" --stack grubby >"$tmp/fix.sh" 2>/dev/null
want_host=$(cat "$fx/proc/sys/kernel/hostname")
if grep -q "^# halo-doctor fix for $want_host " "$tmp/fix.sh"; then ok "fix --bundle names $want_host"; else bad "fix --bundle: $(grep '^# halo-doctor fix for' "$tmp/fix.sh")"; fi
# SIGTERM while a bundle is being replayed and the ROCr child hangs: the extraction directory is
# removed and the child dies with the doctor (PR_SET_PDEATHSIG, process group).
HALO_REPLAY_MODE=hang HALO_REPLAY_CAPTURE="$captures/carveout-96g.json" TMPDIR=$bundles/tmp \
  "$bin" check --bundle "$bundles/good.tar.gz" --hsa-library "$replay" --runtime-timeout 60 >/dev/null 2>&1 &
doctor=$!
child=
for _ in $(seq 100); do
  child=$(pgrep -P "$doctor" | head -n 1)
  [ -n "$child" ] && [ -n "$(ls -A "$bundles/tmp")" ] && break
  sleep 0.1
done
if [ -n "$child" ]; then ok "the ROCr child $child is running"; else bad "no ROCr child appeared"; fi
kill -TERM "$doctor"
wait "$doctor"
code=$?
if [ "$code" = 143 ]; then ok "SIGTERM ends the doctor (143)"; else bad "the doctor exited $code after SIGTERM"; fi
for _ in $(seq 20); do
  if [ -z "$child" ] || ! kill -0 "$child" 2>/dev/null; then break; fi
  sleep 0.1
done
if [ -n "$child" ] && kill -0 "$child" 2>/dev/null; then bad "the ROCr child $child survived its parent"; kill -KILL "$child"; else ok "the ROCr child died with its parent"; fi
if [ -z "$(ls -A "$bundles/tmp")" ]; then ok "SIGTERM removed the extraction directory"; else bad "left after SIGTERM: $(ls "$bundles/tmp")"; fi

echo "== roots: every path resolves inside --root"
host=$tmp/host-secrets
mkdir -p "$host"
printf 'PRETTY_NAME="HOST SECRET OS"\nID=hostsecret\n' >"$host/os-release"
echo host-secret-name >"$host/hostname"
jail=$tmp/jail
cp -r "$fx" "$jail"
rm "$jail/etc/os-release" "$jail/proc/sys/kernel/hostname"
ln -s "$host/os-release" "$jail/etc/os-release"                             # absolute, to the host
ln -s "../../../../../../../../../../..$host/hostname" "$jail/proc/sys/kernel/hostname" # climbs out
"$bin" facts --root "$jail" --no-runtime >"$tmp/jail.txt" 2>&1
if grep -q "SECRET\|host-secret" "$tmp/jail.txt"; then bad "facts --root read host files through links"; else ok "facts --root: links stay inside the root"; fi
"$bin" capture --root "$jail" --no-runtime --no-redact -o "$tmp/jail.tar.gz" >/dev/null 2>&1
if tar -xzOf "$tmp/jail.tar.gz" 2>/dev/null | grep -q "SECRET\|host-secret"; then bad "capture --root copied host files"; else ok "capture --root: no host file in the bundle"; fi
# An absolute link whose target exists inside the root is read there, as on the target system.
mkdir -p "$jail/usr/lib"
printf 'PRETTY_NAME="Inside OS"\nID=inside\n' >"$jail/usr/lib/os-release"
rm "$jail/etc/os-release"
ln -s /usr/lib/os-release "$jail/etc/os-release"
if "$bin" facts --root "$jail" --no-runtime | grep -q '^os.pretty_name = Inside OS'; then ok "an absolute link resolves inside the root"; else bad "the absolute link did not resolve inside the root"; fi

echo "== nothing written but the named outputs and the private bundle directory (strace)"
if command -v strace >/dev/null; then
  calls="open,openat,openat2,creat,rename,renameat,renameat2,unlink,unlinkat,rmdir,mkdir,mkdirat"
  calls+=",mknod,mknodat,chmod,fchmodat,truncate,symlink,symlinkat,link,linkat"
  trace=(strace -f -qq -y -e "trace=$calls")
  out=$tmp/traced
  mkdir -p "$out/tmp"
  TMPDIR=$out/tmp "${trace[@]}" -o "$tmp/strace1.log" "$bin" check --bundle "$bundles/good.tar.gz" --no-runtime \
    -o "json:$out/r.json" -o "junit:$out/r.xml" -o "prometheus:$out/r.prom" >/dev/null 2>&1
  if python3 "$(dirname "$0")/strace_writes.py" "$tmp/strace1.log" "$out/tmp/halo-bundle-" "$out/r." "$out/.r."; then
    ok "check --bundle: only the reports and the bundle directory written"
  else
    bad "check --bundle wrote elsewhere"
  fi
  "${trace[@]}" -o "$tmp/strace2.log" "$bin" capture --root "$fx" --no-runtime -o "$out/c.tar.gz" >/dev/null 2>&1
  if python3 "$(dirname "$0")/strace_writes.py" "$tmp/strace2.log" "$out/c.tar.gz" "$out/.c.tar.gz."; then
    ok "capture: only the bundle written"
  else
    bad "capture wrote elsewhere"
  fi
else
  echo "skip: strace is not installed (scripts/setup.sh installs it)"
fi

exit $fail

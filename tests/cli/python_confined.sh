#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# shellcheck disable=SC2015 # `test && ok ... || bad ...`: ok only echoes, so bad never follows it
# Issue 44 item 2: the interpreters the doctor starts (`--framework-deep`, `plan --measure`) import
# nothing from the caller's working directory and judge the environment as the user who ran sudo.
# With the real binary:
# 1. json.py, torch.py, sitecustomize.py and usercustomize.py planted in the working directory,
#    each writing a marker when imported: Debian's real /usr/bin/python3 with python3-torch answers
#    with the real torch and no marker exists;
# 2. as root with SUDO_UID=SUDO_GID=65534 (nobody): an interpreter wrapper records what it was
#    started with (uid, gid, groups, NoNewPrivs, working directory and its entries, argv, the
#    environment) and execs /usr/bin/python3: it runs as 65534 with no new privileges, -P,
#    PYTHONSAFEPATH=1, HF_HUB_OFFLINE=1, TRANSFORMERS_OFFLINE=1, PYTHONPATH kept, in an empty
#    private directory that is gone afterwards; the facts' source says so;
# 3. plan --measure --model DIR/llama-8b.json beside a decoy DIR/config.json: a fake interpreter
#    finds a copy of llama-8b.json (not the decoy) as config.json in its working directory;
# 4. an interpreter that rejects -P (as before 3.11) and runs in the planted directory: the doctor
#    runs it again without -P and the script's first line keeps the planted modules out;
# 5. SIGTERM to the doctor while the interpreter runs: nothing is left in TMPDIR.
# Usage: python_confined.sh HALO_DOCTOR REPO_ROOT. Exit 77 (skipped) without python3-torch.
set -u
bin=$(realpath "$1")
repo=$(realpath "$2")
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
py=/usr/bin/python3
if [ ! -f /usr/lib/python3/dist-packages/torch/version.py ] || [ ! -x "$py" ]; then
  echo "SKIP: Debian's python3-torch is absent (scripts/setup.sh installs it)"
  exit 77
fi
fail=0
bad() { echo "FAIL: $*"; fail=1; }
ok() { echo "ok: $*"; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
chmod 755 "$tmp"

echo "== 1. modules planted in the working directory are not imported"
mkdir "$tmp/cwd" "$tmp/markers"
chmod 777 "$tmp/markers"
for mod in json torch sitecustomize usercustomize; do
  printf 'open(%s, "a").write("%s imported\\n")\n' "'$tmp/markers/$mod'" "$mod" >"$tmp/cwd/$mod.py"
done
(cd "$tmp/cwd" && "$bin" facts --no-runtime --framework-deep --python "$py" --format json -o "$tmp/deep.json") ||
  bad "facts --framework-deep failed"
if [ -n "$(ls -A "$tmp/markers")" ]; then
  bad "planted modules ran: $(cat "$tmp/markers"/*)"
else
  ok "no planted module ran"
fi
"$py" - "$tmp/deep.json" <<'PY' || fail=1
import json, sys
f = json.load(open(sys.argv[1]))["facts"]
text = open("/usr/lib/python3/dist-packages/torch/version.py").read()
assert f["framework.deep.status"]["value"] == "ok", f["framework.deep.status"]
assert f"__version__ = '{f['framework.deep.torch_version']['value']}'" in text, f["framework.deep.torch_version"]
src = f["framework.deep.status"]["source"]
assert "PYTHONSAFEPATH=1" in src and "a private empty directory" in src and "no new privileges" in src, src
print("ok: the real torch answered:", f["framework.deep.torch_version"]["value"])
PY

echo "== 2. as the sudo user, with no new privileges"
if [ "$(id -u)" != 0 ]; then
  echo "SKIP (not root): taking the sudo user's identity needs root"
else
  mkdir -m 755 "$tmp/wrap"
  mkdir -m 777 "$tmp/rec"
  cat >"$tmp/wrap/python3" <<EOF
#!/bin/sh
# Records how it was started, then runs the real interpreter.
{
  echo "uid=\$(id -u) gid=\$(id -g) groups=\$(id -G)"
  grep '^NoNewPrivs:' /proc/self/status
  echo "cwd=\$(pwd)"
  echo "entries=\$(ls -A)"
  echo "argv1=\$1 argv2=\$2"
  env | grep -E '^(PYTHONSAFEPATH|HF_HUB_OFFLINE|TRANSFORMERS_OFFLINE|PYTHONPATH|HOME)='
} >"$tmp/rec/record" 2>&1
exec $py "\$@"
EOF
  chmod 755 "$tmp/wrap/python3"
  (cd "$tmp/cwd" && SUDO_UID=65534 SUDO_GID=65534 PYTHONPATH=/nonexistent/kept \
    "$bin" facts --no-runtime --framework-deep --python "$tmp/wrap/python3" --format json -o "$tmp/sudo.json") ||
    bad "facts --framework-deep as the sudo user failed"
  rec=$tmp/rec/record
  sed 's/^/  record: /' "$rec" 2>/dev/null
  grep -q '^uid=65534 gid=65534 groups=65534$' "$rec" && ok "uid, gid and groups 65534" || bad "identity: $(head -1 "$rec")"
  grep -q '^NoNewPrivs:[[:space:]]*1$' "$rec" && ok "NoNewPrivs 1" || bad "no_new_privs not set"
  grep -q '^argv1=-P argv2=-c$' "$rec" && ok "started with -P -c" || bad "argv: $(grep argv "$rec")"
  for kv in PYTHONSAFEPATH=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 PYTHONPATH=/nonexistent/kept; do
    grep -qx "$kv" "$rec" && ok "$kv" || bad "$kv not in the child's environment"
  done
  cwd=$(sed -n 's/^cwd=//p' "$rec")
  case "$cwd" in
  "$tmp/cwd" | "") bad "the child ran in the caller's directory ($cwd)" ;;
  *) ok "a private working directory ($cwd)" ;;
  esac
  # Mode 0711 and the doctor's: the user may enter it, not list or change it (emptiness: part 5).
  grep -q "ls: cannot open directory '.': Permission denied" "$rec" && ok "the user cannot list it" ||
    bad "the user could list the private directory: $(grep -A1 entries "$rec")"
  [ -n "$cwd" ] && [ ! -e "$cwd" ] && ok "and is removed" || bad "the private directory $cwd is left"
  "$py" - "$tmp/sudo.json" <<'PY' || fail=1
import json, sys
f = json.load(open(sys.argv[1]))["facts"]
st = f["framework.deep.status"]
assert st["value"] == "ok", st
src = st["source"]
assert "as uid 65534 gid 65534 (SUDO_UID/SUDO_GID)" in src and "it ran as uid 65534" in src, src
assert "kept PYTHONPATH=/nonexistent/kept" in src, src
print("ok: the source says:", src[src.index(";") + 2:][:160])
PY
  [ -z "$(ls -A "$tmp/markers")" ] || bad "planted modules ran as the sudo user: $(cat "$tmp/markers"/*)"
fi

echo "== 3. plan --measure builds the named config file"
mkdir "$tmp/cfg" "$tmp/prec"
chmod 777 "$tmp/prec"
cp "$repo/tests/plan/models/llama-3-8b/config.json" "$tmp/cfg/llama-8b.json"
cp "$repo/tests/plan/models/qwen2.5-0.5b/config.json" "$tmp/cfg/config.json" # the decoy
cat >"$tmp/wrap-plan" <<EOF
#!/bin/sh
# A fake interpreter: records its argv, working directory and the config.json there.
printf '%s\0' "\$@" >"$tmp/prec/argv"
pwd >"$tmp/prec/cwd"
cp config.json "$tmp/prec/config.json" 2>/dev/null
echo '{"status": "not_measured", "reason": "a fake interpreter"}'
EOF
chmod 755 "$tmp/wrap-plan"
# (this machine, probed live: --measure refuses a --root that is not /)
(cd "$tmp/cwd" && "$bin" plan --no-runtime \
  --model "$tmp/cfg/llama-8b.json" --method lora --batch 1 --seq 2048 --measure --python "$tmp/wrap-plan" \
  --format json >"$tmp/plan.json" 2>"$tmp/plan.err")
if cmp -s "$tmp/prec/config.json" "$tmp/cfg/llama-8b.json"; then
  ok "the child's config.json is llama-8b.json"
else
  bad "the child's config.json is not the named file: $(head -c 200 "$tmp/prec/config.json" 2>&1)"
fi
pcwd=$(cat "$tmp/prec/cwd" 2>/dev/null)
[ -n "$pcwd" ] && [ "$pcwd" != "$tmp/cwd" ] && [ "$pcwd" != "$tmp/cfg" ] && [ ! -e "$pcwd" ] &&
  ok "in a private directory, removed afterwards" || bad "the child's directory: '$pcwd'"
"$py" - "$tmp/prec/argv" "$tmp/plan.json" <<'PY' || fail=1
import json, sys
argv = open(sys.argv[1]).read().split("\0")
assert argv[:2] == ["-P", "-c"], [a[:30] for a in argv[:2]]
spec = json.loads(argv[3])
assert spec["config_dir"] == ".", spec["config_dir"]
m = json.load(open(sys.argv[2]))["memory"]["measured"]
assert m["status"] == "not_measured" and m["reason"] == "a fake interpreter", m
print("ok: -P -c SCRIPT SPEC, config_dir '.', the answer read")
PY
echo "== 4. an interpreter before 3.11: -P rejected, run again without it; the script drops ''"
# The wrapper acts as Python 3.10 would: -P is a usage error (status 2, nothing on stdout), and
# without it PYTHONSAFEPATH means nothing, so '' (the working directory) is first on sys.path. It
# even runs in the planted directory: only the script's first line keeps json.py and torch.py out.
cat >"$tmp/old-python" <<EOF
#!/bin/sh
if [ "\$1" = -P ]; then echo "Unknown option: -P" >&2; exit 2; fi
echo run >>"$tmp/old-runs"
unset PYTHONSAFEPATH
cd "$tmp/cwd" && exec $py "\$@"
EOF
chmod 755 "$tmp/old-python"
(cd "$tmp/cwd" && "$bin" facts --no-runtime --framework-deep --python "$tmp/old-python" --format json -o "$tmp/old.json") ||
  bad "facts --framework-deep with an old interpreter failed"
[ "$(cat "$tmp/old-runs" 2>/dev/null)" = run ] && ok "run once more without -P" || bad "runs without -P: $(cat "$tmp/old-runs" 2>/dev/null)"
[ -z "$(ls -A "$tmp/markers")" ] && ok "no planted module ran" || bad "planted modules ran under the old interpreter: $(cat "$tmp/markers"/*)"
"$py" - "$tmp/old.json" <<'PY' || fail=1
import json, sys
st = json.load(open(sys.argv[1]))["facts"]["framework.deep.status"]
assert st["value"] == "ok", st
assert "no -P" in st["source"], st["source"]
print("ok: the real torch answered; the source says:", st["source"][st["source"].index("no -P"):][:70])
PY

echo "== 5. SIGTERM while the interpreter runs: the private directory goes too"
mkdir -m 700 "$tmp/tmpd"
printf '#!/bin/sh\nls -A >"%s/hang-ls"\npwd >"%s/hang-cwd"\nexec sleep 60\n' "$tmp" "$tmp" >"$tmp/hangs"
chmod 755 "$tmp/hangs"
(cd "$tmp/cwd" && TMPDIR=$tmp/tmpd exec "$bin" facts --no-runtime --framework-deep --python "$tmp/hangs" \
  --framework-timeout 30 --format json -o "$tmp/hang.json") 2>/dev/null &
doctor=$!
for _ in $(seq 100); do [ -s "$tmp/hang-cwd" ] && break; sleep 0.1; done
hcwd=$(cat "$tmp/hang-cwd" 2>/dev/null)
case "$hcwd" in "$tmp/tmpd/halo-python-"*) ok "the interpreter runs in $hcwd" ;; *) bad "the interpreter's directory: '$hcwd'" ;; esac
[ -f "$tmp/hang-ls" ] && [ ! -s "$tmp/hang-ls" ] && ok "which is empty" || bad "the private directory held: $(cat "$tmp/hang-ls")"
kill -TERM "$doctor"
wait "$doctor"
code=$?
[ "$code" = 143 ] || bad "the doctor ended with $code after SIGTERM, expected 143 (the signal)"
if [ -z "$(ls -A "$tmp/tmpd")" ]; then ok "SIGTERM: nothing left in TMPDIR"; else bad "left in TMPDIR: $(ls -A "$tmp/tmpd")"; fi
exit $fail

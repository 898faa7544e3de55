#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Capture bundles: capture every fixture root and this machine, replay with --bundle and with
# --root on the extracted tree, and compare the facts and verdicts with the original:
# - --no-redact: every fact is identical (key, status, value) and so is every verdict;
# - redacted: only host, user and environment facts (and a venv's path under /home) may differ,
#   and the bundle holds no host name or human user name of the source.
set -u
bin=$(realpath "$1")
fixtures=$(realpath "$2")
fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
bad() { echo "FAIL $*"; fail=1; }
mkdir -p "$tmp/t"
export TMPDIR=$tmp/t # where --bundle extracts; must be empty again afterwards
python=$(command -v python3) || { echo "FAIL: python3 is needed to compare facts"; exit 1; }

# compare A.json B.json ALLOWED_REGEX: facts equal except keys matching the regex.
compare() {
  "$python" - "$1" "$2" "$3" <<'PY'
import json, re, sys
a = json.load(open(sys.argv[1]))["facts"]
b = json.load(open(sys.argv[2]))["facts"]
allowed = re.compile(sys.argv[3]) if sys.argv[3] else None
bad = 0
for k in sorted(set(a) | set(b)):
    if allowed and allowed.match(k):
        continue
    fa, fb = a.get(k), b.get(k)
    va = None if fa is None else (fa.get("status"), fa.get("value"))
    vb = None if fb is None else (fb.get("status"), fb.get("value"))
    if va != vb:
        print(f"  {k}: {va} != {vb}")
        bad += 1
sys.exit(1 if bad else 0)
PY
}

verdicts() { sed -nE 's/^      "(id|status)": (.*)$/\1 \2/p' "$1"; }

check_root() { # name root [probe options...]
  local name=$1 root=$2
  shift 2
  "$bin" facts --root "$root" "$@" --format json >"$tmp/$name.facts.json" || { bad "$name: facts"; return; }
  "$bin" check --root "$root" "$@" --format json >"$tmp/$name.check.json"
  local code=$?

  # (its stderr warning about what --no-redact keeps is tests/cli/bundle_secrets.sh's concern)
  "$bin" capture --root "$root" "$@" --no-redact -o "$tmp/$name.raw.tar.gz" >/dev/null 2>"$tmp/$name.raw.err" || { bad "$name: capture --no-redact: $(cat "$tmp/$name.raw.err")"; return; }
  "$bin" facts --bundle "$tmp/$name.raw.tar.gz" "$@" --format json >"$tmp/$name.raw.facts.json" || { bad "$name: facts --bundle"; return; }
  compare "$tmp/$name.facts.json" "$tmp/$name.raw.facts.json" "${HALO_VOLATILE:-}" || bad "$name: replayed facts differ (no redaction)"
  "$bin" check --bundle "$tmp/$name.raw.tar.gz" "$@" --format json >"$tmp/$name.raw.check.json"
  [ $? = "$code" ] || bad "$name: check --bundle exit code differs from check --root ($code)"
  diff <(verdicts "$tmp/$name.check.json") <(verdicts "$tmp/$name.raw.check.json") >/dev/null || bad "$name: verdicts differ after replay"

  mkdir -p "$tmp/$name.tree"
  tar -xzf "$tmp/$name.raw.tar.gz" -C "$tmp/$name.tree" || bad "$name: the bundle is not a tar.gz that tar reads"
  "$bin" facts --root "$tmp/$name.tree" "$@" --format json >"$tmp/$name.tree.facts.json"
  # Runtime facts are only in .halo/runtime-facts.json, which --add-facts merges.
  local extra=()
  [ -f "$tmp/$name.tree/.halo/runtime-facts.json" ] && extra=(--add-facts "$tmp/$name.tree/.halo/runtime-facts.json")
  "$bin" facts --root "$tmp/$name.tree" "$@" "${extra[@]}" --format json >"$tmp/$name.tree.facts.json"
  compare "$tmp/$name.facts.json" "$tmp/$name.tree.facts.json" "${HALO_VOLATILE:-}" || bad "$name: --root on the extracted bundle differs"
  [ -f "$tmp/$name.tree/.halo/manifest.json" ] || bad "$name: no manifest"

  "$bin" capture --root "$root" "$@" -o "$tmp/$name.red.tar.gz" >/dev/null || { bad "$name: capture"; return; }
  "$bin" facts --bundle "$tmp/$name.red.tar.gz" "$@" --format json >"$tmp/$name.red.facts.json"
  compare "$tmp/$name.facts.json" "$tmp/$name.red.facts.json" "^(host|user|env)\\.|^framework\\.(python_env|torch\\.(path|rocblas_dir|hipblaslt_dir))\$|^wsl\\.sdk\\.lib_dir\$${HALO_VOLATILE:+|$HALO_VOLATILE}" || bad "$name: redaction changed facts beyond host/user/env and the venv's path"
  local host
  host=$(cat "$root/proc/sys/kernel/hostname" 2>/dev/null)
  # Fact keys (framework.torch.version) and the probe ids facts name ("probe": "framework") are not
  # the host name, even on a host called "framework".
  if [ -n "$host" ] && [ ${#host} -ge 3 ] &&
    tar -xzOf "$tmp/$name.red.tar.gz" | sed -E 's/framework\.[a-z_.]+//g; s/"probe": ?"[a-z0-9_]+"//g' |
    grep -aq -- "$host"; then
    bad "$name: host name '$host' is in the redacted bundle"
  fi
  mkdir -p "$tmp/$name.red"
  tar -xzf "$tmp/$name.red.tar.gz" -C "$tmp/$name.red"
  awk -F: '$3 >= 1000 && $3 < 60000 {print $1}' "$root/etc/passwd" 2>/dev/null >"$tmp/$name.users" || true
  while IFS= read -r user; do
    awk -F: -v u="$user" '$1 == u' "$tmp/$name.red/etc/passwd" 2>/dev/null | grep -q . && bad "$name: user '$user' is in the bundle's /etc/passwd"
    awk -F: -v u="$user" '{n = split($4, m, ","); for (i = 1; i <= n; i++) if (m[i] == u) print}' \
      "$tmp/$name.red/etc/group" 2>/dev/null | grep -q . && bad "$name: user '$user' is in the bundle's /etc/group"
    tr '\0' '\n' <"$tmp/$name.red/proc/self/environ" 2>/dev/null | grep -Eq "^(USER|LOGNAME)=$user\$|/home/$user(/|\$|:)" &&
      bad "$name: user '$user' is in the bundle's environment"
  done <"$tmp/$name.users"
  [ $fail = 0 ] && echo "ok $name"
}

for dir in "$fixtures"/*/; do
  [ -f "$dir/README.md" ] || continue
  check_root "$(basename "$dir")" "$dir" --no-runtime
done
HALO_VOLATILE='^mem\.available_bytes$' check_root live-machine / --no-runtime

# A file that is not a bundle is an input error naming it.
echo "not a tarball" >"$tmp/bogus.tar.gz"
"$bin" check --bundle "$tmp/bogus.tar.gz" >/dev/null 2>"$tmp/err"
code=$?
if [ "$code" != 2 ] || ! grep -q "bogus.tar.gz" "$tmp/err"; then bad "a bogus bundle is not reported as an input error"; fi
# No temporary extraction directory is left behind.
[ -z "$(ls -A "$TMPDIR")" ] || bad "an extracted bundle was left in TMPDIR: $(ls "$TMPDIR")"

[ $fail = 0 ] && echo "all bundle checks passed"
exit $fail

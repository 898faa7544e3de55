#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Issue 35 §3: with pyenv's shim first on PATH, the static framework probe and --framework-deep
# judge the same interpreter, the one pyenv would run: the version from PYENV_VERSION, else
# .python-version from the working directory up, else $PYENV_ROOT/version, else `system`.
# A fake $PYENV_ROOT on the live system: versions/3.11.7 (torch 2.5.1+rocm6.2 in its site-packages,
# an interpreter that answers the deep probe's query as that version would) and versions/3.12.1
# (no torch), a shim in pyenv-rehash's form, a .python-version in a project. With a real pyenv
# (argument 2, optional), its own `pyenv which python3` and its rehashed shim are the reference.
# Also: `--python PATH` that does not exist is exit 2 naming PATH.
# Usage: pyenv.sh HALO_DOCTOR [PYENV]
set -euo pipefail
bin=$(realpath "$1")
pyenv=${2:-}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }
root=$tmp/pyenv
for v in 3.11.7 3.12.1; do
  mkdir -p "$root/versions/$v/bin" "$root/versions/$v/lib/python${v%.*}/site-packages"
  # The interpreter: answers `python3 -c SCRIPT` with the deep probe's JSON line, naming itself
  # as sys.executable would.
  if [ "$v" = 3.11.7 ]; then
    answer='"torch_version": "2.5.1+rocm6.2", "hip": "6.2.41133-dd7f95766", "cuda": null, "available": false, "device_count": 0, "devices": []'
  else
    answer="\"import_error\": \"ModuleNotFoundError: No module named 'torch'\""
  fi
  cat >"$root/versions/$v/bin/python3" <<EOF
#!/bin/sh
printf '{"python": "%s", "python_version": "$v", $answer}\n' "\$0"
EOF
  chmod +x "$root/versions/$v/bin/python3"
done
mkdir -p "$root/versions/3.11.7/lib/python3.11/site-packages/torch"
cat >"$root/versions/3.11.7/lib/python3.11/site-packages/torch/version.py" <<'EOF'
__version__ = '2.5.1+rocm6.2'
cuda = None
git_version = '1eba9b3aa3c43f86f4a2c807ac8e12c4a7767340'
hip = '6.2.41133-dd7f95766'
EOF
echo 3.12.1 >"$root/version"
mkdir -p "$tmp/proj/src" "$tmp/elsewhere"
echo 3.11.7 >"$tmp/proj/.python-version"
mkdir -p "$root/shims"
if [ -n "$pyenv" ] && [ -x "$pyenv" ]; then
  # The real pyenv writes its shims for this root (libexec/pyenv-rehash).
  PYENV_ROOT=$root "$pyenv" rehash
  echo "ok: shims by $("$pyenv" --version)"
else
  pyenv=""
  # pyenv-rehash's prototype shim, as pyenv 2.x writes it.
  cat >"$root/shims/python3" <<EOF
#!/usr/bin/env bash
set -e
[ -n "\$PYENV_DEBUG" ] && set -x

program="\${0##*/}"

export PYENV_ROOT="$root"
exec "/usr/libexec/pyenv/pyenv" exec "\$program" "\$@"
EOF
  chmod +x "$root/shims/python3"
fi
[ -f "$root/shims/python3" ] || { echo "FAIL: no shim $root/shims/python3"; exit 1; }

# run DIR [VAR=VALUE...]: facts with --framework-deep from DIR, in a pinned environment: the shims
# first on PATH, then the system's (a python3 at /usr/bin or not: pyenv's `system`).
run() {
  local dir=$1
  shift
  (cd "$dir" && env -i PATH="$root/shims:/usr/bin:/bin" HOME="$tmp" PWD="$dir" "$@" \
    "$bin" facts --no-runtime --framework-deep --framework-timeout 20 --format json) >"$tmp/out.json" 2>"$tmp/err.txt"
  [ ! -s "$tmp/err.txt" ] || bad "stderr of the run in $dir ($*): $(head -3 "$tmp/err.txt")"
}
# expect NAME WANT_VERSION_DIR: both probes name WANT's interpreter and site directory.
expect() {
  python3 - "$tmp/out.json" "$root/versions/$2" "$1" <<'PY' || fail=1
import json, sys
f = json.load(open(sys.argv[1]))["facts"]
prefix, name = sys.argv[2], sys.argv[3]
minor = prefix.rsplit("/", 1)[1].rsplit(".", 1)[0]
deep = f["framework.deep.python"]
assert deep.get("value") == prefix + "/bin/python3", (name, deep)
env = f["framework.python_env"]
if env["status"] == "ok":
    assert env["value"] == f"{prefix}/lib/python{minor}/site-packages", (name, env)
    assert f["framework.torch.version"]["value"] == f["framework.deep.torch_version"]["value"], name
    basis = env["source"]
else:
    assert f"{prefix}/lib/python3.*/site-packages" in env["reason"], (name, env)
    assert f["framework.deep.status"]["value"] == "import_failed", (name, f["framework.deep.status"])
    basis = env["reason"]
assert "pyenv version" in basis and "through the pyenv shim" in basis, (name, basis)
# The root is the one the shim exports (pyenv-rehash writes it there).
assert f"(PYENV_ROOT {prefix.rsplit('/versions/', 1)[0]}, exported by the shim)" in basis, (name, basis)
print(f"ok: {name}: static and deep both judge {prefix}/bin/python3")
PY
}
# pyenv's own answer, where a real pyenv is given.
reference() { # reference DIR WANT [VAR=VALUE...]
  [ -n "$pyenv" ] || return 0
  local dir=$1 want=$2
  shift 2
  local got
  got=$(cd "$dir" && env -i PATH="$root/shims:/usr/bin:/bin" HOME="$tmp" PWD="$dir" PYENV_ROOT="$root" "$@" \
    "$pyenv" which python3)
  [ "$got" = "$want" ] || bad "pyenv which python3 in $dir ($*): $got, the test expects $want"
}

run "$tmp/proj/src"
expect ".python-version from the working directory up" 3.11.7
reference "$tmp/proj/src" "$root/versions/3.11.7/bin/python3"
run "$tmp/elsewhere"
expect "\$PYENV_ROOT/version" 3.12.1
reference "$tmp/elsewhere" "$root/versions/3.12.1/bin/python3"
run "$tmp/proj/src" PYENV_VERSION=3.12.1
expect "PYENV_VERSION over .python-version" 3.12.1
reference "$tmp/proj/src" "$root/versions/3.12.1/bin/python3" PYENV_VERSION=3.12.1
run "$tmp/elsewhere" PYENV_VERSION=3.11
expect "PYENV_VERSION=3.11, the newest installed 3.11.x" 3.11.7
reference "$tmp/elsewhere" "$root/versions/3.11.7/bin/python3" PYENV_VERSION=3.11

# `system`: the python3 on PATH after the shims, judged by both (no --framework-deep: the system
# interpreter may import a real torch for seconds; the static probe names it).
if [ -x /usr/bin/python3 ]; then
  (cd "$tmp/elsewhere" && env -i PATH="$root/shims:/usr/bin:/bin" HOME="$tmp" PWD="$tmp/elsewhere" \
    PYENV_VERSION=system "$bin" facts --no-runtime --format json) >"$tmp/system.json"
  python3 - "$tmp/system.json" "$root" <<'PY' || fail=1
import json, sys
env = json.load(open(sys.argv[1]))["facts"]["framework.python_env"]
basis = env.get("source") if env["status"] == "ok" else env["reason"]
want = f"python3 on PATH without {sys.argv[2]}/shims: /usr/bin/python3"
assert basis.startswith("pyenv version system (set by PYENV_VERSION)") and want in basis, basis
print("ok: PYENV_VERSION=system: /usr/bin/python3")
PY
  reference "$tmp/elsewhere" /usr/bin/python3 PYENV_VERSION=system
fi

# --python that does not exist: exit 2, the message names the path; no report.
set +e
"$bin" check --no-runtime --python "$tmp/no-such/python3" >"$tmp/stdout" 2>"$tmp/stderr"
rc=$?
set -e
[ "$rc" = 2 ] || bad "--python to a missing file: exit $rc, want 2"
grep -q -- "--python $tmp/no-such/python3: no such file" "$tmp/stderr" ||
  bad "the error does not name the path: $(cat "$tmp/stderr")"
[ ! -s "$tmp/stdout" ] || bad "a report was written for a missing --python"
[ "$fail" = 0 ] && echo "ok: --python to a missing file is exit 2 naming it"
exit "$fail"

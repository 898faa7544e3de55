#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Issue 45: with no environment active, a uv project (pyproject.toml and uv.lock from the working
# directory up) is what `uv run python train.py` runs in: uv finds the project upward and runs in
# its .venv without activating it (uv docs: concepts/projects/run, concepts/projects/config
# "project environment path"). The fixture strix-halo-uv-project-rocm62 (uv's PyTorch guide,
# synced, PWD in the project's scripts/) is judged through its .venv end to end: the facts name the
# environment and why, and torch-missing-gfx-target fails on its torch. Copies of the root show the
# other sides: without uv.lock the .venv is only named and the system python3 is judged;
# UV_NO_PROJECT=1 turns discovery off; a working directory outside the project, with UV_PROJECT
# pointing at it, finds it again. Usage: uv_project.sh HALO_DOCTOR FIXTURES
set -euo pipefail
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
py=/usr/bin/python3
bin=$(realpath "$1")
fixtures=$(realpath "$2")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }
src=$fixtures/strix-halo-uv-project-rocm62

# facts ROOT OUT: the facts of ROOT as JSON.
facts() { "$bin" facts --root "$1" --no-runtime --format json -o "$2"; }
# venv_judged FACTS SOURCE-PART: the project's .venv is the environment judged (its torch
# 2.5.1+rocm6.2 found), and the environment's source contains SOURCE-PART.
venv_judged() {
  "$py" - "$1" "$2" <<'PY'
import json, sys
facts = json.load(open(sys.argv[1]))["facts"]
pe = facts["framework.python_env"]
assert pe.get("value") == "/home/dev/train/.venv/lib/python3.12/site-packages", pe
assert facts["framework.torch.version"].get("value") == "2.5.1+rocm6.2", facts["framework.torch.version"]
assert sys.argv[2] in pe["source"], (sys.argv[2], pe["source"])
print("ok: the uv project's .venv is judged:", sys.argv[2][:60])
PY
}
# system_judged FACTS SOURCE-PART: the .venv is not judged (no torch found elsewhere), and the
# environment's source or reason contains SOURCE-PART.
system_judged() {
  "$py" - "$1" "$2" <<'PY'
import json, sys
facts = json.load(open(sys.argv[1]))["facts"]
pe = facts["framework.python_env"]
text = pe.get("source", "") + " " + pe.get("reason", "")
assert facts["framework.torch.version"]["status"] != "ok", facts["framework.torch.version"]
assert sys.argv[2] in text, (sys.argv[2], text)
print("ok: the .venv is not judged:", sys.argv[2][:60])
PY
}

facts "$src" "$tmp/uv.json"
venv_judged "$tmp/uv.json" "the uv project environment /home/dev/train/.venv: no VIRTUAL_ENV or CONDA_PREFIX, and \`uv run\` from the working directory /home/dev/train/scripts runs in the project /home/dev/train (pyproject.toml, uv.lock in /home/dev/train) without activating it; a plain python3 would be /usr/bin/python3" ||
  bad "the uv project's .venv is not the environment judged, or its source does not say why"

# The verdict follows: the wheel in the .venv has no gfx1151 (exit 1, the rule fails for GPU 0).
set +e
"$bin" check --root "$src" --no-runtime --format json -o "$tmp/check.json" >/dev/null 2>&1
rc=$?
set -e
[ "$rc" = 1 ] || bad "check on the uv fixture: exit $rc, want 1"
"$py" - "$tmp/check.json" <<'PY' || bad "torch-missing-gfx-target does not fail through the uv project's torch"
import json, sys
results = json.load(open(sys.argv[1]))["results"]
hits = [r for r in results if r["id"] == "torch-missing-gfx-target" and r["status"] == "fail"]
assert hits and "2.5.1+rocm6.2" in hits[0]["message"], [r for r in results if r["id"] == "torch-missing-gfx-target"]
print("ok: torch-missing-gfx-target fails on the .venv's torch 2.5.1+rocm6.2")
PY

# copy NAME: a writable copy of the fixture root.
copy() { cp -a "$src" "$tmp/$1"; chmod -R u+w "$tmp/$1"; echo "$tmp/$1"; }
# environ ROOT VAR=VALUE...: the recorded environment, replaced.
environ() { local root=$1; shift; printf '%s\0' "$@" >"$root/proc/self/environ"; }

# No uv.lock: a project uv has never synced; the system python3 is judged, the .venv named.
r=$(copy nolock)
rm "$r/home/dev/train/uv.lock"
facts "$r" "$tmp/nolock.json"
system_judged "$tmp/nolock.json" "python3 on PATH, /usr/bin/python3; not judged: /home/dev/train/.venv, the environment \`uv run\` would use in /home/dev/train (no uv.lock" ||
  bad "without uv.lock the .venv is judged, or not named"

# UV_NO_PROJECT=1 (uv's --no-project): no project discovery, nothing named.
r=$(copy noproject)
environ "$r" PATH=/usr/local/bin:/usr/bin:/bin HOME=/home/dev PWD=/home/dev/train/scripts UV_NO_PROJECT=1
facts "$r" "$tmp/noproject.json"
system_judged "$tmp/noproject.json" "python3 on PATH, /usr/bin/python3 (the system site directories)" ||
  bad "UV_NO_PROJECT=1 still judged or named the project's .venv"

# UV_PROJECT (uv's --project) from a working directory outside the project, relative to it.
r=$(copy project)
environ "$r" PATH=/usr/local/bin:/usr/bin:/bin HOME=/home/dev PWD=/home/dev UV_PROJECT=train
facts "$r" "$tmp/project.json"
venv_judged "$tmp/project.json" "from UV_PROJECT=train runs in the project /home/dev/train" ||
  bad "UV_PROJECT=train from /home/dev does not find the project"
# The same working directory without UV_PROJECT: no project above /home/dev.
environ "$r" PATH=/usr/local/bin:/usr/bin:/bin HOME=/home/dev PWD=/home/dev
facts "$r" "$tmp/outside.json"
system_judged "$tmp/outside.json" "python3 on PATH, /usr/bin/python3 (the system site directories)" ||
  bad "outside the project the .venv was judged"
exit "$fail"

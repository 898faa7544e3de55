#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The static framework probe against a real interpreter's torch (issue 14): Debian 12's python3-torch
# (1.13.1+dfsg, a CPU build; its torch/version.py says __version__ = '1.13.0a0', hip = None), found in
# /usr/lib/python3/dist-packages on the live root without running Python. Its facts, merged with
# the GPU facts of a Strix Halo fixture, make torch-not-rocm fail: a CPU wheel beside an AMD GPU.
# Usage: framework_torch.sh HALO_DOCTOR FIXTURES. Exit 77 (skipped) without python3-torch.
set -euo pipefail
# The interpreter this test means is Debian's /usr/bin/python3 (python3-torch is its torch), never
# the runner's: a pyenv or conda shim first on PATH, or an active pyenv version, venv or conda env,
# would change which environment the doctor judges and which Python runs the assertions below.
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
unset PYENV_VERSION PYENV_ROOT VIRTUAL_ENV CONDA_PREFIX CONDA_DEFAULT_ENV PYTHONHOME PYTHONPATH
py=/usr/bin/python3
bin=$(realpath "$1")
fixtures=$(realpath "$2")
torch=/usr/lib/python3/dist-packages/torch
if [ ! -f "$torch/version.py" ]; then
  echo "SKIP: $torch is absent (apt-get install python3-torch; scripts/setup.sh lists it)"
  exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# The environment training will see: no venv or conda env, so the system site directories.
env -u VIRTUAL_ENV -u CONDA_PREFIX "$bin" facts --no-runtime --format json -o "$tmp/live.json"
"$bin" facts --root "$fixtures/strix-halo-fixed" --no-runtime --format json -o "$tmp/halo.json"
"$py" - "$tmp/live.json" "$tmp/halo.json" "$tmp/merged.json" "$torch" <<'PY'
import json, sys
live = json.load(open(sys.argv[1]))
facts = live["facts"]
torch = sys.argv[4]
version = facts["framework.torch.version"]
assert version["status"] == "ok", version
# What the file says (Debian builds 1.13.1 from a tree whose version.py reads 1.13.0a0).
text = open(torch + "/version.py").read()
assert f"__version__ = '{version['value']}'" in text, (version, text)
assert version["value"].startswith("1.13"), version
assert version["source"].startswith(torch + "/version.py:"), version
assert facts["framework.torch.build"]["value"] == "cpu", facts["framework.torch.build"]
assert facts["framework.torch.hip_version"]["status"] == "missing", facts["framework.torch.hip_version"]
assert facts["framework.torch.path"]["value"] == torch, facts["framework.torch.path"]
assert facts["framework.python_env"]["value"] == "/usr/lib/python3/dist-packages"
merged = json.load(open(sys.argv[2]))
assert merged["facts"]["framework.torch.version"]["status"] == "missing"  # the fixture has no torch
for key, fact in facts.items():
    if key.startswith("framework."):
        merged["facts"][key] = fact
json.dump(merged, open(sys.argv[3], "w"))
print("ok: live torch", version["value"], "build", facts["framework.torch.build"]["value"])
PY
set +e
"$bin" check --facts "$tmp/merged.json" --only torch-not-rocm --format json >"$tmp/report.json"
code=$?
set -e
[ "$code" = 1 ] || { echo "FAIL: check exited $code, expected 1"; cat "$tmp/report.json"; exit 1; }
"$py" - "$tmp/report.json" <<'PY'
import json, sys
results = json.load(open(sys.argv[1]))["results"]
r = [x for x in results if x["id"] == "torch-not-rocm"]
assert len(r) == 1, results
r = r[0]
assert r["status"] == "fail" and r["severity"] == "error", r
assert "is a cpu build" in r["message"] and "1.13" in r["message"], r["message"]
print("ok: torch-not-rocm:", r["message"])
PY

# Debian's torchvision 0.14.1a0 and torchaudio 0.13.1 belong to its torch 1.13.0a0: no mismatch. The
# same torchvision/version.py beside a ROCm 6.2 torch 2.5.1 in a venv: the wrong release and build.
for pkg in torchvision torchaudio; do
  [ -f "/usr/lib/python3/dist-packages/$pkg/version.py" ] ||
    { echo "SKIP: Debian's python3-$pkg is absent (scripts/setup.sh lists it)"; exit 77; }
done
"$bin" check --facts "$tmp/live.json" --only torch-companion-mismatch --format json >"$tmp/companions.json" || true
"$py" - "$tmp/live.json" "$tmp/companions.json" <<'PY'
import json, re, sys
facts = json.load(open(sys.argv[1]))["facts"]
for pkg in ("torchvision", "torchaudio"):
    text = open(f"/usr/lib/python3/dist-packages/{pkg}/version.py").read()
    want = re.search(r"__version__ = '([^']+)'", text).group(1)
    got = facts[f"framework.{pkg}.version"]
    assert got["status"] == "ok" and got["value"] == want, (pkg, got, want)
r = [x for x in json.load(open(sys.argv[2]))["results"] if x["id"] == "torch-companion-mismatch"]
assert len(r) == 1 and r[0]["status"] == "pass", r
print("ok: Debian's torch, torchvision and torchaudio belong together:", r[0]["message"])
PY
venv=$tmp/venv
site=$venv/lib/python3.11/site-packages
mkdir -p "$site/torch" "$site/torchvision"
printf "__version__ = '2.5.1+rocm6.2'\ndebug = False\ncuda = None\ngit_version = 'x'\nhip = '6.2.41133-dd7f95766'\n" >"$site/torch/version.py"
cp /usr/lib/python3/dist-packages/torchvision/version.py /usr/lib/python3/dist-packages/torchvision/__init__.py "$site/torchvision/"
VIRTUAL_ENV=$venv "$bin" facts --no-runtime --format json -o "$tmp/venv.json"
"$bin" check --facts "$tmp/venv.json" --only torch-companion-mismatch --format json >"$tmp/venv-report.json" && {
  echo "FAIL: a Debian torchvision beside torch 2.5.1+rocm6.2 passed"; exit 1; }
"$py" - "$tmp/venv-report.json" <<'PY'
import json, sys
r = [x for x in json.load(open(sys.argv[1]))["results"] if x["id"] == "torch-companion-mismatch"][0]
assert r["status"] == "fail" and r["severity"] == "error", r
assert "it wants torchvision 0.20" in r["message"] and "rocm6.2 build" in r["message"], r["message"]
print("ok: the mismatch is named:", r["message"][:160])
PY

# --python overrides the environment: with VIRTUAL_ENV naming the venv above (its torch 2.5.1),
# `--python /usr/bin/python3` judges the system interpreter's torch, Debian's, and
# `--python VENV/bin/python` (a link to the system interpreter, as venv makes it) the venv's.
mkdir -p "$venv/bin"
ln -sf /usr/bin/python3 "$venv/bin/python"
printf 'home = /usr/bin\ninclude-system-site-packages = false\n' >"$venv/pyvenv.cfg"
VIRTUAL_ENV=$venv "$bin" facts --no-runtime --python /usr/bin/python3 --format json -o "$tmp/sys.json"
env -u VIRTUAL_ENV "$bin" facts --no-runtime --python "$venv/bin/python" --format json -o "$tmp/pyvenv.json"
"$py" - "$tmp/sys.json" "$tmp/pyvenv.json" "$venv" <<'PY'
import json, sys
system = json.load(open(sys.argv[1]))["facts"]
assert system["framework.torch.version"]["value"].startswith("1.13"), system["framework.torch.version"]
assert system["framework.python_env"]["source"] == "--python /usr/bin/python3 (the system site directories)", system["framework.python_env"]
venv = json.load(open(sys.argv[2]))["facts"]
assert venv["framework.torch.version"]["value"] == "2.5.1+rocm6.2", venv["framework.torch.version"]
assert venv["framework.python_env"]["source"] == f"--python {sys.argv[3]}/bin/python (the venv {sys.argv[3]})", venv["framework.python_env"]
print("ok: --python picks the system torch over VIRTUAL_ENV, and a venv from its interpreter")
PY

# --python twice: check judges both environments, one report each, in the order given. The venv's
# torchvision (Debian's, beside torch 2.5.1+rocm6.2) fails torch-companion-mismatch; Debian's own
# three agree. The exit code fails because one environment fails; JSON is an array of two reports;
# JUnit describes one environment and refuses (exit 2, nothing written).
rc=0
env -u VIRTUAL_ENV "$bin" check --no-runtime --only torch-companion-mismatch --python /usr/bin/python3 \
  --python "$venv/bin/python" --format json -o "$tmp/two.json" -o "text:$tmp/two.txt" || rc=$?
[ "$rc" = 1 ] || { echo "FAIL: two environments, one failing: exit $rc, want 1"; exit 1; }
"$py" - "$tmp/two.json" "$tmp/two.txt" "$venv" <<'PY'
import json, sys
reports = json.load(open(sys.argv[1]))
assert isinstance(reports, list) and len(reports) == 2, type(reports)
status = [[r["status"] for r in rep["results"] if r["id"] == "torch-companion-mismatch"][0] for rep in reports]
assert status == ["pass", "fail"], status
assert reports[0]["python"]["site"] == "/usr/lib/python3/dist-packages", reports[0]["python"]
assert reports[1]["python"]["site"].startswith(sys.argv[3]), reports[1]["python"]
assert [rep["exit_code"] for rep in reports] == [0, 1], [rep["exit_code"] for rep in reports]
text = open(sys.argv[2]).read()
assert text.count("\npython: torch ") == 2 and text.count("summary:") == 2, text
print("ok: two --python, two reports in order:", status)
PY
rc=0
"$bin" check --no-runtime --python /usr/bin/python3 --python "$venv/bin/python" --format junit \
  -o "$tmp/two.xml" 2>"$tmp/err.txt" || rc=$?
if [ "$rc" != 2 ] || [ -e "$tmp/two.xml" ] || ! grep -q "reports one Python environment" "$tmp/err.txt"; then
  echo "FAIL: --format junit with two --python: exit $rc, want 2 and no file"; cat "$tmp/err.txt"; exit 1
fi
echo "ok: junit refuses two --python (exit 2)"

#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# --framework-deep (issue 14): the doctor runs the interpreter training will use in a child process
# and asks torch itself. Against Debian's real python3 with python3-torch (a CPU build: it imports,
# and torch.cuda.is_available() is False), and against recorded or misbehaving interpreters
# (tests/replay/python/): a Strix Halo at the default TTM limit, one that hangs, one that crashes.
# Usage: framework_deep.sh HALO_DOCTOR FIXTURES REPLAY_DIR. Exit 77 (skipped) without python3-torch.
set -euo pipefail
bin=$(realpath "$1")
fixtures=$(realpath "$2")
replay=$(realpath "$3")
if [ ! -f /usr/lib/python3/dist-packages/torch/version.py ] || [ ! -x /usr/bin/python3 ]; then
  echo "SKIP: Debian's python3-torch is absent (scripts/setup.sh lists it)"
  exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }

# 1. The real interpreter: torch imports, is a CPU build, sees no GPU.
"$bin" facts --no-runtime --framework-deep --python /usr/bin/python3 --format json -o "$tmp/real.json"
python3 - "$tmp/real.json" <<'PY' || fail=1
import json, sys
f = json.load(open(sys.argv[1]))["facts"]
text = open("/usr/lib/python3/dist-packages/torch/version.py").read()
assert f["framework.deep.status"]["value"] == "ok", f["framework.deep.status"]
assert f"__version__ = '{f['framework.deep.torch_version']['value']}'" in text, f["framework.deep.torch_version"]
assert f["framework.deep.available"]["value"] is False, f["framework.deep.available"]
assert f["framework.deep.device_count"]["value"] == 0
assert f["framework.deep.hip_version"]["status"] == "missing"
print("ok: the real python3 imports torch", f["framework.deep.torch_version"]["value"], "and sees no GPU")
PY
# Merged with an AMD GPU machine's facts, torch-deep-gpu fails.
"$bin" facts --root "$fixtures/strix-halo-default-ttm" --no-runtime --format json -o "$tmp/halo.json"
merge() { # merge FACTS_WITH_DEEP MACHINE_FACTS OUT
  python3 - "$1" "$2" "$3" <<'PY'
import json, sys
deep = json.load(open(sys.argv[1]))["facts"]
out = json.load(open(sys.argv[2]))
out["facts"].update({k: v for k, v in deep.items() if k.startswith("framework.deep.")})
json.dump(out, open(sys.argv[3], "w"))
PY
}
merge "$tmp/real.json" "$tmp/halo.json" "$tmp/m1.json"
"$bin" check --facts "$tmp/m1.json" --only torch-deep-gpu --format json >"$tmp/r1.json" && bad "torch-deep-gpu passed a CPU torch beside a Strix Halo"
grep -q '"status": "fail"' "$tmp/r1.json" || bad "torch-deep-gpu did not fail: $(cat "$tmp/r1.json")"

# 2. A recorded ROCm 7.1 wheel on the Strix Halo at the default TTM limit: PyTorch sees 62.54 GiB
#    of the 121 GiB the TTM fix gives.
"$bin" facts --no-runtime --framework-deep --python "$replay/strix-halo-default-ttm.sh" --format json -o "$tmp/rec.json"
merge "$tmp/rec.json" "$tmp/halo.json" "$tmp/m2.json"
set +e
"$bin" check --facts "$tmp/m2.json" --only torch-deep-gpu,torch-deep-memory --format json >"$tmp/r2.json"
set -e
python3 - "$tmp/r2.json" <<'PY' || fail=1
import json, sys
rs = {r["id"]: r for r in json.load(open(sys.argv[1]))["results"]}
assert rs["torch-deep-gpu"]["status"] == "pass", rs["torch-deep-gpu"]
m = rs["torch-deep-memory"]
assert m["status"] == "fail" and m["severity"] == "warning", m
assert "62.54 GiB" in m["message"] and "121.00 GiB" in m["message"], m["message"]
print("ok:", m["message"][:120])
PY

# 3. An interpreter that hangs is killed at the time limit; one that crashes is reported as such.
start=$(date +%s)
"$bin" facts --no-runtime --framework-deep --python "$replay/hangs.sh" --framework-timeout 2 --format json -o "$tmp/hang.json"
[ $(( $(date +%s) - start )) -lt 20 ] || bad "the hanging interpreter was not killed in time"
grep -q 'no answer within the 2 s time limit (killed)' "$tmp/hang.json" || bad "no time-limit reason: $(grep -m1 deep.status "$tmp/hang.json")"
"$bin" facts --no-runtime --framework-deep --python "$replay/crashes.sh" --format json -o "$tmp/crash.json"
grep -q 'signal 11' "$tmp/crash.json" || bad "no crash reason: $(grep -m1 deep.status "$tmp/crash.json")"
# --python to a file that does not exist is a usage error (exit 2, issue 35); one that is not
# executable is a fact naming it.
rc=0
"$bin" facts --no-runtime --framework-deep --python "$tmp/no-such-python" --format json -o "$tmp/none.json" 2>"$tmp/none.err" || rc=$?
if [ "$rc" != 2 ] || ! grep -q "no-such-python: no such file" "$tmp/none.err"; then
  bad "a missing interpreter: exit $rc, $(cat "$tmp/none.err")"
fi
printf 'not an interpreter\n' >"$tmp/not-exec"
"$bin" facts --no-runtime --framework-deep --python "$tmp/not-exec" --format json -o "$tmp/none.json"
grep -q 'is not an executable file' "$tmp/none.json" || bad "a non-executable interpreter is not named"
# On a terminal the run says what it waits for (issue 35): one stderr line naming the interpreter
# and the time limit; on a pipe or file nothing (script(1) from util-linux gives it a pty).
if command -v script >/dev/null; then
  script -qec "'$bin' facts --no-runtime --framework-deep --python '$replay/strix-halo-default-ttm.sh' --format json -o '$tmp/tty.json'" /dev/null >"$tmp/tty.txt" </dev/null || bad "the run on a terminal failed: $(cat "$tmp/tty.txt")"
  grep -q "halo-doctor: importing torch with $replay/strix-halo-default-ttm.sh (up to 60 s)\.\.\. [0-9.]* s" "$tmp/tty.txt" ||
    bad "no progress line on a terminal: $(cat "$tmp/tty.txt")"
fi
"$bin" facts --no-runtime --framework-deep --python "$replay/strix-halo-default-ttm.sh" --format json -o "$tmp/pipe.json" 2>"$tmp/pipe.err"
[ ! -s "$tmp/pipe.err" ] || bad "a progress line on a non-terminal stderr: $(cat "$tmp/pipe.err")"
# Without --framework-deep nothing runs, and the rules say how to ask.
"$bin" facts --no-runtime --format json -o "$tmp/off.json"
grep -q 'run with --framework-deep' "$tmp/off.json" || bad "not-probed reason missing"
[ "$fail" = 0 ] && echo "ok: hangs, crashes and missing interpreters are facts with their cause"
exit "$fail"

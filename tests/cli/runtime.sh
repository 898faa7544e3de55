#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# CLI test of the runtime probes (ROCr, libdrm), as a user runs them.
#  1. On the live root: `check` and `facts` never crash. Without /dev/kfd and /dev/dri (CI, this
#     machine) `check` exits 0 and the facts quote hsa_init's status string and drmGetDevices2's
#     -ENOENT.
#  2. On a fixture root with --hsa-library (the replay ROCr from tests/replay): the HSA facts and
#     verdicts come from the recorded capture; a hanging replay is cut off by --runtime-timeout.
set -u
bin=$1
replay=$2
src=$3
fail=0
out=$(mktemp)
trap 'rm -f "$out"' EXIT
bad() { echo "FAIL $*"; fail=1; }

"$bin" facts >"$out" 2>/dev/null
code=$?
[ "$code" = 0 ] || bad "live facts: exit $code"
grep -q '^hsa.status' "$out" || bad "live facts: no hsa.status"
grep -q '^libdrm.get_devices_ret' "$out" || bad "live facts: no libdrm.get_devices_ret"
if [ ! -e /dev/kfd ] && [ ! -e /dev/dri ]; then
  "$bin" check --color never >/dev/null 2>&1
  code=$?
  [ "$code" = 0 ] || bad "live check without a GPU: exit $code, expected 0"
  if grep -q '^hsa.library_path .*ok' "$out" || grep -Eq '^hsa.library_path +/' "$out"; then
    grep -q 'HSA_STATUS_ERROR' "$out" || bad "live facts: hsa_init's status string is missing"
  fi
  grep -q 'ENOENT' "$out" || bad "live facts: drmGetDevices2's -ENOENT is missing"
fi

# Replay on a fixture.
export HALO_REPLAY_CAPTURE=$src/replay/captures/strix-halo-120g.json
"$bin" check --root "$src/fixtures/strix-halo-fixed" --hsa-library "$replay" --format json \
  --only hsa-runtime-init,hsa-gpu-pool-capped >"$out" 2>/dev/null
code=$?
[ "$code" = 0 ] || bad "replay check: exit $code, expected 0"
[ "$(grep -c '"status": "pass"' "$out")" = 2 ] || bad "replay check: expected 2 passing runtime rules"
"$bin" facts --root "$src/fixtures/strix-halo-fixed" --hsa-library "$replay" --format json >"$out" 2>/dev/null
grep -q '"value": 128849018880' "$out" || bad "replay facts: the 120 GiB pool (125829120 KB) is missing"

HALO_REPLAY_MODE=hang "$bin" check --root "$src/fixtures/strix-halo-fixed" --hsa-library "$replay" \
  --runtime-timeout 0.5 --format json --only hsa-runtime-init >"$out" 2>/dev/null
code=$?
[ "$code" = 1 ] || bad "hanging replay: exit $code, expected 1 (hsa-runtime-init fails)"
grep -q 'hung: no answer within the 0.5 s time limit' "$out" || bad "hanging replay: no time-limit message"

[ $fail = 0 ] && echo "ok runtime"
exit $fail

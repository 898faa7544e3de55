#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# halo-doctor fleet compare, as a lab admin runs it: each node's saved facts (or capture bundle)
# from four MI300X fixture nodes; the odd node out (mi300x-numa-4021: older kernel, older DKMS,
# NUMA balancing on) is named on the error-level rows and the exit code says so.
set -u
bin=$(realpath "$1")
fixtures=$(realpath "$2")
fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
bad() { echo "FAIL: $*"; fail=1; }
for f in mi300x-ras-errors mi300x-degraded-link mi300x-nps4-16-kfd-nodes mi300x-numa-4021; do
  "$bin" facts --root "$fixtures/$f" --no-runtime --format json >"$tmp/$f.json" || bad "facts $f"
done
"$bin" capture --root "$fixtures/mi300x-ras-errors" --no-runtime -o "$tmp/node09.tar.gz" >/dev/null || bad "capture"

"$bin" fleet compare "$tmp/mi300x-ras-errors.json" "$tmp/mi300x-degraded-link.json" \
  "$tmp/mi300x-nps4-16-kfd-nodes.json" "$tmp/mi300x-numa-4021.json" >"$tmp/out.txt"
code=$?
[ "$code" = 1 ] || bad "exit $code for a fleet with an odd node out, want 1"
grep -qE '^! kernel +6\.8\.0-79-generic +6\.8\.0-79-generic +6\.8\.0-79-generic +5\.15\.0-119-generic\*$' "$tmp/out.txt" ||
  { bad "the kernel row does not mark mi300x-node01's kernel"; cat "$tmp/out.txt"; }
grep -qE '^~ PCIe link widths +16 x8 +16, 16, 16, 16, 16, 8, 16, 16\* +16 x8 +16 x8$' "$tmp/out.txt" ||
  bad "the PCIe row does not mark the degraded node"
grep -q '^the same on every node: GPUs, gfx targets, compute partitions, memory partitions, XGMI hive sizes, VBIOS, MEC firmware, PSP SOS firmware, SMU firmware, DPM performance levels, OS$' "$tmp/out.txt" ||
  bad "uniform quantities not listed"

"$bin" fleet compare --format json "$tmp"/*.json >"$tmp/out.json"
python3 - "$tmp/out.json" <<'PY' || fail=1
import json, sys
d = json.load(open(sys.argv[1]))
assert d["error_difference"] is True
kernel = next(r for r in d["rows"] if r["fact"] == "kernel.release")
odd = [v["node"] for v in kernel["values"] if v["differs"]]
assert odd == ["mi300x-node01"], odd
assert kernel["majority"] == "6.8.0-79-generic"
print("ok fleet compare --format json names mi300x-node01")
PY

# A facts file and a capture bundle of the same node: nothing differs, exit 0.
"$bin" fleet compare "$tmp/mi300x-ras-errors.json" "$tmp/node09.tar.gz" >"$tmp/same.txt"
code=$?
[ "$code" = 0 ] || { bad "exit $code for two captures of one node"; cat "$tmp/same.txt"; }
grep -q '^result: no node differs on an error-level quantity$' "$tmp/same.txt" || bad "same nodes reported different"

# Bad input: one node, a file that is not facts: exit 2 naming it.
"$bin" fleet compare "$tmp/mi300x-ras-errors.json" >"$tmp/err" 2>&1
code=$?
if [ "$code" != 2 ] || ! grep -q "at least two nodes" "$tmp/err"; then bad "one node: exit $code"; fi
printf 'not json' >"$tmp/bogus.json"
"$bin" fleet compare "$tmp/mi300x-ras-errors.json" "$tmp/bogus.json" >"$tmp/err" 2>&1
code=$?
if [ "$code" != 2 ] || ! grep -q "bogus.json:1" "$tmp/err"; then bad "bogus facts file: exit $code"; cat "$tmp/err"; fi
[ $fail = 0 ] && echo "fleet compare: all checks passed"
exit $fail

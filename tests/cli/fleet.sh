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
# Grouped by value: the majority with its count, then the odd node out by name.
grep -A2 -xF '! kernel' "$tmp/out.txt" | grep -qxF '    5.15.0-119-generic  (1 node): mi300x-node01' ||
  { bad "the kernel row does not name mi300x-node01's kernel"; cat "$tmp/out.txt"; }
grep -A1 -xF '! kernel' "$tmp/out.txt" | grep -qxF '    6.8.0-79-generic  (3 nodes, the majority)' ||
  bad "the kernel row does not give the majority"
grep -A2 -xF '~ PCIe link widths' "$tmp/out.txt" | grep -qxF '    16, 16, 16, 16, 16, 8, 16, 16  (1 node): mi300x-node11' ||
  bad "the PCIe row does not name the degraded node"
sed -n '/^the same on every node:/,/^$/p' "$tmp/out.txt" | tr '\n' ' ' | tr -s ' ' |
  grep -qF 'the same on every node: GPUs, gfx targets, compute partitions, memory partitions, XGMI hive sizes, VBIOS, MEC firmware, PSP SOS firmware, SMU firmware, DPM performance levels, OS' ||
  bad "uniform quantities not listed"
awk 'length($0) > 100 { exit 1 }' "$tmp/out.txt" || bad "a line is wider than 100 columns"

# Forty nodes named node01..node40, three of them on another kernel: one compact host list.
mkdir "$tmp/many"
for i in $(seq -w 1 40); do
  sed "s/\"mi300x-node09\"/\"node$i\"/" "$tmp/mi300x-ras-errors.json" >"$tmp/many/$i.json"
done
for i in 07 08 09; do
  sed -i 's/6\.8\.0-79-generic/6.8.0-40-generic/' "$tmp/many/$i.json"
done
"$bin" fleet compare "$tmp"/many/*.json >"$tmp/many.txt"
code=$?
[ "$code" = 1 ] || bad "exit $code for 40 nodes with three on another kernel, want 1"
grep -qxF '    6.8.0-40-generic  (3 nodes): node[07-09]' "$tmp/many.txt" ||
  { bad "40 nodes: the three odd nodes are not one range"; cat "$tmp/many.txt"; }

"$bin" fleet compare --format json "$tmp"/*.json >"$tmp/out.json"
/usr/bin/python3 - "$tmp/out.json" <<'PY' || fail=1
import json, sys
d = json.load(open(sys.argv[1]))
assert d["error_difference"] is True
kernel = next(r for r in d["rows"] if r["fact"] == "kernel.release")
odd = [v["node"] for v in kernel["values"] if v["differs"]]
assert odd == ["mi300x-node01"], odd
assert kernel["majority"] == "6.8.0-79-generic"
assert kernel["groups"][0] == {"value": "6.8.0-79-generic", "count": 3,
                               "nodes": [n for n in d["nodes"] if n != "mi300x-node01"]}, kernel["groups"]
assert kernel["groups"][1] == {"value": "5.15.0-119-generic", "count": 1, "nodes": ["mi300x-node01"]}
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

# Issue 44 item 4: one number in one node's file (2^62 AMD GPU PCI functions) neither hangs
# `check --facts` nor `fleet compare`; that node is named with the bound it broke and the other
# nodes are still compared.
/usr/bin/python3 - "$tmp/mi300x-ras-errors.json" "$tmp/huge.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["facts"]["pci.amd_gpu_count"]["value"] = 2**62
json.dump(d, open(sys.argv[2], "w"))
PY
timeout 30 "$bin" check --facts "$tmp/huge.json" >"$tmp/huge.txt" 2>&1
code=$?
[ "$code" != 124 ] || bad "check --facts with pci.amd_gpu_count = 2^62 ran past 30 s"
timeout 30 "$bin" fleet compare "$tmp/mi300x-ras-errors.json" "$tmp/huge.json" \
  "$tmp/mi300x-numa-4021.json" "$tmp/mi300x-degraded-link.json" >"$tmp/huge-fleet.txt" 2>&1
code=$?
[ "$code" = 2 ] || bad "fleet compare with a 2^62 count: exit $code, want 2"
grep -q '^! huge.json could not be compared: .*pci.amd_gpu_count is 4611686018427387904, beyond the 65536' \
  "$tmp/huge-fleet.txt" || { bad "the out-of-range node is not named with its bound"; cat "$tmp/huge-fleet.txt"; }
grep -A2 -xF '! kernel' "$tmp/huge-fleet.txt" | grep -qxF '    5.15.0-119-generic  (1 node): mi300x-node01' ||
  { bad "the other nodes were not compared"; cat "$tmp/huge-fleet.txt"; }

# Issue 44 item 7: a PRETTY_NAME with an OSC title sequence ended by BEL and then a CSI colour
# reaches the terminal escaped, every ESC of it.
/usr/bin/python3 - "$tmp/mi300x-ras-errors.json" "$tmp/osc.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["facts"]["os.pretty_name"]["value"] = "Ubuntu \x1b]0;T\x07\x1b[31m"
d["facts"]["host.name"]["value"] = "evil\x1b[8mhidden"
json.dump(d, open(sys.argv[2], "w"))
PY
"$bin" fleet compare "$tmp/mi300x-degraded-link.json" "$tmp/osc.json" >"$tmp/osc.txt" 2>&1
if grep -q $'\033' "$tmp/osc.txt"; then bad "an escape sequence from a node's file reached the terminal"; cat -v "$tmp/osc.txt"; fi
grep -qF 'Ubuntu \x1B]0;T\x07\x1B[31m' "$tmp/osc.txt" || { bad "the PRETTY_NAME is not shown escaped"; cat -v "$tmp/osc.txt"; }

# Redacted bundles are all `redacted-host`: each node still gets its own label, stable in input
# order (docs/fleet.md), even where the file names are the same too.
for d in a b c; do
  mkdir -p "$tmp/$d"
  "$bin" capture --root "$fixtures/mi300x-ras-errors" --no-runtime -o "$tmp/$d/node.tar.gz" >/dev/null || bad "capture $d"
done
"$bin" fleet compare --format json "$tmp/a/node.tar.gz" "$tmp/b/node.tar.gz" "$tmp/c/node.tar.gz" \
  "$tmp/mi300x-numa-4021.json" >"$tmp/labels.json"
/usr/bin/python3 - "$tmp/labels.json" <<'PY' || fail=1
import json, sys
nodes = json.load(open(sys.argv[1]))["nodes"]
want = ["redacted-host (node.tar.gz)", "redacted-host (node.tar.gz) #2",
        "redacted-host (node.tar.gz) #3", "mi300x-node01"]
assert nodes == want, nodes
print("ok fleet compare: one label per node, in input order")
PY
[ $fail = 0 ] && echo "fleet compare: all checks passed"
exit $fail

#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# fleet compare at lab scale (issue 35): N nodes' facts files made from the 8-GPU MI300X fixture
# (mi300x-numa-4021, about 240 KB of facts each), named node0001..nodeN; every 97th node runs an
# older kernel and every 250th has a degraded PCIe link, so the comparison has minorities to name.
# Prints the wall time, the peak resident memory and the report's widest line.
# Usage: scripts/bench-fleet.sh [HALO-DOCTOR] [N]   (defaults: build/halo-doctor, 1000)
# Goal (issue 35): 1,000 nodes in under 5 s and 500 MiB, the report readable in 100 columns.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=$(realpath "${1:-build/halo-doctor}")
n=${2:-1000}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$bin" facts --root tests/fixtures/mi300x-numa-4021 --no-runtime --format json -o "$work/base.json"
/usr/bin/python3 - "$work" "$n" <<'PY'
import json, sys
work, n = sys.argv[1], int(sys.argv[2])
base = json.load(open(f"{work}/base.json"))
for i in range(1, n + 1):
    doc = json.loads(json.dumps(base))
    facts = doc["facts"]
    facts["host.name"]["value"] = f"node{i:04d}"
    if i % 97 == 0:
        facts["kernel.release"]["value"] = "5.15.0-117-generic"
    if i % 250 == 0:
        facts["drm.card1.pcie.current_width"]["value"] = 8
    json.dump(doc, open(f"{work}/node{i:04d}.json", "w"))
PY
du -sh "$work" | sed 's/\t.*/ of facts files/'
/usr/bin/time -f '%e s wall, %U s user, %M KiB peak resident' "$bin" fleet compare "$work"/node*.json \
  >"$work/report.txt" 2>"$work/time.txt" || true
tail -n 1 "$work/time.txt"
echo "report: $(wc -l <"$work/report.txt") lines, widest $(awk '{ if (length($0) > w) w = length($0) } END { print w }' "$work/report.txt") columns"
head -n 20 "$work/report.txt"

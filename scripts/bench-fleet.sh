#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# fleet compare at lab scale (issues 35 and 42): N nodes' facts files made from the 8-GPU MI300X
# fixture (mi300x-numa-4021, about 240 KB of facts each), named node0001..nodeN; every 97th node
# runs an older kernel and every 250th has a degraded PCIe link, so the comparison has minorities
# to name. Times `fleet compare` over them against Debian's Python merely loading the same files
# (`json.load` of each, one after the other, none kept), in PAIRS alternating runs after one
# warm-up of each (the page cache warm, a shared machine's drift in both), and prints both
# medians, the median of the per-pair ratios, each side's peak resident memory (/usr/bin/time -v)
# and the report's widest line.
# Usage: scripts/bench-fleet.sh [HALO-DOCTOR] [N] [PAIRS]   (defaults: build/halo-doctor, 1000, 3)
# With FLEET_DIR=DIR the files are made in DIR (kept, and made again only when DIR has not N of
# them), so that two builds are timed on the same files.
# Goals: issue 35, 1,000 nodes in under 5 s and 500 MiB, the report readable in 100 columns;
# issue 42, under 0.5x of Python's load at 1,000 and 10,000 nodes, the memory not growing with N.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=$(realpath "${1:-build/halo-doctor}")
n=${2:-1000}
pairs=${3:-3}
py=/usr/bin/python3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
nodes=${FLEET_DIR:-$work/nodes}
mkdir -p "$nodes"
if [ "$(find "$nodes" -maxdepth 1 -name 'node*.json' | wc -l)" != "$n" ]; then
find "$nodes" -maxdepth 1 -name 'node*.json' -delete
"$bin" facts --root tests/fixtures/mi300x-numa-4021 --no-runtime --format json -o "$work/base.json"
# The node files: the fixture's facts with three values changed, written as json.dump writes the
# changed document (the template is dumped once with markers, then each marker replaced).
"$py" - "$work" "$n" "$nodes" <<'PY'
import json, sys
work, n, nodes = sys.argv[1], int(sys.argv[2]), sys.argv[3]
base = json.load(open(f"{work}/base.json"))
facts = base["facts"]
facts["host.name"]["value"] = "@@NAME@@"
facts["kernel.release"]["value"] = "@@KERNEL@@"
facts["drm.card1.pcie.current_width"]["value"] = 987654321
kernel = json.loads(open(f"{work}/base.json").read())["facts"]["kernel.release"]["value"]
width = json.loads(open(f"{work}/base.json").read())["facts"]["drm.card1.pcie.current_width"]["value"]
template = json.dumps(base)
assert template.count("@@NAME@@") == 1 and template.count("987654321") == 1
for i in range(1, n + 1):
    text = template.replace("@@NAME@@", f"node{i:04d}")
    text = text.replace("@@KERNEL@@", "5.15.0-117-generic" if i % 97 == 0 else kernel)
    text = text.replace("987654321", str(8 if i % 250 == 0 else width))
    with open(f"{nodes}/node{i:04d}.json", "w") as f:
        f.write(text)
PY
rm "$work/base.json"
fi
echo "$n nodes, $(du -sh "$nodes" | sed 's/\t.*//') of facts files; $(nproc) cores; load $(cut -d' ' -f1-3 /proc/loadavg)"
cat >"$work/load.py" <<'PY'
import json, sys
for path in sys.argv[1:]:
    with open(path) as f:
        json.load(f)
PY
files=("$nodes"/node*.json)
# /usr/bin/time -v: "Elapsed (wall clock) time (h:mm:ss or m:ss): M:SS.ss", "Maximum resident set
# size (kbytes): K".
seconds() { awk -F': ' '/Elapsed/ { n = split($2, t, ":"); s = 0; for (i = 1; i <= n; i++) s = s * 60 + t[i]; print s }' "$1"; }
rss() { awk -F': ' '/Maximum resident/ { printf "%.1f MiB", $2 / 1024 }' "$1"; }
run_halo() { /usr/bin/time -v -o "$work/halo.time" "$bin" fleet compare "${files[@]}" >"$work/report.txt" || true; }
run_py() { /usr/bin/time -v -o "$work/py.time" "$py" "$work/load.py" "${files[@]}"; }
run_halo
run_py
halo_t=()
py_t=()
ratios=()
for _ in $(seq "$pairs"); do
  run_halo
  h=$(seconds "$work/halo.time")
  run_py
  p=$(seconds "$work/py.time")
  halo_t+=("$h")
  py_t+=("$p")
  ratios+=("$(awk -v h="$h" -v p="$p" 'BEGIN { printf "%.3f", h / p }')")
done
median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
echo "fleet compare: median $(median "${halo_t[@]}") s wall (runs: ${halo_t[*]}), peak resident $(rss "$work/halo.time")"
echo "python3 json.load: median $(median "${py_t[@]}") s wall (runs: ${py_t[*]}), peak resident $(rss "$work/py.time")"
echo "ratio fleet compare / json.load: median $(median "${ratios[@]}") (pairs: ${ratios[*]})"
echo "report: $(wc -l <"$work/report.txt") lines, widest $(awk '{ if (length($0) > w) w = length($0) } END { print w }' "$work/report.txt") columns"
head -n 20 "$work/report.txt"

#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Start-up yardstick (issue 33): `halo-doctor check --root tests/fixtures/strix-halo-default-ttm
# --format json` against Debian's `/usr/bin/python3 -c pass`, timed in one run as PAIRS pairs of
# alternating runs (A B, then B A, ...) after 3 warm-up pairs, each run timed by hyperfine (-N: no
# shell). Prints both medians and the median of the per-pair ratios, which holds when the machine's
# speed drifts during the run. Builds nothing.
#
#   scripts/bench-check.sh [HALO-DOCTOR] [PAIRS]   default build/halo-doctor, 31 pairs
#   scripts/bench-check.sh --suite [HALO-DOCTOR]   the wider table of docs/performance.md
#                                                  (fixtures, this machine, plan), 50 runs each
set -euo pipefail
cd "$(dirname "$0")/.."
command -v hyperfine >/dev/null || {
  echo "bench-check.sh: needs hyperfine (Debian package hyperfine; scripts/setup.sh --test)" >&2
  exit 2
}

if [[ ${1:-} == --suite ]]; then
  bin=${2:-./build/halo-doctor}
  args=()
  # vega-m-firmware-not-in-initramfs: a firmware failure in the log, so the initramfs image is listed.
  for f in strix-halo-default-ttm mi300x-numa-4021 no-amd-gpu vega-m-firmware-not-in-initramfs; do
    args+=("$bin check --root tests/fixtures/$f --no-runtime --format json")
  done
  args+=("$bin check --no-runtime --format json" "$bin check --format json")
  # halo-doctor plan (issue 15): a real model config and axolotl YAML on a fixture machine, with the
  # bisections for the largest micro-batch and sequence.
  args+=("$bin plan --root tests/fixtures/strix-halo-default-ttm --no-runtime --model tests/plan/models/llama-3-8b --config tests/plan/train/axolotl-llama3-qlora.yml --format json"
    "$bin plan --root tests/fixtures/mi300x-numa-4021 --no-runtime --model tests/plan/models/qwen3-30b-a3b --format json")
  # A site policy of 16,000 waivers (once 14 s: a line lookup per waiver scanned the whole text).
  policy=$(mktemp --suffix=-waivers-16k.json)
  trap 'rm -f "$policy"' EXIT
  /usr/bin/python3 -c 'import json, sys
w = [{"rule": "ttm-limit-low", "reason": "r%d" % i, "owner": "o", "expires": "2099-01-01"} for i in range(16000)]
json.dump({"policy_version": 1, "waivers": w}, open(sys.argv[1], "w"), indent=2)' "$policy"
  args+=("$bin check --root tests/fixtures/strix-halo-default-ttm --no-runtime --policy $policy --format json")
  args+=("/usr/bin/python3 -c pass")
  hyperfine --warmup 5 --runs 50 -N -i --export-markdown "${HALO_BENCH_OUT:-/dev/stdout}" "${args[@]}"
  exit 0
fi

bin=${1:-build/halo-doctor}
pairs=${2:-31}
[[ -x $bin ]] || {
  echo "bench-check.sh: $bin is not an executable (build it first)" >&2
  exit 2
}
[[ $pairs =~ ^[1-9][0-9]*$ ]] || {
  echo "bench-check.sh: PAIRS must be a positive number" >&2
  exit 2
}
doctor="$bin check --root tests/fixtures/strix-halo-default-ttm --format json"
python=/usr/bin/python3
yardstick="$python -c pass"
[[ -x $python ]] || {
  echo "bench-check.sh: $python (Debian's python3) is not installed" >&2
  exit 2
}
# The check must work before it is timed: exit 0 or 1 (a finding), and a JSON report.
set +e
$doctor >/dev/null
rc=$?
set -e
if ((rc > 1)); then
  echo "bench-check.sh: '$doctor' exited $rc" >&2
  exit 2
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
: >"$tmp/times"
for ((i = -3; i < pairs; i++)); do
  # Alternate which runs first, so neither always follows the other.
  if ((i % 2 == 0)); then order=("$doctor" "$yardstick"); else order=("$yardstick" "$doctor"); fi
  hyperfine -N -i --runs 1 --style none --export-csv "$tmp/pair.csv" "${order[@]}" >/dev/null 2>&1
  ((i < 0)) && continue # warm-up
  # CSV: command,mean,stddev,median,user,system,min,max (seconds); one run each.
  awk -F, -v d="$doctor" 'NR > 1 { t[$1 == d ? "a" : "b"] = $2 } END { print t["a"], t["b"] }' \
    "$tmp/pair.csv" >>"$tmp/times"
done
awk -v pairs="$pairs" -v doctor="$doctor" -v yardstick="$yardstick" '
  function median(v, n,   i, j, x) {
    for (i = 2; i <= n; i++) { x = v[i]; for (j = i - 1; j > 0 && v[j] > x; j--) v[j + 1] = v[j]; v[j + 1] = x }
    return n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
  }
  { a[NR] = $1; b[NR] = $2; r[NR] = $1 / $2 }
  END {
    ma = median(a, NR); mb = median(b, NR); mr = median(r, NR)
    printf "%d alternating pairs (after 3 warm-up pairs), hyperfine -N, one run each\n", NR
    printf "A  %-80s median %7.2f ms\n", doctor, ma * 1000
    printf "B  %-80s median %7.2f ms\n", yardstick, mb * 1000
    printf "A/B median of the per-pair ratios: %.2fx (ratio of the medians %.2fx)\n", mr, ma / mb
  }' "$tmp/times"

#!/usr/bin/env bash
# Measures how long `halo-doctor check` takes on the fixture roots and on this machine, with
# hyperfine (warm cache, 50 runs each). Usage: scripts/bench-check.sh [path/to/halo-doctor]
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-./build/halo-doctor}
args=()
for f in strix-halo-default-ttm mi300x-numa-4021 no-amd-gpu; do
  args+=("$bin check --root tests/fixtures/$f --no-runtime --format json")
done
args+=("$bin check --no-runtime --format json" "$bin check --format json")
# The yardstick of issue 10: start-up of the doctor against a bare Python start on the same machine.
args+=("python3 -c pass")
hyperfine --warmup 5 --runs 50 -N -i --export-markdown "${HALO_BENCH_OUT:-/dev/stdout}" "${args[@]}"

#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Measures how long `halo-doctor check` takes on the fixture roots and on this machine, with
# hyperfine (warm cache, 50 runs each). Usage: scripts/bench-check.sh [path/to/halo-doctor]
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${1:-./build/halo-doctor}
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
# The yardstick of issue 10: start-up of the doctor against a bare Python start on the same machine.
args+=("python3 -c pass")
hyperfine --warmup 5 --runs 50 -N -i --export-markdown "${HALO_BENCH_OUT:-/dev/stdout}" "${args[@]}"

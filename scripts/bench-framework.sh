#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# What reading a wheel's gfx targets costs `halo-doctor check` (issue 14: at most 20 ms on a
# machine with a 1 GB libtorch_hip.so). Builds two copies of the strix-halo-torch-therock-gfx1151
# fixture: one whose libtorch_hip.so is 1 GiB (sparse on disk: 128 translation units' compressed
# offload bundles of 8 MiB each, laid out as a linked wheel library is, with only their headers
# and first compressed bytes written), one without the library; hyperfine measures `check` on
# both (warm cache). Usage: scripts/bench-framework.sh [path/to/halo-doctor]
set -euo pipefail
cd "$(dirname "$0")/.."
bin=$(realpath "${1:-./build/halo-doctor}")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
lib=home/dev/therock/lib/python3.12/site-packages/torch/lib/libtorch_hip.so
cp -a tests/fixtures/strix-halo-torch-therock-gfx1151 "$tmp/with"
cp -a tests/fixtures/strix-halo-torch-therock-gfx1151 "$tmp/without"
rm "$tmp/without/$lib"
python3 - "$tmp/with/$lib" <<'PY'
import os, struct, sys
sys.path.insert(0, "tests/fixtures")
from build_fixtures import ccob_bundle, offload_bundle, write_hip_library  # the fixtures' writers

UNITS, UNIT_BYTES = 128, 8 << 20
head = ccob_bundle(offload_bundle(["gfx1151", "gfx1100", "gfx942", "gfx90a:xnack+"]))
# A CCOB bundle of 8 MiB: the real header and compressed start, the rest a hole.
head = head[:8] + struct.pack("<I", UNIT_BYTES) + head[12:]
with open(sys.argv[1], "wb") as f:
    write_hip_library(f, [head] * UNITS, unit=UNIT_BYTES, runpath="$ORIGIN",
                      needed=["libc10_hip.so", "libamdhip64.so.7", "libMIOpen.so.1", "libc.so.6"])
print(f"libtorch_hip.so: {os.path.getsize(sys.argv[1]) / 2**30:.2f} GiB apparent, "
      f"{os.stat(sys.argv[1]).st_blocks * 512 / 2**20:.1f} MiB on disk")
PY
"$bin" facts --root "$tmp/with" --no-runtime --format json |
  python3 -c 'import json,sys
facts = json.load(sys.stdin)["facts"]
for k in ("framework.torch.offload_targets", "framework.torch.library_search"):
    print(k, "=", facts[k].get("value"), "from", facts[k]["source"])'
hyperfine --warmup 5 --runs 50 -N --export-markdown "${HALO_BENCH_OUT:-/dev/stdout}" \
  -n "check, 1 GiB libtorch_hip.so" "$bin check --root $tmp/with --no-runtime --format json -o /dev/null" \
  -n "check, no libtorch_hip.so" "$bin check --root $tmp/without --no-runtime --format json -o /dev/null"

#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Sets up, builds and runs `halo-doctor check` on this machine. Extra arguments go to check.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DHALO_WERROR=OFF >/dev/null
cmake --build build -j"$(nproc)" >/dev/null
exec ./build/halo-doctor check "$@"

#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Sets up, builds and runs `halo-doctor check` on this machine. Extra arguments go to check.
# Installs only what building and running needs (scripts/setup.sh --build-only): the test suite's
# tools are scripts/test.sh's business.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --build-only
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DHALO_WERROR=OFF -DHALO_BUILD_TESTS=OFF >/dev/null
cmake --build build -j"$(nproc)" --target halo-doctor >/dev/null
exec ./build/halo-doctor check "$@"

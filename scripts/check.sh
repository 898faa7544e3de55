#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Sets up, builds and runs `halo-doctor check` on this machine. Extra arguments go to check.
# Installs only what building and running needs (scripts/setup.sh --build-only): the test suite's
# tools are scripts/test.sh's business.
set -euo pipefail
cd "$(dirname "$0")/.."
# Its own build directory (build-check/, a Release build without the tests), so that this command and
# scripts/test.sh (build/) never reconfigure each other's build, whichever runs first (issue 46).
bash scripts/setup.sh --build-only
cmake -S . -B build-check -DCMAKE_BUILD_TYPE=Release -DHALO_WERROR=OFF -DHALO_BUILD_TESTS=OFF >/dev/null
cmake --build build-check -j"$(nproc)" --target halo-doctor >/dev/null
exec ./build-check/halo-doctor check "$@"

#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Sets up, builds and runs the whole test suite (unit, probe, scenario, golden and CLI tests).
# Installs the build dependencies and every tool the tests compare the doctor with (scripts/setup.sh).
# The tests are built (HALO_BUILD_TESTS=ON; scripts/check.sh turns them off in the same build dir).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cmake -S . -B build -DHALO_WERROR=ON -DHALO_BUILD_TESTS=ON
cmake --build build -j"$(nproc)"
ctest --test-dir build --output-on-failure -j"$(nproc)"

#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Sets up, builds and runs the whole test suite (unit, probe, scenario, golden and CLI tests).
# Installs the build dependencies and every tool the tests compare the doctor with (scripts/setup.sh).
# The tests are built in build/ (RelWithDebInfo, warnings fatal); scripts/check.sh builds in build-check/,
# so the two commands run in either order on a fresh clone (issue 46).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DHALO_WERROR=ON -DHALO_BUILD_TESTS=ON
cmake --build build -j"$(nproc)"
ctest --test-dir build --output-on-failure -j"$(nproc)"

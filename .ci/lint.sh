#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Lint gate: clang-format (.clang-format) on every tracked C++ file, and the curated clang-tidy
# (.clang-tidy) with zero findings on the product code.
# Usage: .ci/lint.sh BUILD_DIR   (a configured CMake build: its compile_commands.json is used,
#                                 and its generated headers must exist, as after scripts/test.sh)
#
# clang-tidy runs on the translation units under src/ and checks/ (the doctor itself); the
# headers they include from include/halo/, src/ and checks/ are checked through them
# (HeaderFilterRegex). tests/ and bench/ are left out: Catch2's TEST_CASE/REQUIRE macros and the
# benchmark harness expand to code the curated set was not written for (global registrars,
# C arrays, magic numbers in expectations), they do not ship, and their ~50 Catch2-heavy
# translation units would add minutes to the step.
# Cost (2-core VM, 122 translation units): about 20 CPU-minutes, so about 10 minutes on two free
# cores; the clang-analyzer-* checks are about 40% of it. Units unchanged since a clean run are
# skipped (.ci/tidy-cache.py: about 30 s to preprocess them all and compare).
set -euo pipefail
cd "$(dirname "$0")/.."

if [ $# -ne 1 ]; then
  echo "usage: $0 BUILD_DIR" >&2
  exit 2
fi
build=$1
if [ ! -f "$build/compile_commands.json" ]; then
  echo "lint: $build/compile_commands.json is missing (configure with CMake first)" >&2
  exit 2
fi

echo "-- clang-format --dry-run --Werror ($(clang-format --version))"
git ls-files -z -- '*.cpp' '*.hpp' '*.h' | xargs -0 clang-format --dry-run --Werror

# run-clang-tidy (LLVM 14) exits non-zero only when a clang-tidy run fails (a compile error);
# a finding is a "warning:" line in its output, always coloured (it passes --use-color).
# Both are checked.
echo "-- run-clang-tidy on src/ and checks/ ($(clang-tidy --version | grep -m1 -o 'version [0-9.]*'))"
root_re=$(printf '%s' "$PWD" | sed 's/[][\.*^$+?(){}|]/\\&/g')
log=$(mktemp)
todo=$(mktemp)
trap 'rm -f "$log" "$todo"' EXIT
# Units found clean before with the same inputs are not checked again (.ci/tidy-cache.py says
# what the key holds); HALO_TIDY_CACHE=0 checks every unit.
cache=${XDG_CACHE_HOME:-${HOME:-/nonexistent}/.cache}/halo-doctor-clang-tidy
if [ "${HALO_TIDY_CACHE:-1}" = 1 ] && python3 .ci/tidy-cache.py pending "$build" "^${root_re}/(src|checks)/" "$cache" "$todo"; then
  files_re="^($(cut -f2 "$todo" | sed 's/[][\.*^$+?(){}|]/\\&/g' | paste -sd'|'))\$"
else
  cache=
  files_re="^${root_re}/(src|checks)/"
fi
rc=0
if [ -z "$cache" ] || [ -s "$todo" ]; then
  # The build's flags are g++'s; one of them, -Wno-restrict (GCC 12's false positive, CMakeLists.txt),
  # is unknown to clang, which with -Werror would stop every translation unit: clang is told so.
  run-clang-tidy -p "$build" -quiet -j "$(nproc)" -extra-arg=-Wno-unknown-warning-option \
    "$files_re" >"$log" 2>&1 || rc=$?
fi
findings=$(sed 's/\x1b\[[0-9;]*m//g' "$log" | grep -E '^[^ ]+:[0-9]+:[0-9]+: (warning|error):' |
  sort -u || true)
if [ "$rc" -ne 0 ] || [ -n "$findings" ]; then
  sed 's/\x1b\[[0-9;]*m//g' "$log" | grep -v -E '^[0-9]+ warnings? generated\.$' || true
  echo "lint: clang-tidy findings ($(printf '%s' "$findings" | grep -c . || true); run-clang-tidy exit $rc):" >&2
  printf '%s\n' "$findings" >&2
  exit 1
fi
if [ -n "$cache" ]; then python3 .ci/tidy-cache.py mark "$cache" "$todo"; fi
echo "lint: clang-format and clang-tidy are clean"

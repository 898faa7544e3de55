#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Compile check of the halo-bench GPU microbenchmark (no GPU needed, nothing is run on a GPU).
#   HIP, Debian hipcc/clang-15 (ROCm 5.2):          gfx90a, gfx1030
#   HIP, clang-19 + synthetic device-lib shim:      gfx942, gfx1100, gfx1151 (compile only)
#   CUDA, /usr/local/cuda/bin/nvcc:                 sm_90
# Usage, from the repository root of a clean clone:  bash .ci/gpu-compile-check.sh
# Exit status: non-zero when a backend that could be attempted failed to build.
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
work="$(mktemp -d -t halo-gpu-check.XXXXXX)"
trap 'rm -rf "$work"' EXIT
jobs="$(nproc 2>/dev/null || echo 2)"
declare -a results=()
failed=0

log() { printf '[gpu-compile-check] %s\n' "$*"; }

apt_install() {
  if [ "$(id -u)" -eq 0 ]; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$@" >"$work/apt.log" 2>&1 || {
      DEBIAN_FRONTEND=noninteractive apt-get update -q >>"$work/apt.log" 2>&1 &&
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$@" >>"$work/apt.log" 2>&1
    }
  else
    sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$@" 2>&1 | tee "$work/apt.log" >/dev/null
  fi
}

# A throwaway top-level project around bench/ (the real top level also builds halo-doctor).
top="$work/top"
mkdir -p "$top"
cat >"$top/CMakeLists.txt" <<CMAKE
cmake_minimum_required(VERSION 3.25)
project(halo_bench_compile_check LANGUAGES C CXX)
set(CMAKE_CXX_STANDARD 20)
set(CMAKE_CXX_STANDARD_REQUIRED ON)
set(CMAKE_CXX_EXTENSIONS OFF)
add_subdirectory("$repo_root/bench" bench)
CMAKE

# build NAME -- cmake args...
build() {
  local name="$1"
  shift
  local dir="$work/build-${name//[^A-Za-z0-9_]/_}"   # no ';' or spaces in CMake paths
  local start=$SECONDS
  if cmake -S "$top" -B "$dir" -DHALO_BUILD_TESTS=OFF "$@" >"$dir.log" 2>&1 &&
    cmake --build "$dir" -j "$jobs" >>"$dir.log" 2>&1 &&
    [ -x "$dir/bench/halo-bench" ]; then
    results+=("$name: OK ($((SECONDS - start)) s)")
    return 0
  fi
  results+=("$name: FAILED (log below)")
  tail -n 40 "$dir.log" >&2
  failed=1
  return 0
}

# --- dependencies --------------------------------------------------------------------------------
log "installing hipcc, libamdhip64-dev, clang-19, lld-19, llvm-15 and the host libraries"
apt_install hipcc libamdhip64-dev clang-19 lld-19 llvm-15 nlohmann-json3-dev libcli11-dev cmake

# --- HIP with Debian's clang-15 (ROCm 5.2): gfx90a, gfx1030 ------------------------------------
build "hip clang-15 gfx90a;gfx1030" -DHALO_BENCH=hip -DCMAKE_HIP_COMPILER=clang++-15 \
  "-DCMAKE_HIP_ARCHITECTURES=gfx90a;gfx1030"

# --- HIP with clang-19 and a device-library shim: gfx942, gfx1100, gfx1151 -------------------------
# Debian's rocm-device-libs 5.2 stop at gfx1036/gfx940: synthesise oclc_isa_version_<arch>.bc from
# the gfx1030 one (only the ISA version constant differs). Compile check only: such code was never
# run, and Debian's HIP 5.2 runtime cannot load it anyway.
bitcode=/usr/lib/x86_64-linux-gnu/amdgcn/bitcode
devlibs="$work/devlibs"
mkdir -p "$devlibs"
if command -v clang++-19 >/dev/null && command -v llvm-dis-15 >/dev/null && [ -d "$bitcode" ]; then
  for f in "$bitcode"/*.bc; do ln -sf "$f" "$devlibs/"; done
  for pair in 942:9402 1100:11000 1151:11501; do
    arch="${pair%%:*}"
    version="${pair##*:}"
    llvm-dis-15 "$bitcode/oclc_isa_version_1030.bc" -o - | sed "s/i32 10300/i32 $version/" |
      llvm-as-15 -o "$devlibs/oclc_isa_version_$arch.bc"
  done
  build "hip clang-19 gfx942;gfx1100;gfx1151" -DHALO_BENCH=hip -DCMAKE_HIP_COMPILER=clang++-19 \
    "-DCMAKE_HIP_FLAGS=--rocm-device-lib-path=$devlibs" \
    "-DCMAKE_HIP_ARCHITECTURES=gfx942;gfx1100;gfx1151"
else
  results+=("hip clang-19 gfx942;gfx1100;gfx1151: FAILED (clang++-19 or llvm-dis-15 missing)")
  failed=1
fi

# --- CUDA sm_90 ----------------------------------------------------------------------------------
if [ -x /usr/local/cuda/bin/nvcc ]; then
  build "cuda nvcc sm_90" -DHALO_BENCH=cuda -DCMAKE_CUDA_COMPILER=/usr/local/cuda/bin/nvcc \
    -DCMAKE_CUDA_ARCHITECTURES=90
else
  echo "nvcc not found: CUDA compile check skipped"
  results+=("cuda nvcc sm_90: SKIPPED (nvcc not found)")
fi

# --- the default configure must not pick a GPU backend without ROCm -------------------------------
if [ ! -e /opt/rocm ] && [ -z "${ROCM_PATH:-}" ]; then
  if cmake -S "$top" -B "$work/build-auto" -DHALO_BUILD_TESTS=OFF >"$work/build-auto.log" 2>&1 &&
    grep -q "GPU benchmark not built" "$work/build-auto.log"; then
    results+=("auto without ROCm: OK (benchmark off, configure succeeded)")
  else
    results+=("auto without ROCm: FAILED")
    tail -n 20 "$work/build-auto.log" >&2
    failed=1
  fi
fi

log "results:"
for line in "${results[@]}"; do
  printf '  %s\n' "$line"
done
exit "$failed"

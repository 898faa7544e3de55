#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# One GPU session of halo-bench, end to end (docs/bench.md "GPU session"): builds halo-bench for
# the GPU it finds (CUDA or HIP), then runs every part and writes logs, facts and a summary to $OUT.
#
#   OUT=/some/dir bash bench/gpu-session.sh          # from the repository root
#   bash bench/gpu-session.sh --stage-deps            # on a machine with the -dev packages:
#       copies the header-only build dependencies (nlohmann-json3-dev, libcli11-dev: headers and
#       CMake configs, ~1.5 MB) into .deps/ (git-ignored), for a bare GPU machine without them;
#       carry .deps there and the build uses it (CMAKE_PREFIX_PATH).
#
# Parts, each with its own log and facts file in $OUT:
#   1 stream+gemm+int4   BabelStream, BF16 own kernel vs vendor BLAS, NF4/int4 paths at 4096^3
#   2 gemv               fused 4-bit GEMV vs BF16 BLAS, M = 1..64 on three projection shapes,
#                        pct_of_stream against the STREAM triad of the same run
#   3 integrity          pageable/pinned/async round trips 4 KiB .. 1 GiB, device bf16 conversion,
#                        on ROCm also a child with HSA_ENABLE_SDMA=0
#   4 model              Llama-3.2-1B and Qwen2.5-0.5B projections at 8192 training tokens and
#                        M = 1, 8, 64: bench/models/<case>.args hold the arguments
#                        `halo-doctor bench --model tests/bench/models/<case> --config .../args.json`
#                        passes (a unit test keeps them equal), so no halo-doctor build is needed
#   5 sanitizer          (CUDA, when compute-sanitizer is installed) memcheck on a small run
# Environment: OUT (required), BUILD (default /tmp/halo-bench-gpu-build), JOBS, REPS (default 10),
# PART_TIMEOUT (seconds per part, default 240), HALO_BENCH_ARCH (CUDA arch such as 90, or gfx
# target; detected otherwise).
# Exit status: 0 when every part ran and exited 0, 1 otherwise (the summary says which).
set -uo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
if [ "${1:-}" = --stage-deps ]; then
  rm -rf "$repo/.deps"
  mkdir -p "$repo/.deps/include" "$repo/.deps/share/cmake"
  for pkg in nlohmann:nlohmann_json CLI:CLI11; do
    inc="${pkg%%:*}"
    cfg="${pkg##*:}"
    if ! cp -r "/usr/include/$inc" "$repo/.deps/include/" ||
      ! cp -r "/usr/share/cmake/$cfg" "$repo/.deps/share/cmake/"; then
      echo "missing /usr/include/$inc or /usr/share/cmake/$cfg (install nlohmann-json3-dev libcli11-dev)"
      exit 1
    fi
  done
  echo "staged $(du -sh "$repo/.deps" | cut -f1) in $repo/.deps"
  exit 0
fi
: "${OUT:?set OUT to the directory for results}"
build="${BUILD:-/tmp/halo-bench-gpu-build}"
jobs="${JOBS:-$(nproc 2>/dev/null || echo 4)}"
reps="${REPS:-10}"
part_timeout="${PART_TIMEOUT:-240}"
mkdir -p "$OUT" "$build"
summary="$OUT/summary.txt"
: >"$summary"
status=0
say() { printf '%s\n' "$*" | tee -a "$summary"; }

# --- backend and architecture ----------------------------------------------------------------
backend=""
arch="${HALO_BENCH_ARCH:-}"
if command -v nvidia-smi >/dev/null 2>&1 && { command -v nvcc >/dev/null 2>&1 || [ -x /usr/local/cuda/bin/nvcc ]; }; then
  backend=cuda
  if [ -z "$arch" ]; then
    arch="$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d ' .')"
  fi
  nvcc_path="$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)"
  cmake_backend=(-DHALO_BENCH=cuda "-DCMAKE_CUDA_COMPILER=$nvcc_path" "-DCMAKE_CUDA_ARCHITECTURES=${arch:-90}")
  nvidia-smi >"$OUT/device.txt" 2>&1
elif [ -e /dev/kfd ]; then
  backend=hip
  if [ -z "$arch" ] && command -v rocminfo >/dev/null 2>&1; then
    arch="$(rocminfo 2>/dev/null | grep -o 'gfx[0-9a-f]*' | grep -v gfx000 | head -1)"
  fi
  cmake_backend=(-DHALO_BENCH=hip "-DCMAKE_HIP_ARCHITECTURES=${arch:-gfx1151}")
  { rocminfo 2>&1 | head -80; } >"$OUT/device.txt"
else
  say "no NVIDIA or AMD GPU found (nvidia-smi, /dev/kfd): nothing to run"
  exit 1
fi
say "halo-bench GPU session $(date -u +%Y-%m-%dT%H:%M:%SZ): backend $backend, arch ${arch:-default}, repo $(git -C "$repo" rev-parse --short HEAD 2>/dev/null)"

# --- build (bench/ alone, as .ci/gpu-compile-check.sh does) -------------------------------------
top="$build/top"
mkdir -p "$top"
cat >"$top/CMakeLists.txt" <<CMAKE
cmake_minimum_required(VERSION 3.25)
project(halo_bench_gpu_session LANGUAGES C CXX)
set(CMAKE_CXX_STANDARD 20)
set(CMAKE_CXX_STANDARD_REQUIRED ON)
add_subdirectory("$repo/bench" bench)
CMAKE
start=$SECONDS
deps=()
[ -d "$repo/.deps/share/cmake" ] && deps=("-DCMAKE_PREFIX_PATH=$repo/.deps")
if ! { cmake -S "$top" -B "$build/b" -DCMAKE_BUILD_TYPE=Release -DHALO_BUILD_TESTS=OFF "${deps[@]}" "${cmake_backend[@]}" &&
  cmake --build "$build/b" -j "$jobs" --target halo-bench; } >"$OUT/build.log" 2>&1; then
  say "build FAILED (see build.log)"
  tail -30 "$OUT/build.log"
  exit 1
fi
bench="$build/b/bench/halo-bench"
say "build ok in $((SECONDS - start)) s"

# run NAME ARGS...: one part, its log and facts in $OUT.
run() {
  local name="$1"
  shift
  local t0=$SECONDS
  timeout "$part_timeout" "$bench" --json "$OUT/$name.json" "$@" >"$OUT/$name.log" 2>&1
  local rc=$?
  say "part $name: exit $rc in $((SECONDS - t0)) s"
  [ "$rc" = 0 ] || status=1
}

run stream-gemm-int4 --only stream,gemm,int4 --sizes 4096x4096x4096 --reps "$reps"
run gemv --only gemv --gemv-m 1,2,4,8,16,32,64 --gemv-nk 4096x4096,11008x4096,4096x11008 --reps "$reps"
run integrity --only integrity --integrity-sizes 4K,64K,1M,16M,256M,1G
for args in "$repo"/bench/models/*.args; do
  case_name="$(basename "$args" .args)"
  mapfile -t model_args <"$args"
  run "model-$case_name" "${model_args[@]}" --gen-m 1,8,64 --reps "$reps"
done
if [ "$backend" = cuda ] && command -v compute-sanitizer >/dev/null 2>&1; then
  t0=$SECONDS
  timeout "$part_timeout" compute-sanitizer --tool memcheck --error-exitcode 9 "$bench" \
    --only gemv,integrity --gemv-m 1,5,64 --gemv-nk 512x1024 --gemv-rotate-mib 4 --reps 1 --warmup 0 \
    --integrity-sizes 4K,1M >"$OUT/sanitizer.log" 2>&1
  rc=$?
  say "part sanitizer (memcheck): exit $rc in $((SECONDS - t0)) s"
  [ "$rc" = 0 ] || status=1
fi

# --- summary of the numbers docs/bench.md records -----------------------------------------------
if command -v python3 >/dev/null 2>&1; then
  python3 - "$OUT" <<'PY' | tee -a "$summary"
import glob, json, os, sys
out = sys.argv[1]
facts = {}
for path in sorted(glob.glob(os.path.join(out, "*.json"))):
    try:
        doc = json.load(open(path))
    except (OSError, ValueError):
        continue
    part = os.path.basename(path)[:-5]
    for key, fact in doc.get("facts", {}).items():
        facts.setdefault(key, []).append((part, fact))
def show(pattern_parts, label=None):
    for key in sorted(facts):
        if all(p in key for p in pattern_parts):
            for part, f in facts[key]:
                value = f["value"] if f["status"] == "ok" else f'{f["status"]}: {f.get("reason", "")}'
                print(f"  {part:<42} {key} = {value}")
print("device:")
show(["bench.device.name"]); show(["bench.stream.device.triad_gbps"])
print("fused 4-bit GEMV (pct_of_stream):")
show(["bench.gemv.", ".pct_of_stream"])
print("gemm at 4096^3:")
show(["bench.gemm.bf16", ".tflops"]); show(["bench.int4.", "ratio"])
print("integrity:")
show(["bench.integrity.", ".ok"]); show(["bench.integrity.", "first_failure"])
print("model verdicts:")
show(["bench.model.", "verdict"])
errors = [(k, p, f.get("reason", "")) for k, v in facts.items() for p, f in v if f["status"] == "error"]
print(f"error facts: {len(errors)}")
for k, p, r in errors[:40]:
    print(f"  {p}: {k}: {r}")
PY
fi
say "done: status $status"
exit "$status"

#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# GPU test (CTest label "gpu"): runs halo-bench on a small problem and checks that every kernel's
# result passed its CPU reference check, then feeds the facts to `halo-doctor check`.
# Exits 77 (CTest: skipped) with the reason when halo-bench is not built or there is no GPU.
set -u
doctor=$1
bench=${2:-}
if [ -z "$bench" ] || [ ! -x "$bench" ]; then
  echo "SKIP: halo-bench is not built (configure with -DHALO_BENCH=hip or -DHALO_BENCH=cuda on a GPU machine)"
  exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$bench" --json "$tmp/bench.json" --reps 3 --warmup 1 --sizes 1024x1024x1024 --stream-mib 256 \
  --transfer-mib 64 --only stream,gemm,int4,gemv,integrity --gemv-m 1,5,16,64 \
  --gemv-nk 1024x1024,512x2048 --gemv-rotate-mib 64 --integrity-sizes 4K,1M,64M \
  --no-sdma-child >"$tmp/out" 2>&1
code=$?
if [ "$code" = 3 ]; then
  echo "SKIP: no GPU: $(tail -1 "$tmp/out")"
  exit 77
fi
cat "$tmp/out"
if [ "$code" != 0 ]; then echo "FAIL: halo-bench exited $code"; exit 1; fi
fail=0
# Every GEMM and dequantization result must have passed its check (status ok, not error).
if grep -q '"status": "error"' "$tmp/bench.json"; then
  echo "FAIL: a kernel failed its CPU reference check:"
  grep -B1 -A3 '"status": "error"' "$tmp/bench.json"
  fail=1
fi
for key in bench.stream.device.triad_gbps bench.gemm.bf16.tflops bench.int4.best_ratio_to_bf16 \
  bench.gemv.nf4.min_pct_of_stream bench.integrity.ok; do
  grep -q "\"$key\"" "$tmp/bench.json" || { echo "FAIL: $key missing"; fail=1; }
done
# Every transfer must have been intact on a healthy machine.
/usr/bin/python3 -c 'import json,sys; f=json.load(open(sys.argv[1]))["facts"]["bench.integrity.ok"]; sys.exit(0 if f["status"] == "ok" and f["value"] is True else 1)' \
  "$tmp/bench.json" || { echo "FAIL: bench.integrity.ok is not true"; fail=1; }
"$doctor" check --add-facts "$tmp/bench.json" --only bench-int4-slower,bench-bandwidth-low,gpu-transfer-corrupt --fail-on never --color never ||
  { echo "FAIL: check --add-facts"; fail=1; }
exit $fail

#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# halo-doctor bench --model (docs/bench.md "Model"), without a GPU: halo-doctor reads the model
# and the run with plan's readers and passes the model part's arguments to halo-bench. A copy of
# the binary runs beside a stand-in halo-bench that prints its arguments one per line.
set -u
bin=$(realpath "$1")
repo=$(realpath "$2")
cd "$repo" || exit 1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp "$bin" "$tmp/halo-doctor"
printf '#!/bin/sh\nprintf "%%s\\n" "$@"\n' >"$tmp/halo-bench"
chmod +x "$tmp/halo-bench"
fail=0
D=tests/bench/models/c07-llama-3.2-1b-full-b4-s2048-fused

# 1. The model's projections and the run's token count; other arguments kept.
"$tmp/halo-doctor" bench --model "$D" --config "$D/args.json" --reps 5 >"$tmp/args" 2>"$tmp/err"
code=$?
if [ "$code" = 0 ] && diff <(printf '%s\n' --reps 5; cat bench/models/c07-llama-3.2-1b-full-b4-s2048-fused.args) "$tmp/args" >/dev/null &&
  grep -q "training GEMM M = 8192 tokens (micro-batch 4 from .*args.json:3, sequence 2048 from .*args.json:19)" "$tmp/err"; then
  echo "ok bench --model passes the projections and 8192 tokens"
else
  echo "FAIL: bench --model (exit $code)"; cat "$tmp/args" "$tmp/err"; fail=1
fi

# 2. --batch/--seq override the file; a user's --only is kept; padding is announced (GPT-2 vocab).
"$tmp/halo-doctor" bench --model tests/plan/models/gpt2 --batch 2 --seq=1000 --only model,stream >"$tmp/args" 2>"$tmp/err"
if grep -qx -- "--train-tokens" "$tmp/args" && grep -qx 2000 "$tmp/args" && grep -qx model,stream "$tmp/args" &&
  ! grep -qx model "$tmp/args" && grep -q "lm_head:50272x768:1:bf16" "$tmp/args" && grep -q "rounded up" "$tmp/err"; then
  echo "ok bench --model with --batch, --seq= and --only"
else
  echo "FAIL: bench --model overrides"; cat "$tmp/args" "$tmp/err"; fail=1
fi

# 3. Bad input: exit 2 with a message, halo-bench not run.
expect_usage() {
  local what=$1 pattern=$2
  shift 2
  "$tmp/halo-doctor" bench "$@" >"$tmp/args" 2>"$tmp/err"
  local code=$?
  if [ "$code" = 2 ] && [ ! -s "$tmp/args" ] && grep -q "$pattern" "$tmp/err"; then
    echo "ok $what: exit 2"
  else
    echo "FAIL: $what: exit $code"; cat "$tmp/args" "$tmp/err"; fail=1
  fi
}
expect_usage "mixture of experts" "mixture-of-experts" --model tests/plan/models/mixtral-8x7b-v0.1
expect_usage "--config without --model" "need --model" --config "$D/args.json"
expect_usage "missing model" "no such file" --model "$tmp/nowhere"
expect_usage "bad --batch" "not a whole number" --model "$D" --batch 0
expect_usage "--seq without a value" "needs a value" --model "$D" --seq
expect_usage "tokens beyond 2^20" "token count" --model "$D" --batch 4096 --seq 4096

# 4. Without --model the arguments go through untouched.
"$tmp/halo-doctor" bench --only stream --reps 3 >"$tmp/args" 2>&1
if diff <(printf '%s\n' --only stream --reps 3) "$tmp/args" >/dev/null; then
  echo "ok bench without --model passes its arguments through"
else
  echo "FAIL: bench pass-through"; cat "$tmp/args"; fail=1
fi
exit $fail

#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Runs every libFuzzer target of tests/fuzz for SECONDS each (default 8) from a seed corpus made of
# the fixtures, the rules, the example policy and bundles captured from fixtures; fails on any
# finding (a crash, a sanitizer report, an uncaught exception, a timeout or running out of memory).
# Usage: tests/fuzz/run.sh BUILD_DIR [SECONDS]   (BUILD_DIR configured with -DHALO_FUZZ=ON)
# Longer runs: tests/fuzz/README.md.
set -euo pipefail
build=$(realpath "$1")
seconds=${2:-8}
src=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

seed() { # seed TARGET FILE...: copies the files into TARGET's seed directory
  local target=$1
  shift
  mkdir -p "$work/seeds/$target"
  local f
  for f in "$@"; do
    [ -f "$f" ] && cp "$f" "$work/seeds/$target/$(echo "$f" | md5sum | cut -c1-16)"
  done
  return 0
}

seed fuzz_values "$src"/tests/fuzz/seeds/values/* "$src"/tests/fixtures/*/proc/cmdline \
  "$src"/tests/fixtures/*/proc/sys/kernel/osrelease "$src"/tests/fixtures/*/proc/meminfo
seed fuzz_modprobe "$src"/tests/fixtures/*/etc/modprobe.d/*
seed fuzz_rules "$src"/rules/*.json
seed fuzz_policy "$src"/docs/examples/policy.json
seed fuzz_hsa_child "$src"/tests/fuzz/seeds/hsa_child/*
# fuzz_offload_bundle: the .hip_fatbin sections of the fixtures' libtorch_hip.so (plain and CCOB).
mkdir -p "$work/seeds/fuzz_offload_bundle"
for lib in "$src"/tests/fixtures/*/home/dev/*/lib/python3.*/site-packages/torch/lib/libtorch_hip.so; do
  objcopy -O binary --only-section=.hip_fatbin "$lib" \
    "$work/seeds/fuzz_offload_bundle/$(echo "$lib" | md5sum | cut -c1-16)"
done
# fuzz_fix: fields split at NUL (host, PRETTY_NAME, evidence, note, manual text, rule, modprobe.d
# file, kernel-argument value, variable value, user, NixOS line) from the fixtures' own strings.
mkdir -p "$work/seeds/fuzz_fix"
for fx in stack-grub-debian stack-nixos strix-halo-default-ttm; do
  f=$src/tests/fixtures/$fx
  { { cat "$f/proc/sys/kernel/hostname" 2>/dev/null || true; } | tr -d '\n'; printf '\0'
    sed -n 's/^PRETTY_NAME=//p' "$f/etc/os-release"; printf '\0/etc/default/grub exists\0'
    printf 'a note\0install kernel 6.18.4\0ttm-limit-low\0halo-doctor-ttm.conf\0'
    printf '27648000\0""\0alice\0/etc/nixos/amd-gpu.nix:4:'; } >"$work/seeds/fuzz_fix/$fx"
done
# shellcheck disable=SC2016 # the payloads are meant literally
printf '$(touch x)\0`id`\0a\nb\0\033]52;c;x\007\0\302\233\0HALO_EOF\nx\0a\0b\0c\0d\0e' \
  >"$work/seeds/fuzz_fix/payloads"
# fuzz_elf: the fixtures' libtorch_hip.so files whole (ELF with .hip_fatbin and .dynamic).
seed fuzz_elf "$src"/tests/fixtures/*/home/dev/*/lib/python3.*/site-packages/torch/lib/libtorch_hip.so
# fuzz_plan: the first byte picks the reader (0 model config, 1 YAML, 2 JSON training configuration).
mkdir -p "$work/seeds/fuzz_plan"
for f in "$src"/tests/plan/models/*/config.json "$src"/tests/plan/train/*; do
  case $f in *.md) continue ;; esac
  case $f in */config.json) sel='\000' ;; *.json) sel='\002' ;; *) sel='\001' ;; esac
  { printf '%b' "$sel"; cat "$f"; } >"$work/seeds/fuzz_plan/$(echo "$f" | md5sum | cut -c1-16)"
done
for fx in strix-halo-default-ttm mi300x-numa-4021 kfd-no-access; do
  "$build/halo-doctor" facts --root "$src/tests/fixtures/$fx" --no-runtime --format json >"$work/$fx.facts.json"
  "$build/halo-doctor" capture --root "$src/tests/fixtures/$fx" --no-runtime -o "$work/$fx.tar.gz" >/dev/null
  seed fuzz_facts "$work/$fx.facts.json"
  seed fuzz_fact_counts "$work/$fx.facts.json"
  seed fuzz_fleet_reader "$work/$fx.facts.json"
  seed fuzz_bundle "$work/$fx.tar.gz"
done
# fuzz_fact_counts: the fixtures' facts with a count beyond any machine (issue 44 item 4).
/usr/bin/python3 - "$work/mi300x-numa-4021.facts.json" "$work/seeds/fuzz_fact_counts/huge" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["facts"]["pci.amd_gpu_count"]["value"] = 2**62
d["facts"]["kfd.gpu_nodes"]["value"] = [str(i) for i in range(5000)]
json.dump(d, open(sys.argv[2], "w"))
PY
# fuzz_bundle_links: member lists (`L NAME TARGET`, `F NAME`, `D NAME`), link chains among them.
seed fuzz_bundle_links "$src"/tests/fuzz/seeds/bundle_links/*

export TMPDIR=$work/tmp # the bundle target extracts here
mkdir -p "$TMPDIR"
status=0
for target in fuzz_values fuzz_modprobe fuzz_facts fuzz_rules fuzz_policy fuzz_bundle fuzz_hsa_child fuzz_plan \
  fuzz_offload_bundle fuzz_elf fuzz_fix fuzz_bundle_links fuzz_fact_counts fuzz_fleet_reader; do
  echo "== $target: $seconds s"
  mkdir -p "$work/corpus/$target"
  # -timeout: one input taking 10 s is a hang; -rss_limit_mb: one using 2 GiB is unbounded.
  if ! (cd "$work" && "$build/tests/fuzz/$target" -max_total_time="$seconds" -timeout=10 \
    -rss_limit_mb=2048 -print_final_stats=1 "$work/corpus/$target" "$work/seeds/$target" \
    >"$work/$target.log" 2>&1); then
    echo "FAIL: $target found a problem:"
    tail -n 60 "$work/$target.log"
    ls "$work"/crash-* "$work"/timeout-* "$work"/oom-* 2>/dev/null || true
    status=1
  else
    grep -E '^stat::number_of_executed_units' "$work/$target.log" || true
  fi
done
left=$(find "$TMPDIR" -maxdepth 1 -name 'halo-bundle-*')
if [ -n "$left" ]; then echo "FAIL: extraction directories left behind: $left"; status=1; fi
exit $status

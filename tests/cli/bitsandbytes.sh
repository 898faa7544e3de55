#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# bitsandbytes beside a ROCm torch (issue 37): which native library bitsandbytes/cextension.py
# loads for torch.version.hip (the exact ROCm release, else the highest of the same major below,
# else the lowest above, never another major; BNB_ROCM_VERSION names one), whether it ships that
# library, and whether the library's offload bundles hold the GPU's target. The libraries are built
# as a wheel's are: clang-offload-bundler-19 bundles code objects for chosen targets, objcopy puts
# the bundle into a gcc-built shared object as its .hip_fatbin section, and the bundler's --list
# confirms the targets. The root is a copy of strix-halo-torch-therock-gfx1151 (gfx1151, torch
# 2.10.0+rocm7.13, hip 7.13). Usage: bitsandbytes.sh HALO_DOCTOR FIXTURES. Exit 77 without the tools.
set -euo pipefail
bin=$(realpath "$1")
fixtures=$(realpath "$2")
for tool in /usr/bin/clang-offload-bundler-19 /usr/bin/objcopy /usr/bin/gcc /usr/bin/python3; do
  [ -x "$tool" ] || {
    echo "SKIP: $tool is absent (apt-get install clang-tools-19 binutils gcc python3)"
    exit 77
  }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
echo 'int halo_bnb(void) { return 1; }' >f.c
/usr/bin/gcc -shared -fPIC -o base.so f.c
: >host.o
lib() { # OUT TARGET...: a library whose .hip_fatbin bundle holds code objects for TARGET...
  local out=$1 targets="host-x86_64-unknown-linux-gnu-" inputs=(--input=host.o) t
  shift
  for t in "$@"; do
    head -c 2000 /dev/urandom >"$t.co"
    targets+=",hipv4-amdgcn-amd-amdhsa--$t"
    inputs+=("--input=$t.co")
  done
  /usr/bin/clang-offload-bundler-19 --compress --type=o --bundle-align=4096 --targets="$targets" \
    "${inputs[@]}" --output=fat.bundle
  /usr/bin/clang-offload-bundler-19 --list --type=o --input=fat.bundle | grep -c amdgcn >/dev/null
  /usr/bin/objcopy --add-section .hip_fatbin=fat.bundle --set-section-alignment .hip_fatbin=4096 \
    base.so "$out" 2>/dev/null
}
site=root/home/dev/therock/lib/python3.12/site-packages
fresh() { # VERSION: the fixture with bitsandbytes VERSION installed and no native library yet
  rm -rf root
  cp -a "$fixtures/strix-halo-torch-therock-gfx1151" root
  mkdir -p "$site/bitsandbytes" "$site/bitsandbytes-$1.dist-info"
  printf '__version__ = "%s"\n' "$1" >"$site/bitsandbytes/__init__.py"
  printf 'Metadata-Version: 2.1\nName: bitsandbytes\nVersion: %s\n' "$1" >"$site/bitsandbytes-$1.dist-info/METADATA"
}
fail=0
verdict() { # WANT-STATUS MESSAGE-PART: the rule's result for GPU 0 and the library fact
  local out
  out=$({ "$bin" check --root root --no-runtime --only bitsandbytes-rocm-library --format json || true; } |
    /usr/bin/python3 -c '
import json, sys
r = [x for x in json.load(sys.stdin)["results"] if x["id"] == "bitsandbytes-rocm-library"][0]
print(r["status"] + "|" + r["message"])')
  if [ "${out%%|*}" = "$1" ] && grep -qF -- "$2" <<<"$out"; then
    echo "ok   $3: $out"
  else
    echo "FAIL $3: $out (want $1, '$2')"
    fail=1
  fi
}
fresh 0.50.1
lib "$site/bitsandbytes/libbitsandbytes_rocm713.so" gfx1100 gfx1151 gfx1201
lib "$site/bitsandbytes/libbitsandbytes_rocm72.so" gfx1100
verdict pass "libbitsandbytes_rocm713.so (torch.version.hip 7.13: the exact build)" "the exact ROCm 7.13 build with gfx1151"
rm "$site/bitsandbytes/libbitsandbytes_rocm713.so"
verdict fail "libbitsandbytes_rocm72.so has code for gfx1100, not for gfx1151" "ROCm 7.2 fallback without gfx1151"
fresh 0.50.1
lib "$site/bitsandbytes/libbitsandbytes_rocm64.so" gfx1151
verdict fail "loads libbitsandbytes_rocm713.so (torch.version.hip 7.13: no ROCm 7 build is packaged), which it does not ship" "0.50: only a ROCm 6.4 build"
# BNB_ROCM_VERSION (read from 0.50 on) names the library directly.
printf 'BNB_ROCM_VERSION=64\0' >>root/proc/self/environ
verdict pass "libbitsandbytes_rocm64.so (BNB_ROCM_VERSION=64" "0.50: BNB_ROCM_VERSION=64 picks the ROCm 6.4 build"

# Issue 45: 0.46 to 0.49 load only the exact build of torch.version.hip (cextension.py
# get_cuda_bnb_library_path at 0.49.2: libbitsandbytes_rocm{cuda_version_string}), with no nearest
# release and no BNB_ROCM_VERSION: a missing file raises "Configured ROCm binary not found".
fresh 0.49.2
lib "$site/bitsandbytes/libbitsandbytes_rocm713.so" gfx1151
verdict pass "libbitsandbytes_rocm713.so (bitsandbytes 0.49.2 loads only the build for torch.version.hip 7.13)" "0.49: the exact build"
rm "$site/bitsandbytes/libbitsandbytes_rocm713.so"
lib "$site/bitsandbytes/libbitsandbytes_rocm72.so" gfx1151
verdict fail "loads libbitsandbytes_rocm713.so (bitsandbytes 0.49.2 loads only the build for torch.version.hip 7.13)" "0.49: no fallback to the ROCm 7.2 build"
printf 'BNB_ROCM_VERSION=72\0' >>root/proc/self/environ
verdict fail "BNB_ROCM_VERSION is read from 0.50 on, not here" "0.49: BNB_ROCM_VERSION is not read"

# The ROCm fork (ROCm/bitsandbytes 0.43.x, cextension.py since commit 6d90452): libbitsandbytes_hip.so
# from HIP 6.1 on, libbitsandbytes_hip_nohipblaslt.so below it.
fresh 0.43.3.dev0
lib "$site/bitsandbytes/libbitsandbytes_hip.so" gfx1151
lib "$site/bitsandbytes/libbitsandbytes_hip_nohipblaslt.so" gfx1100
verdict pass "libbitsandbytes_hip.so (ROCm's bitsandbytes fork 0.43.3.dev0: torch.version.hip 7.13 is at or above 6.1)" "fork: HIP 7.13 loads the hipBLASLt build"
sed -i "s/^hip: Optional\[str\] = .*/hip: Optional[str] = '6.0.32830-d62f6a171'/" \
  "$site/torch/version.py"
verdict fail "libbitsandbytes_hip_nohipblaslt.so has code for gfx1100, not for gfx1151" "fork: HIP 6.0 loads the build without hipBLASLt"
exit $fail

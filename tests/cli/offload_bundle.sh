#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The wheel's gfx targets from libtorch_hip.so (issue 14), against the real LLVM tools: Debian's
# clang++-19 compiles HIP translation units for chosen targets (compressed with --offload-compress
# as pytorch.org wheels are since PyTorch PR 147761, and uncompressed as older wheels), links them
# into a shared library whose .hip_fatbin section holds one bundle per unit, and
# clang-offload-bundler-19 --list says what each object holds. The doctor, reading only the
# section's headers, must name the same targets; torch-missing-gfx-target must judge a Strix Halo
# by them.
# Usage: offload_bundle.sh HALO_DOCTOR FIXTURES. Exit 77 (skipped) without clang-19/clang-tools-19/lld-19.
set -euo pipefail
# Debian's tools, never the runner's PATH (a pyenv shim's python3, another LLVM's clang).
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
py=/usr/bin/python3
bin=$(realpath "$1")
fixtures=$(realpath "$2")
# clang-19 links the amdgcn code objects with its own ld.lld (lld-19: /usr/lib/llvm-19/bin/ld.lld).
for tool in clang++-19 clang-offload-bundler-19 ld.lld-19 objcopy gcc "$py"; do
  command -v "$tool" >/dev/null || {
    echo "SKIP: $tool is absent (apt-get install clang-19 clang-tools-19 lld-19 binutils gcc python3; scripts/setup.sh lists them)"
    exit 77
  }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"

# A kernel without the HIP headers: -nogpuinc/-nogpulib, and the one host declaration clang's
# kernel-launch lowering asks for.
unit() { # NAME: a translation unit with one kernel
  cat >"$1.hip" <<EOF
extern "C" int hipLaunchKernel(const void*, unsigned long long, unsigned long long, void**,
                               unsigned long, void*);
__attribute__((global)) void $1_kernel(int* p) { *p = 1; }
EOF
}
compile() { # NAME FLAGS...: one object with its offload bundle
  local name=$1
  shift
  unit "$name"
  clang++-19 -x hip -nogpuinc -nogpulib -fPIC -c "$name.hip" -o "$name.o" "$@"
}
# What the real bundler lists for an object's .hip_fatbin section (the bundle clang embedded), as
# gfx processors (features dropped), one per line.
listed() {
  objcopy -O binary --only-section=.hip_fatbin "$1" "$1.fatbin"
  clang-offload-bundler-19 --list --type=o --input="$1.fatbin" | sed -n 's/^hip[^-]*-amdgcn-amd-amdhsa--\([^:]*\).*/\1/p' | sort -u
}
root_with() { # LIB: a copy of the TheRock fixture whose libtorch_hip.so is LIB
  rm -rf root
  cp -a "$fixtures/strix-halo-torch-therock-gfx1151" root
  cp "$1" root/home/dev/therock/lib/python3.12/site-packages/torch/lib/libtorch_hip.so
}
offload_fact() { # ROOT: the framework.torch.offload_targets fact as "status|value|source"
  "$bin" facts --root "$1" --no-runtime --format json | "$py" -c '
import json, sys
f = json.load(sys.stdin)["facts"]["framework.torch.offload_targets"]
print("{}|{}|{}".format(f["status"], ",".join(f["value"] or []), f.get("source", "") + f.get("reason", "")))'
}

# 1. Three units for the same targets, two compressed (zstd), one not: what a wheel holds.
archs=(--offload-arch=gfx942 --offload-arch=gfx1151 --offload-arch=gfx90a:xnack+)
compile a "${archs[@]}" --offload-compress
compile b "${archs[@]}"
compile c "${archs[@]}" --offload-compress
clang++-19 -shared -o libtorch_hip.so a.o b.o c.o
want=$(for o in a.o b.o c.o; do listed "$o"; done | sort | uniq -c | awk '$1 == 3 {print $2}' | paste -sd,)
[ "$want" = "gfx1151,gfx90a,gfx942" ] || { echo "FAIL: the bundler lists $want"; exit 1; }
root_with libtorch_hip.so
got=$(offload_fact root)
case "$got" in
"ok|$want|"*"libtorch_hip.so .hip_fatbin: 3 offload bundles (2 compressed, zstd)") echo "ok: $got" ;;
*) echo "FAIL: the doctor read '$got', the bundler lists $want"; exit 1 ;;
esac
set +e
"$bin" check --root root --no-runtime --only torch-missing-gfx-target --format json >report.json
code=$?
set -e
[ "$code" = 0 ] || { echo "FAIL: check exited $code with gfx1151 in every bundle"; cat report.json; exit 1; }

# 2. One unit built without gfx1151 (a library whose kernels are not all for the GPU): the
# targets are those every unit has, and gfx1151 is named as partial.
compile d --offload-arch=gfx942 --offload-compress
clang++-19 -shared -o libpartial.so a.o d.o
root_with libpartial.so
got=$(offload_fact root)
case "$got" in
"ok|gfx942|"*"2 offload bundles (2 compressed, zstd); only some bundles have gfx1151, gfx90a") echo "ok: $got" ;;
*) echo "FAIL: partial library read as '$got'"; exit 1 ;;
esac
set +e
"$bin" check --root root --no-runtime --only torch-missing-gfx-target --format json >report.json
code=$?
set -e
[ "$code" = 1 ] || { echo "FAIL: check exited $code, expected 1 (gfx1151 missing)"; cat report.json; exit 1; }
"$py" - report.json <<'PY'
import json, sys
r = [x for x in json.load(open(sys.argv[1]))["results"] if x["id"] == "torch-missing-gfx-target"]
assert len(r) == 1 and r[0]["status"] == "fail" and r[0]["severity"] == "error", r
assert "has no kernels for gfx1151" in r[0]["message"], r[0]["message"]
# libtorch_hip.so has gfx942 in every bundle, the fixture's rocBLAS gfx1151 only: nothing in common.
assert r[0]["evidence"]["framework.torch.offload_targets"] == ["gfx942"], r[0]["evidence"]
assert r[0]["evidence"]["framework.torch.kernel_targets"] == [], r[0]["evidence"]
print("ok: torch-missing-gfx-target:", r[0]["message"])
PY

# 3. A bundle made by the bundler itself (--compress), put into a gcc-built library with objcopy
# as a .hip_fatbin section: the reader does not depend on clang's ELF layout.
head -c 3000 /dev/urandom >gfx1201.co
head -c 5000 /dev/urandom >gfx1100.co
: >host.o
clang-offload-bundler-19 --compress --type=o --bundle-align=4096 \
  --targets=host-x86_64-unknown-linux-gnu-,hipv4-amdgcn-amd-amdhsa--gfx1201,hipv4-amdgcn-amd-amdhsa--gfx1100 \
  --input=host.o --input=gfx1201.co --input=gfx1100.co --output=fat.bundle
echo 'int halo_f(void) { return 1; }' >f.c
gcc -shared -fPIC -o base.so f.c
objcopy --add-section .hip_fatbin=fat.bundle --set-section-alignment .hip_fatbin=4096 base.so libobjcopy.so 2>/dev/null
root_with libobjcopy.so
got=$(offload_fact root)
case "$got" in
"ok|gfx1100,gfx1201|"*"1 offload bundle (1 compressed, zstd)") echo "ok: $got" ;;
*) echo "FAIL: objcopy library read as '$got'"; exit 1 ;;
esac

# 4. The same library with its first compressed payload damaged (a bad download): an error fact
# naming zstd, no crash. Then with the section table gone (cut short): no .hip_fatbin section.
"$py" - libtorch_hip.so cut.so <<'PY'
import sys
data = open(sys.argv[1], "rb").read()
at = data.find(b"CCOB")
open(sys.argv[2], "wb").write(data[:at + 24] + b"\xee" * 64 + data[at + 88:])
open(sys.argv[2] + ".short", "wb").write(data[:at + 40])
PY
root_with cut.so
got=$(offload_fact root)
case "$got" in
"error||"*".hip_fatbin offset 0: zstd: "*) echo "ok: $got" ;;
*) echo "FAIL: damaged library read as '$got'"; exit 1 ;;
esac
root_with cut.so.short
got=$(offload_fact root)
case "$got" in
"error||"*"libtorch_hip.so"*) echo "ok: $got" ;;
*) echo "FAIL: truncated library read as '$got'"; exit 1 ;;
esac

# 5. A .hip_fatbin section that holds no offload bundle (empty), and one whose only bundle has a
# host entry and no AMDGPU code object: an unknown layout, so "could not tell" (an error fact
# saying so), never an empty target list that torch-missing-gfx-target would read as "the wheel
# has no kernels for gfx1151".
: >empty.bundle
objcopy --add-section .hip_fatbin=empty.bundle base.so libempty.so 2>/dev/null
clang-offload-bundler-19 --type=o --targets=host-x86_64-unknown-linux-gnu- \
  --input=host.o --output=hostonly.bundle --allow-missing-bundles 2>/dev/null ||
  clang-offload-bundler-19 --type=o --targets=host-x86_64-unknown-linux-gnu- \
    --input=host.o --output=hostonly.bundle
objcopy --add-section .hip_fatbin=hostonly.bundle base.so libhostonly.so 2>/dev/null
for lib in libempty.so libhostonly.so; do
  root_with "$lib"
  got=$(offload_fact root)
  case "$got" in
  "error||"*"could not tell: "*"libtorch_hip.so .hip_fatbin holds "*"unknown layout"*) echo "ok: $lib: $got" ;;
  *) echo "FAIL: $lib read as '$got' (an empty list would claim the wheel has no kernels)"; exit 1 ;;
  esac
  "$bin" check --root root --no-runtime --only torch-missing-gfx-target --format json >report.json || true
  "$py" - <<'PY'
import json
r = json.load(open("report.json"))["results"]
assert len(r) == 1, r
# The fixture's rocBLAS has gfx1151: judged on what could be read, not failed on the unknown part.
assert r[0]["status"] == "pass", r[0]
ev = r[0]["evidence"]["framework.torch.offload_targets"]
print("ok: torch-missing-gfx-target", r[0]["status"], "with offload_targets", ev)
PY
done
echo "PASS: offload bundles from clang++-19 and clang-offload-bundler-19"

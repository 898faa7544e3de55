#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# torchvision and torchaudio judged by the build their compiled operators are linked against
# (issue 37): gcc links torchvision/_C.so and torchaudio/lib/libtorchaudio.so against stand-ins
# for libc10_cuda.so/libcudart.so.12 (PyPI's CUDA build) or libc10_hip.so/libamdhip64.so.6 (the
# ROCm build), beside a ROCm torch; readelf -d confirms the DT_NEEDED names, and the doctor's
# framework.<pkg>.build and torch-companion-mismatch must follow them, whatever the version label
# says. Usage: companion_build.sh HALO_DOCTOR. Exit 77 (skipped) without gcc or readelf.
set -euo pipefail
bin=$(realpath "$1")
for tool in /usr/bin/gcc /usr/bin/readelf /usr/bin/python3; do
  [ -x "$tool" ] || {
    echo "SKIP: $tool is absent (apt-get install gcc binutils python3)"
    exit 77
  }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
site=$tmp/venv/lib/python3.12/site-packages
mkdir -p "$site/torch/lib" "$site/torchvision" "$site/torchaudio/lib" "$tmp/libs"
printf 'home = /usr/bin\ninclude-system-site-packages = false\n' >"$tmp/venv/pyvenv.cfg"
printf "__version__ = '2.5.1+rocm6.2'\ngit_version = 'abc'\nhip = '6.2.41133-dd7f95766'\ncuda = None\n" \
  >"$site/torch/version.py"
: >"$site/torchvision/__init__.py"
: >"$site/torchaudio/__init__.py"
for so in libc10.so libc10_cuda.so libcudart.so.12 libc10_hip.so libamdhip64.so.6; do
  echo "int f_${so//[^a-z0-9]/_}(void) { return 0; }" >"$tmp/$so.c"
  /usr/bin/gcc -shared -fPIC -Wl,-soname,"$so" -o "$tmp/libs/$so" "$tmp/$so.c"
done
# ext OUT LIB...: a shared object whose DT_NEEDED are LIB... (linked with --no-as-needed).
ext() {
  local out=$1
  shift
  local args=()
  for l in "$@"; do args+=("-l:$l"); done
  echo 'int op(void) { return 0; }' >"$tmp/op.c"
  /usr/bin/gcc -shared -fPIC -o "$out" "$tmp/op.c" -L"$tmp/libs" -Wl,--no-as-needed "${args[@]}"
  for l in "$@"; do
    /usr/bin/readelf -d "$out" | grep -qE "\(NEEDED\) +Shared library: \[$l\]" || {
      echo "FAIL: readelf -d $out does not show NEEDED $l"
      exit 1
    }
  done
}
fact() {
  VIRTUAL_ENV=$tmp/venv "$bin" facts --no-runtime --format json |
    /usr/bin/python3 -c 'import json,sys; f=json.load(sys.stdin)["facts"][sys.argv[1]]; print(f.get("value", f["status"]))' "$1"
}
verdict() {
  # check exits 1 when the rule fails: the report is what is judged here.
  { VIRTUAL_ENV=$tmp/venv "$bin" check --no-runtime --only torch-companion-mismatch --format json || true; } |
    /usr/bin/python3 -c 'import json,sys; r=[x for x in json.load(sys.stdin)["results"] if x["id"]=="torch-companion-mismatch"][0]; print(r["status"], r["message"])'
}
fail=0
expect() { # NAME PKG WANT_BUILD WANT_STATUS [MESSAGE-PART]
  local b v
  b=$(fact "framework.$2.build")
  v=$(verdict)
  if [ "$b" = "$3" ] && [ "${v%% *}" = "$4" ] && { [ -z "${5:-}" ] || grep -qF -- "$5" <<<"$v"; }; then
    echo "ok   $1: $2 build $b; $v"
  else
    echo "FAIL $1: $2 build $b (want $3); $v (want $4 ${5:-})"
    fail=1
  fi
}
printf "__version__ = '0.20.1+rocm6.2'\n" >"$site/torchvision/version.py"
printf "__version__ = '2.5.1+rocm6.2'\n" >"$site/torchaudio/version.py"
ext "$site/torchvision/_C.so" libc10.so libc10_hip.so libamdhip64.so.6
ext "$site/torchaudio/lib/libtorchaudio.so" libc10.so libc10_hip.so
expect "the ROCm builds of both" torchvision rocm pass
ext "$site/torchvision/_C.so" libc10.so libc10_cuda.so libcudart.so.12
expect "a +rocm6.2 label on a CUDA-linked torchvision" torchvision cuda fail "torchvision 0.20.1+rocm6.2 is a cuda build"
printf "__version__ = '0.20.1'\n" >"$site/torchvision/version.py"
expect "PyPI's torchvision 0.20.1 (CUDA) beside ROCm torch" torchvision cuda fail "libc10_cuda.so"
ext "$site/torchvision/_C.so" libc10.so libc10_hip.so libamdhip64.so.6
expect "an unlabelled source build of torchvision for ROCm" torchvision rocm pass
ext "$site/torchaudio/lib/libtorchaudio.so" libc10.so
expect "a CPU build of torchaudio beside ROCm torch" torchaudio cpu fail "torchaudio 2.5.1+rocm6.2 is a cpu build"
exit $fail

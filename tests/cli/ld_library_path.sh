#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Which ROCm libraries PyTorch loads under LD_LIBRARY_PATH (issue 14), against the real dynamic
# linker: gcc links a libtorch_hip.so against a "ROCm 7.1" libamdhip64.so.7 with DT_RUNPATH
# (--enable-new-dtags) or DT_RPATH (--disable-new-dtags), a second "ROCm 7.0" copy of the same
# SONAME sits in another directory, and ldd(1) (ld.so in trace mode) says which copy loads with
# LD_LIBRARY_PATH pointing there. The doctor, reading the ELF dynamic section and its own
# environment (the live root), must agree with ld.so in every case, and readelf -d must show the
# tag the doctor names.
# Usage: ld_library_path.sh HALO_DOCTOR. Exit 77 (skipped) without gcc, ldd or readelf.
set -euo pipefail
bin=$(realpath "$1")
for tool in gcc ldd readelf python3; do
  command -v "$tool" >/dev/null || {
    echo "SKIP: $tool is absent (apt-get install gcc libc-bin binutils python3)"
    exit 77
  }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
site=$tmp/venv/lib/python3.12/site-packages
mkdir -p "$site/torch/lib" "$tmp/rocm-7.1.0/lib" "$tmp/rocm-7.0.2/lib"
printf 'home = /usr/bin\ninclude-system-site-packages = false\n' >"$tmp/venv/pyvenv.cfg"
printf "__version__ = '2.9.0a0+gitabc'\ngit_version = 'abc'\nhip = '7.1.25424'\ncuda = None\n" \
  >"$site/torch/version.py"
echo 'int hipInit(unsigned f) { return (int)f; }' >"$tmp/hip.c"
echo 'int hipInit(unsigned); int torch_hip(void) { return hipInit(0); }' >"$tmp/torch.c"
for rel in 7.1.0 7.0.2; do
  gcc -shared -fPIC -Wl,-soname,libamdhip64.so.7 -o "$tmp/rocm-$rel/lib/libamdhip64.so.7" "$tmp/hip.c"
done
lib=$site/torch/lib/libtorch_hip.so
# shellcheck disable=SC2016 # ld.so's token, not a shell variable
origin='$ORIGIN'
fail=0

# link DTAGS RPATH: libtorch_hip.so needing libamdhip64.so.7, with RPATH as the search path.
link() {
  gcc -shared -fPIC -o "$lib" "$tmp/torch.c" "-Wl,$1" "-Wl,-rpath,$2" \
    -L"$tmp/rocm-7.1.0/lib" -l:libamdhip64.so.7
}
# fact KEY: the doctor's value of KEY on the live root, under this process's environment.
fact() {
  VIRTUAL_ENV=$tmp/venv "$bin" facts --no-runtime --format json |
    python3 -c 'import json,sys; f=json.load(sys.stdin)["facts"][sys.argv[1]]; v=f.get("value"); print(", ".join(v) if isinstance(v, list) else v if v is not None else f["status"] + ": " + f.get("reason", ""))' "$1"
}
# case NAME LD_LIBRARY_PATH WANT_TAG: compares the doctor with ldd and readelf.
case_() {
  local name=$1 llp=$2 want_tag=$3
  local loaded shadows tag
  loaded=$(LD_LIBRARY_PATH=$llp ldd "$lib" | awk '/libamdhip64.so.7/ {print $3}')
  shadows=$(LD_LIBRARY_PATH=$llp fact framework.torch.ld_library_path_shadows)
  tag=$(fact framework.torch.library_search)
  if ! readelf -d "$lib" | grep -q "($want_tag)"; then
    echo "FAIL $name: readelf -d shows no $want_tag"
    fail=1
  fi
  if [[ $tag != "DT_$want_tag" ]]; then
    echo "FAIL $name: the doctor says $tag, readelf says $want_tag"
    fail=1
  fi
  local ldso_shadows=no doctor_shadows=no
  [[ $loaded == "$(dirname "$lib")"/* || $loaded == "$tmp/rocm-7.1.0/lib/"* ]] || ldso_shadows=yes
  [[ -z $shadows ]] || doctor_shadows=yes
  if [[ $ldso_shadows != "$doctor_shadows" ]]; then
    echo "FAIL $name: ld.so loads $loaded; the doctor's shadows: '${shadows}'"
    fail=1
  else
    echo "ok   $name: ld.so loads $loaded; the doctor's shadows: '${shadows:-none}'"
  fi
}

link --enable-new-dtags "$tmp/rocm-7.1.0/lib"
case_ "DT_RUNPATH, LD_LIBRARY_PATH into ROCm 7.0.2" "$tmp/rocm-7.0.2/lib" RUNPATH
case_ "DT_RUNPATH, LD_LIBRARY_PATH elsewhere" "/nonexistent:$tmp" RUNPATH
case_ "DT_RUNPATH, LD_LIBRARY_PATH is the linked ROCm" "$tmp/rocm-7.1.0/lib" RUNPATH
link --disable-new-dtags "$tmp/rocm-7.1.0/lib"
case_ "DT_RPATH, LD_LIBRARY_PATH into ROCm 7.0.2" "$tmp/rocm-7.0.2/lib" RPATH
# A wheel: the library bundled beside libtorch_hip.so, found through $ORIGIN.
cp "$tmp/rocm-7.1.0/lib/libamdhip64.so.7" "$site/torch/lib/"
link --enable-new-dtags "$origin"
case_ "DT_RUNPATH \$ORIGIN (bundled), LD_LIBRARY_PATH into ROCm 7.0.2" "$tmp/rocm-7.0.2/lib" RUNPATH
case_ "DT_RUNPATH \$ORIGIN, ';'-separated LD_LIBRARY_PATH" "/nonexistent;$tmp/rocm-7.0.2/lib" RUNPATH
link --disable-new-dtags "$origin"
case_ "DT_RPATH \$ORIGIN (pytorch.org wheels), LD_LIBRARY_PATH into ROCm 7.0.2" "$tmp/rocm-7.0.2/lib" RPATH

# No DT_RPATH or DT_RUNPATH at all: ld.so finds the library through LD_LIBRARY_PATH or its cache
# only; the doctor says "none", links nothing to the object's own path and lists no empty entry.
gcc -shared -fPIC -o "$lib" "$tmp/torch.c" -L"$tmp/rocm-7.1.0/lib" -l:libamdhip64.so.7
tag=$(fact framework.torch.library_search)
linked=$(LD_LIBRARY_PATH=$tmp/rocm-7.0.2/lib fact framework.torch.linked_libraries)
shadows=$(LD_LIBRARY_PATH=$tmp/rocm-7.0.2/lib fact framework.torch.ld_library_path_shadows)
linked_source=$(VIRTUAL_ENV=$tmp/venv "$bin" facts --no-runtime --format json |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["facts"]["framework.torch.linked_libraries"]["source"])')
if [[ $tag != none || -n $linked || -n $shadows || $linked_source == *"not followed"* ]]; then
  echo "FAIL no search path: tag '$tag', linked '$linked', shadows '$shadows', source '$linked_source'"
  fail=1
else
  echo "ok   no DT_RPATH or DT_RUNPATH: none, nothing linked to the object's own path"
fi

# The verdict a user sees: check fails with exit 1 in the shadowed case only.
link --enable-new-dtags "$origin"
rc=0
LD_LIBRARY_PATH=$tmp/rocm-7.0.2/lib VIRTUAL_ENV=$tmp/venv "$bin" check --no-runtime --only torch-ld-library-path \
  >"$tmp/out.txt" 2>&1 || rc=$?
if [[ $rc != 1 ]] || ! grep -q "FAIL  torch-ld-library-path" "$tmp/out.txt"; then
  echo "FAIL check: exit $rc, want 1 with torch-ld-library-path failing"
  cat "$tmp/out.txt"
  fail=1
fi
exit $fail

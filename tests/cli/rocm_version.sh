#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The ROCm release from files (issue 33): under --root, with --no-runtime and in a capture bundle
# no ROCr is loaded, so the ROCm-versus-kernel rule (gfx1151-rocm-kernel-matrix) reads the release
# an installation on disk says: AMD's rocm-core `.info/version` (/opt/rocm -> /opt/rocm-X.Y.Z),
# TheRock's `share/therock/therock_manifest.json`, or TheRock's rocm-sdk-core wheel.
# Base: strix-halo-gpu-hang (gfx1151, Fedora 6.18.4-200.fc43: a kernel with the gfx1151 fixes), on
# which AMD's RDNA3.5 page marks ROCm 7.1.x unsupported and 7.2.1 supported.
# Usage: rocm_version.sh HALO_DOCTOR FIXTURES PYTHON
set -u
bin=$1 fixtures=$2 py=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
verdict() { # ROOT-ARGS...: "status|message" of gfx1151-rocm-kernel-matrix
  "$bin" check "$@" --no-runtime --only gfx1151-rocm-kernel-matrix --format json >"$tmp/r.json" 2>"$tmp/err"
  "$py" -c '
import json, sys
r = json.load(open(sys.argv[1]))["results"][0]
print("{}|{}".format(r["status"], r["message"]))' "$tmp/r.json"
}
expect() { # NAME STATUS MESSAGE-PART GOT
  case "$4" in
  "$2|"*"$3"*) echo "ok $1: $4" ;;
  *) echo "FAIL $1: want $2 with '$3', got '$4'"; fail=1 ;;
  esac
}
fresh() {
  rm -rf "$tmp/root"
  cp -a "$fixtures/strix-halo-gpu-hang" "$tmp/root"
}

# 1. Nothing on disk: skipped as before, with the reason (the runtime was not run).
fresh
expect "no ROCm on disk" skip "--no-runtime; and no ROCm installation on disk" "$(verdict --root "$tmp/root")"

# 2. AMD's packages: /opt/rocm -> /opt/rocm-7.1.1, .info/version "7.1.1-38" (rocm-core).
fresh
mkdir -p "$tmp/root/opt/rocm-7.1.1/.info"
printf '7.1.1-38\n' >"$tmp/root/opt/rocm-7.1.1/.info/version"
ln -s rocm-7.1.1 "$tmp/root/opt/rocm"
expect "rocm-core 7.1.1" fail "AMD marks ROCm 7.1.1 unsupported on kernel 6.18.4-200.fc43.x86_64" "$(verdict --root "$tmp/root")"
src=$("$bin" facts --root "$tmp/root" --no-runtime --format json | "$py" -c '
import json, sys
f = json.load(sys.stdin)["facts"]
print(f["rocm.install.version"]["source"], "|", f["rocm.version"]["source"], "|", f["rocm.version_basis"]["value"])')
case "$src" in
"/opt/rocm-7.1.1/.info/version | rocm.install.version (/opt/rocm-7.1.1/.info/version) | the installation on disk") echo "ok source: $src" ;;
*) echo "FAIL source: $src"; fail=1 ;;
esac

# 3. The same machine captured and replayed: the bundle carries /opt/rocm/.info/version.
"$bin" capture --root "$tmp/root" --no-runtime -o "$tmp/b.tar.gz" >/dev/null 2>&1 || { echo "FAIL: capture exited $?"; fail=1; }
expect "bundle replay" fail "AMD marks ROCm 7.1.1 unsupported" "$(verdict --bundle "$tmp/b.tar.gz")"

# 4. 7.2.1 on disk: supported on this kernel.
printf '7.2.1-81\n' >"$tmp/root/opt/rocm-7.1.1/.info/version"
expect "rocm-core 7.2.1" pass "AMD supports ROCm 7.2.1" "$(verdict --root "$tmp/root")"

# 5. A TheRock tarball root with no .info/version: the manifest's rocm_version.
fresh
mkdir -p "$tmp/root/opt/rocm/share/therock"
printf '{"rocm_package_version": "7.10.0a20251104", "rocm_version": "7.10.0"}\n' \
  >"$tmp/root/opt/rocm/share/therock/therock_manifest.json"
expect "TheRock manifest 7.10" fail "AMD marks ROCm 7.10.0 unsupported" "$(verdict --root "$tmp/root")"

# 6. A manifest that is not JSON, and a version file without a version: no release, no crash.
printf '{"rocm_version": ' >"$tmp/root/opt/rocm/share/therock/therock_manifest.json"
mkdir -p "$tmp/root/opt/rocm/.info"
printf 'garbage\n' >"$tmp/root/opt/rocm/.info/version"
expect "unreadable release" skip "no ROCm installation on disk says its release" "$(verdict --root "$tmp/root")"

# 7. TheRock's rocm-sdk-core wheel in the venv training uses, nothing in /opt (the TheRock
# fixture: Fedora 6.17.4, before the gfx1151 fixes, where AMD marks 7.11 limited).
rm -rf "$tmp/root"
cp -a "$fixtures/strix-halo-torch-therock-gfx1151" "$tmp/root"
sdk="$tmp/root/home/dev/therock/lib/python3.12/site-packages/_rocm_sdk_core"
mkdir -p "$sdk/.info"
printf '7.11.0\n' >"$sdk/.info/version"
expect "rocm-sdk-core wheel 7.11" fail "AMD marks ROCm 7.11.0 limited on kernel 6.17.4-200.fc42.x86_64" "$(verdict --root "$tmp/root")"

[ "$fail" = 0 ] && echo "PASS: the ROCm release from files" || exit 1

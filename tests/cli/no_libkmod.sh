#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# libkmod is dlopen()ed, never linked (issue 35: the portable binary needs only glibc): the doctor
# starts on a machine without libkmod.so.2 and the module-file facts are errors naming dlopen's
# reason, never a crash or a silent pass. In a mount namespace the real libkmod.so.2 is hidden
# behind an empty file; the Secure Boot fixture makes the probe read the amdgpu module.
# Usage: no_libkmod.sh HALO_DOCTOR FIXTURES. Exit 77 (skipped) where unshare --mount is not permitted.
set -euo pipefail
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
py=/usr/bin/python3
bin=$(realpath "$1")
fixture=$(realpath "$2")/secure-boot-dkms-rejected-4328
if readelf -d "$bin" | grep -q 'libkmod'; then
  echo "FAIL: $bin links libkmod"
  exit 1
fi
unshare --mount true 2>/dev/null || { echo "SKIP: unshare --mount is not permitted here"; exit 77; }
lib=""
for dir in /usr/lib/x86_64-linux-gnu /lib/x86_64-linux-gnu /usr/lib64 /usr/lib; do
  if [ -e "$dir/libkmod.so.2" ]; then lib=$(readlink -f "$dir/libkmod.so.2"); break; fi
done
[ -n "$lib" ] || { echo "SKIP: libkmod.so.2 is not installed here (nothing to hide)"; exit 77; }
out=$(mktemp)
trap 'rm -f "$out"' EXIT
# With libkmod: the fixture's DKMS module is read.
"$bin" facts --root "$fixture" --no-runtime --format json -o "$out"
"$py" - "$out" ok <<'PY'
import json, sys
f = json.load(open(sys.argv[1]))["facts"]["amdgpu.module.path"]
assert f["status"] == "ok" and f["value"].endswith("amdgpu.ko.zst"), f
PY
# shellcheck disable=SC2016 # expanded by the inner shell
unshare --mount sh -ec 'mount --bind /dev/null "$1"; "$2" facts --root "$3" --no-runtime --format json -o "$4"' \
  sh "$lib" "$bin" "$fixture" "$out"
"$py" - "$out" <<'PY'
import json, sys
f = json.load(open(sys.argv[1]))["facts"]["amdgpu.module.path"]
assert f["status"] == "error", f
assert "libkmod could not be loaded" in f["reason"], f
print("ok: without libkmod.so.2 the module file is an error fact:", f["reason"][:120])
PY

#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The doctor starts and reports libdrm missing on a machine without it (issue 10): libdrm and
# libdrm_amdgpu are dlopen()ed, never linked. In a mount namespace the real libdrm_amdgpu.so.1 is
# hidden behind an empty file, so dlopen fails as it does where the package is not installed.
# Usage: no_libdrm.sh HALO_DOCTOR. Exit 77 (skipped) where unshare --mount is not permitted.
set -euo pipefail
bin=$(realpath "$1")
if ldd "$bin" | grep -q 'libdrm'; then
  echo "FAIL: $bin links libdrm: $(ldd "$bin" | grep libdrm)"
  exit 1
fi
if ! unshare --mount true 2>/dev/null && ! unshare -rm true 2>/dev/null; then
  echo "SKIP: unshare --mount is not permitted here"
  exit 77
fi
lib=""
for dir in /usr/lib/x86_64-linux-gnu /usr/lib/aarch64-linux-gnu /usr/lib64 /usr/lib; do
  if [ -e "$dir/libdrm_amdgpu.so.1" ]; then lib=$(readlink -f "$dir/libdrm_amdgpu.so.1"); break; fi
done
if [ -z "$lib" ]; then
  echo "SKIP: libdrm_amdgpu.so.1 is not installed here (nothing to hide)"
  exit 77
fi
flags=--mount
unshare --mount true 2>/dev/null || flags=-rm
out=$(mktemp)
trap 'rm -f "$out"' EXIT
# shellcheck disable=SC2016 # expanded by the inner shell
unshare "$flags" sh -ec 'mount --bind /dev/null "$1"; "$2" facts --format json -o "$3"' sh "$lib" "$bin" "$out"
python3 - "$out" <<'PY'
import json, sys
facts = json.load(open(sys.argv[1]))["facts"]
status = facts["libdrm.status"]
assert status["status"] == "ok" and status["value"] == "not_installed", status
detail = facts["libdrm.detail"]["value"]
assert "libdrm_amdgpu.so.1" in detail, detail
assert facts["libdrm.device_count"]["status"] == "missing", facts["libdrm.device_count"]
print("ok: libdrm.status = not_installed:", detail)
PY

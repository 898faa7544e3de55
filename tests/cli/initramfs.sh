#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The initramfs probe (checks/boot/initramfs.cpp) against real tools: an image made the way
# initramfs-tools makes one since 0.141 (uncompressed cpio segments first, the firmware in one of
# them, then a zstd-compressed main cpio), with the real `cpio -H newc` and `zstd`, and the
# doctor's answer for each firmware file the kernel log names compared with the real
# `lsinitramfs` listing of the same image. Skipped (77) without cpio, zstd or lsinitramfs.
set -u
bin=$(realpath "$1")
for t in cpio zstd lsinitramfs; do
  command -v "$t" >/dev/null || { echo "skip: no $t"; exit 77; }
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail=0
rel=6.17.0-19-generic
root=$work/root
mkdir -p "$root/boot" "$root/.halo" "$root/proc/sys/kernel"
echo "$rel" >"$root/proc/sys/kernel/osrelease"
printf 'ID=ubuntu\nVERSION_ID="24.04"\nPRETTY_NAME="Ubuntu 24.04.3 LTS"\n' >"$root/etc-os-release"
mkdir -p "$root/etc" && mv "$root/etc-os-release" "$root/etc/os-release"
# The kernel log: four files failed at boot.
{
  for f in gc_11_5_1_mes_2.bin gc_11_5_1_pfp.bin psp_14_0_1_toc.bin vcn_4_0_6.bin; do
    echo "[    3.1] amdgpu 0000:c5:00.0: Direct firmware load for amdgpu/$f failed with error -2"
  done
} >"$root/.halo/dmesg.txt"
# Segment 1: microcode, uncompressed. Segment 2: compressed firmware, uncompressed cpio.
# Segment 3: the main archive, zstd. gc_11_5_1_pfp.bin is in no segment.
mk() { (cd "$1" && find . -mindepth 1 | LC_ALL=C sort | cpio --quiet -o -H newc); }
mkdir -p "$work/s1/kernel/x86/microcode" "$work/s2/usr/lib/firmware/amdgpu" "$work/s3/usr/lib/firmware/updates/amdgpu" "$work/s3/scripts"
echo microcode >"$work/s1/kernel/x86/microcode/AuthenticAMD.bin"
echo fw | zstd -q >"$work/s2/usr/lib/firmware/amdgpu/gc_11_5_1_mes_2.bin.zst"
echo fw | zstd -q >"$work/s2/usr/lib/firmware/amdgpu/psp_14_0_1_toc.bin.zst"
echo fw >"$work/s3/usr/lib/firmware/updates/amdgpu/vcn_4_0_6.bin"
echo '#!/bin/sh' >"$work/s3/init"
echo x >"$work/s3/scripts/functions"
img=$root/boot/initrd.img-$rel
{ mk "$work/s1"; mk "$work/s2"; mk "$work/s3" | zstd -q -19; } >"$img"
listing=$(lsinitramfs "$img") || { echo "FAIL: lsinitramfs exited $?"; exit 1; }
json=$("$bin" facts --root "$root" --format json --no-runtime) || { echo "FAIL: facts"; exit 1; }
get() { printf '%s' "$json" | python3 -c "import json,sys; f=json.load(sys.stdin)['facts'].get('$1',{}); print(' '.join(f.get('value',[])) if isinstance(f.get('value'),list) else f.get('value',''))"; }
present=" $(get initramfs.firmware_failed_present) "
missing=" $(get initramfs.firmware_failed_missing) "
echo "doctor: present:$present missing:$missing segments: $(get initramfs.segments)"
for f in gc_11_5_1_mes_2.bin gc_11_5_1_pfp.bin psp_14_0_1_toc.bin vcn_4_0_6.bin; do
  if printf '%s\n' "$listing" | grep -Eq "(^|/)lib/firmware/(updates/)?amdgpu/$f(\.xz|\.zst)?$"; then
    want=present
  else
    want=missing
  fi
  if [ "$want" = present ] && [[ "$present" == *" amdgpu/$f "* ]] && [[ "$missing" != *" amdgpu/$f "* ]]; then
    echo "ok $f: in the image, as lsinitramfs lists it"
  elif [ "$want" = missing ] && [[ "$missing" == *" amdgpu/$f "* ]] && [[ "$present" != *" amdgpu/$f "* ]]; then
    echo "ok $f: not in the image, as lsinitramfs lists it"
  else
    echo "FAIL $f: lsinitramfs says $want; doctor present:$present missing:$missing"; fail=1
  fi
done
[ "$(get initramfs.segments)" = 3 ] || { echo "FAIL: expected 3 segments, got $(get initramfs.segments)"; fail=1; }
# A damaged image (the compressed tail cut short) is an error fact, and the doctor exits normally.
head -c $(( $(stat -c %s "$img") - 40 )) "$img" >"$img.cut" && mv "$img.cut" "$img"
json=$("$bin" facts --root "$root" --format json --no-runtime); code=$?
st=$(printf '%s' "$json" | python3 -c "import json,sys; print(json.load(sys.stdin)['facts']['initramfs.firmware_failed_missing']['status'])")
if [ "$code" = 0 ] && [ "$st" = error ]; then echo "ok truncated image: error fact"; else echo "FAIL truncated image: exit $code, status $st"; fail=1; fi
exit $fail

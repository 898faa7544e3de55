#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The initramfs probe (checks/boot/initramfs.cpp) against real tools: an image made the way
# initramfs-tools makes one since 0.141 (uncompressed cpio segments first, the firmware in one of
# them, then a zstd-compressed main cpio), with the real `cpio -H newc` and `zstd`, and the
# doctor's answer for each firmware file the kernel log names compared with the real
# `lsinitramfs` listing of the same image. The main archive is compressed, in turn, by each
# compressor the kernel unpacks an initramfs from and the doctor reads (usr/Kconfig RD_ZSTD,
# RD_GZIP, RD_XZ, RD_LZMA, RD_LZ4 in the legacy frame the kernel wants, RD_BZIP2; issue 46: the
# libarchive filters are named one by one, so a filter left out fails here). Skipped (77) without
# cpio, zstd or lsinitramfs; a compressor that is not installed is skipped with a note.
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
# get KEY: the fact's value from $json (a list joined by spaces).
get() { printf '%s' "$json" | /usr/bin/python3 -c "import json,sys; f=json.load(sys.stdin)['facts'].get('$1',{}); print(' '.join(f.get('value',[])) if isinstance(f.get('value'),list) else f.get('value',''))"; }
img=$root/boot/initrd.img-$rel
# The compressors (the command that compresses stdin to stdout), zstd last: the damaged-image
# check below cuts its image.
compressors=("gzip -9 -n" "bzip2 -9" "xz --check=crc32" "xz --format=lzma" "lz4 -l -q" "zstd -q -19")
for comp in "${compressors[@]}"; do
  if ! command -v "${comp%% *}" >/dev/null; then
    echo "skip ${comp%% *}: not installed"
    continue
  fi
  { mk "$work/s1"; mk "$work/s2"; mk "$work/s3" | $comp; } >"$img"
  listing=$(lsinitramfs "$img") || { echo "FAIL: lsinitramfs exited $? on the $comp image"; fail=1; continue; }
  json=$("$bin" facts --root "$root" --format json --no-runtime) || { echo "FAIL: facts"; exit 1; }
  present=" $(get initramfs.firmware_failed_present) "
  missing=" $(get initramfs.firmware_failed_missing) "
  echo "$comp: doctor: present:$present missing:$missing segments: $(get initramfs.segments)"
  for f in gc_11_5_1_mes_2.bin gc_11_5_1_pfp.bin psp_14_0_1_toc.bin vcn_4_0_6.bin; do
    if printf '%s\n' "$listing" | grep -Eq "(^|/)lib/firmware/(updates/)?amdgpu/$f(\.xz|\.zst)?$"; then
      want=present
    else
      want=missing
    fi
    if [ "$want" = present ] && [[ "$present" == *" amdgpu/$f "* ]] && [[ "$missing" != *" amdgpu/$f "* ]]; then
      echo "ok $comp $f: in the image, as lsinitramfs lists it"
    elif [ "$want" = missing ] && [[ "$missing" == *" amdgpu/$f "* ]] && [[ "$present" != *" amdgpu/$f "* ]]; then
      echo "ok $comp $f: not in the image, as lsinitramfs lists it"
    else
      echo "FAIL $comp $f: lsinitramfs says $want; doctor present:$present missing:$missing"; fail=1
    fi
  done
  [ "$(get initramfs.segments)" = 3 ] || { echo "FAIL $comp: expected 3 segments, got $(get initramfs.segments)"; fail=1; }
done
# A damaged image (the compressed tail cut short) is an error fact, and the doctor exits normally.
head -c $(( $(stat -c %s "$img") - 40 )) "$img" >"$img.cut" && mv "$img.cut" "$img"
json=$("$bin" facts --root "$root" --format json --no-runtime); code=$?
st=$(printf '%s' "$json" | python3 -c "import json,sys; print(json.load(sys.stdin)['facts']['initramfs.firmware_failed_missing']['status'])")
if [ "$code" = 0 ] && [ "$st" = error ]; then echo "ok truncated image: error fact"; else echo "FAIL truncated image: exit $code, status $st"; fail=1; fi
exit $fail

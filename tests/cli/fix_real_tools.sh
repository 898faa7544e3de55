#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# `halo-doctor fix` scripts run against Debian 12's real boot tools, in a throwaway Debian root:
# GRUB 2.06's update-grub and grub-mkconfig (grub2-common, grub-common), initramfs-tools'
# update-initramfs, dracut, systemd's kernel-install and kmod's modprobe. grubby, kernelstub and
# rpm-ostree are not in Debian: tests/cli/fix.sh runs those stacks against recorded doubles of their
# documented behaviour (tests/fix/doubles/double.sh).
#
# For each stack: a fresh machine; a tool that fails once, then a rerun that finishes the job; a
# rerun that changes nothing; a wrong value already present; and nothing outside the root touched.
# The scripts run as users run them (as root), with HALO_FIX_ROOT pointing at the Debian root so
# their boot tools run inside it (chroot), in a private mount namespace that has /proc, /sys and
# /dev mounted inside the root (grub-probe and update-initramfs read them).
#
# The root (mmdebstrap bookworm, ~250 MB) is cached as a tarball in $HALO_TOOLROOT_CACHE (default
# /var/cache/halo-doctor); building it needs Debian's mirror and takes minutes. Skips (exit 77)
# with the reason when not root, without unshare or mmdebstrap, or when the root cannot be built.
# Usage: fix_real_tools.sh HALO-DOCTOR TESTS-DIR
set -u
bin=$(realpath "$1")
tests=$(realpath "$2")
fixtures=$tests/fixtures
fail=0
skip() {
  echo "SKIP: $*"
  exit 77
}
bad() {
  echo "FAIL $*"
  fail=1
}
ok() { echo "ok $*"; }

[ "$(id -u)" -eq 0 ] || skip "needs root (chroot, mount namespaces)"
command -v unshare >/dev/null || skip "unshare (util-linux) is not installed"
unshare --mount true 2>/dev/null || skip "unshare --mount is not permitted here"

KVER=6.17.0-19-generic
cache=${HALO_TOOLROOT_CACHE:-/var/cache/halo-doctor}
tarball=$cache/toolroot-bookworm-v1.tar
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# --- the Debian root with the real tools (built once, cached) ---------------------------------
if [ ! -s "$tarball" ]; then
  command -v mmdebstrap >/dev/null || skip "mmdebstrap is not installed (apt-get install mmdebstrap)"
  mkdir -p "$cache"
  base=$work/base
  echo "building the tool root with mmdebstrap (cached in $tarball)"
  if ! timeout 1200 mmdebstrap --variant=apt --include=grub-common,grub2-common,initramfs-tools,dracut-core,kmod,systemd,udev,cpio \
    bookworm "$base" >"$work/mmdebstrap.log" 2>&1; then
    tail -5 "$work/mmdebstrap.log"
    skip "mmdebstrap could not build a bookworm root (no mirror reachable?)"
  fi
  # A kernel the tools can work with: an image, its config (mkinitramfs checks CONFIG_RD_*), an
  # empty module tree with depmod's indexes, and a first initramfs (update-initramfs -u needs one).
  : >"$base/boot/vmlinuz-$KVER"
  printf 'CONFIG_RD_GZIP=y\nCONFIG_RD_ZSTD=y\n' >"$base/boot/config-$KVER"
  mkdir -p "$base/lib/modules/$KVER" "$base/boot/grub"
  : >"$base/lib/modules/$KVER/modules.order"
  : >"$base/lib/modules/$KVER/modules.builtin"
  chroot "$base" depmod "$KVER" 2>/dev/null
  unshare --mount --fork bash -c "mount -t proc proc '$base/proc' && mount --bind /sys '$base/sys' &&
    mount --bind /dev '$base/dev' && chroot '$base' update-initramfs -c -k '$KVER'" >"$work/initrd.log" 2>&1 ||
    {
      tail -5 "$work/initrd.log"
      skip "update-initramfs could not build the first initramfs in the tool root"
    }
  tar -C "$base" -cf "$tarball.tmp" . && mv -f "$tarball.tmp" "$tarball"
  rm -rf "$base"
fi

# fresh_root NAME: a new copy of the tool root, with the default GRUB settings of Ubuntu 24.04.
fresh_root() {
  local r=$work/$1
  rm -rf "$r"
  mkdir -p "$r"
  tar -C "$r" -xf "$tarball"
  printf 'GRUB_DEFAULT=0\nGRUB_TIMEOUT=5\nGRUB_CMDLINE_LINUX_DEFAULT="quiet splash"\nGRUB_CMDLINE_LINUX=""\n' \
    >"$r/etc/default/grub"
  printf '%s\n' "$r"
}

# in_ns ROOT COMMAND...: runs COMMAND in a private mount namespace with ROOT's /proc, /sys, /dev.
in_ns() {
  local r=$1
  shift
  # shellcheck disable=SC2016 # expanded by the inner bash
  unshare --mount --fork bash -c 'r=$1; shift; mount -t proc proc "$r/proc" && mount --bind /sys "$r/sys" &&
    mount --bind /dev "$r/dev" && exec "$@"' bash "$r" "$@"
}

# run_fix ROOT SCRIPT LOG: runs the generated script on ROOT as root; its exit code. The scripts
# are written from the fixtures (their MemTotal), and ROOT's /proc is this machine's: another
# machine to the script, so --force-other-machine (tests/cli/fix.sh checks the refusal).
run_fix() {
  in_ns "$1" env HALO_FIX_ROOT="$1" bash "$2" --force-other-machine >"$3" 2>&1
}

# host_state: what the tests must never change on this machine.
host_state() {
  { find /etc/default /etc/modprobe.d /etc/kernel /boot -xdev -maxdepth 3 -printf '%p %s %T@\n' 2>/dev/null || true; } | sort
}

# snapshot ROOT: the files a rerun must not change.
snapshot() { (cd "$1" && find etc boot -type f -printf '%p %s %T@\n' | sort); }

# grub_cfg_ok ROOT CFG: every linux line has each wanted argument exactly once and no other value.
P=31719424
grub_cfg_ok() {
  local cfg=$1$2 n=0 line
  [ -f "$cfg" ] || return 1
  while IFS= read -r line; do
    n=$((n + 1))
    [ "$(grep -o 'ttm\.pages_limit=[^ ]*' <<<"$line")" = "ttm.pages_limit=$P" ] || return 1
    [ "$(grep -o 'ttm\.page_pool_size=[^ ]*' <<<"$line")" = "ttm.page_pool_size=$P" ] || return 1
  done < <(grep -E '^[[:space:]]*linux[[:space:]]' "$cfg")
  [ "$n" -gt 0 ]
}

# initramfs_ok ROOT: the initramfs carries the modprobe.d file with the wanted options, as
# initramfs-tools' own lsinitramfs/unmkinitramfs read it, and kmod reads the same options.
initramfs_ok() {
  local r=$1 x=$work/unpacked img=${2:-/boot/initrd.img-$KVER}
  rm -rf "$x"
  chroot "$r" lsinitramfs "$img" | grep -qx 'etc/modprobe.d/halo-doctor-ttm.conf' || return 1
  mkdir -p "$x" && chroot "$r" unmkinitramfs "$img" /tmp/unpacked >/dev/null 2>&1 || return 1
  grep -qx "options ttm page_pool_size=$P pages_limit=$P" "$r/tmp/unpacked/etc/modprobe.d/halo-doctor-ttm.conf" ||
    grep -qx "options ttm page_pool_size=$P pages_limit=$P" "$r/tmp/unpacked/main/etc/modprobe.d/halo-doctor-ttm.conf" ||
    return 1
  rm -rf "$r/tmp/unpacked"
  chroot "$r" modprobe -c | grep -qx "options ttm page_pool_size=$P pages_limit=$P"
}

host_before=$(host_state)

# The scripts: generated from the fixture machines as users generate them.
"$bin" fix --root "$fixtures/stack-grub-debian" --no-runtime -o "$work/grub-debian.sh" 2>/dev/null || bad "fix grub-debian"
"$bin" fix --root "$fixtures/stack-grub-debian" --no-runtime --stack grub-arch -o "$work/grub-plain.sh" 2>/dev/null ||
  bad "fix grub-arch"

# --- grub-debian: update-grub + update-initramfs -----------------------------------------------
# Beside the kernel's image, files in /boot that no builder writes and no entry loads (issue 37):
# DKMS's .old-dkms copy, Fedora's rescue image, an image of a kernel no longer in /lib/modules.
# They stay old, and must not make every run rebuild.
r=$(fresh_root gd)
touch -d 2020-01-01 "$r/boot/initrd.img-$KVER.old-dkms" "$r/boot/initramfs-0-rescue-0b9a7c1e5d2f4b8e9f613c2d4e5f6a7b.img" \
  "$r/boot/initrd.img-6.1.0-9-amd64"
run_fix "$r" "$work/grub-debian.sh" "$work/gd1.log" || bad "grub-debian: first run exited $?: $(tail -3 "$work/gd1.log")"
grub_cfg_ok "$r" /boot/grub/grub.cfg || bad "grub-debian: grub.cfg entries: $(grep -E '^\s*linux\s' "$r/boot/grub/grub.cfg" | head -2)"
initramfs_ok "$r" || bad "grub-debian: the initramfs does not carry the modprobe.d options"
before=$(snapshot "$r")
run_fix "$r" "$work/grub-debian.sh" "$work/gd2.log" || bad "grub-debian: rerun exited $?"
grep -q 'nothing to change' "$work/gd2.log" || bad "grub-debian: rerun did something: $(grep '^+' "$work/gd2.log" | head -3)"
[ "$before" = "$(snapshot "$r")" ] || bad "grub-debian: rerun changed files"
grep -q "every initramfs image is newer than .*: /boot/initrd.img-$KVER\$" "$work/gd2.log" ||
  bad "grub-debian: the rerun judged other images: $(grep initramfs "$work/gd2.log")"
ok "grub-debian with the real update-grub and update-initramfs: fresh run, no-op rerun (old .old-dkms, rescue and removed-kernel images left alone)"

# A tool that fails once: update-grub wrapped to fail on its first call (the real one after).
r=$(fresh_root gdf)
mv "$r/usr/sbin/update-grub" "$r/usr/sbin/update-grub.real"
printf '#!/bin/sh\nif [ -e /fail-once ]; then rm -f /fail-once; echo "update-grub: simulated failure" >&2; exit 1; fi\nexec /usr/sbin/update-grub.real "$@"\n' \
  >"$r/usr/sbin/update-grub"
chmod 0755 "$r/usr/sbin/update-grub"
touch "$r/fail-once"
if run_fix "$r" "$work/grub-debian.sh" "$work/gdf1.log"; then bad "grub-debian: the run where update-grub failed exited 0"; fi
grub_cfg_ok "$r" /boot/grub/grub.cfg && bad "grub-debian: grub.cfg has the arguments although update-grub failed"
run_fix "$r" "$work/grub-debian.sh" "$work/gdf2.log" || bad "grub-debian: the rerun after the failure exited $?"
grub_cfg_ok "$r" /boot/grub/grub.cfg || bad "grub-debian: the rerun after the failure did not regenerate grub.cfg"
initramfs_ok "$r" || bad "grub-debian: after the failure and rerun, the initramfs lacks the options"
ok "grub-debian: update-grub failed once, the rerun finished the job"

# A wrong value already present (the seed's first attempt) and a glob-like argument.
r=$(fresh_root gdw)
printf 'GRUB_DEFAULT=0\nGRUB_CMDLINE_LINUX_DEFAULT="quiet splash ttm.pages_limit=4096 foo=*"\nGRUB_CMDLINE_LINUX="ttm.page_pool_size=1"\n' \
  >"$r/etc/default/grub"
touch "$r/boot/foo=bar"
run_fix "$r" "$work/grub-debian.sh" "$work/gdw.log" || bad "grub-debian wrong value: exited $?: $(tail -3 "$work/gdw.log")"
grub_cfg_ok "$r" /boot/grub/grub.cfg || bad "grub-debian wrong value: $(grep -E '^\s*linux\s' "$r/boot/grub/grub.cfg" | head -1)"
grep -E '^\s*linux\s' "$r/boot/grub/grub.cfg" | grep -qF 'foo=*' || bad "grub-debian: foo=* lost or expanded"
ok "grub-debian: a wrong value replaced, foo=* kept"

# --- grub-arch flavour (block in /etc/default/grub) with the real grub-mkconfig -----------------
r=$(fresh_root gp)
run_fix "$r" "$work/grub-plain.sh" "$work/gp1.log" || bad "grub-arch: exited $?: $(tail -3 "$work/gp1.log")"
grub_cfg_ok "$r" /boot/grub/grub.cfg || bad "grub-arch: grub.cfg entries"
grep -q '^# BEGIN halo-doctor' "$r/etc/default/grub" || bad "grub-arch: no block in /etc/default/grub"
run_fix "$r" "$work/grub-plain.sh" "$work/gp2.log" || bad "grub-arch: rerun exited $?"
grep -q 'nothing to change' "$work/gp2.log" || bad "grub-arch: rerun did something"
[ "$(grep -c '^# BEGIN halo-doctor' "$r/etc/default/grub")" = 1 ] || bad "grub-arch: the block is there twice"
ok "grub-arch (plain GRUB) with the real grub-mkconfig: fresh run, no-op rerun"

# --- systemd-boot: entries and /etc/kernel/cmdline, then the real kernel-install -----------------
# Script from the EndeavourOS fixture but rebuilding the initramfs with dracut (real, in the root).
r=$(fresh_root sb)
"$bin" fix --root "$fixtures/stack-systemd-boot" --no-runtime -o "$work/sb.sh" 2>/dev/null || bad "fix systemd-boot"
mkdir -p "$r/boot/loader/entries" "$r/etc/kernel"
printf 'layout=bls\n' >"$r/etc/kernel/install.conf"
printf '0b9a7c1e5d2f4b8e9f613c2d4e5f6a7b\n' >"$r/etc/machine-id"
printf 'root=UUID=0b9a7c1e-5d2f-4b8e-9f61-3c2d4e5f6a7b ro quiet\n' >"$r/etc/kernel/cmdline"
printf 'title Hand-written\nlinux /vmlinuz\ninitrd /initrd.img-%s\noptions root=/dev/sda2 ro ttm.pages_limit=1\n' "$KVER" \
  >"$r/boot/loader/entries/manual.conf"
run_fix "$r" "$work/sb.sh" "$work/sb1.log" || bad "systemd-boot: exited $?: $(tail -3 "$work/sb1.log")"
# Debian's dracut writes /boot/initrd.img-VERSION (no /boot/MACHINE-ID yet), the image the entry
# loads. (Its contents are not checked: Debian's dracut builds without hostonly, and dracut's
# 90kernel-modules copies /etc/modprobe.d only with hostonly; the arguments reach ttm through the
# kernel command line, which kmod reads in the initramfs too.)
[ "$r/boot/initrd.img-$KVER" -nt "$r/etc/modprobe.d/halo-doctor-ttm.conf" ] ||
  bad "systemd-boot: dracut did not rewrite the image the entry loads"
grep -qx "options root=/dev/sda2 ro ttm.pages_limit=$P ttm.page_pool_size=$P" "$r/boot/loader/entries/manual.conf" ||
  bad "systemd-boot: hand-written entry: $(grep options "$r/boot/loader/entries/manual.conf")"
# A kernel installed after the fix gets the arguments from /etc/kernel/cmdline (kernel-install(8)).
in_ns "$r" chroot "$r" kernel-install add "$KVER" "/boot/vmlinuz-$KVER" >"$work/ki.log" 2>&1 ||
  bad "systemd-boot: kernel-install add failed: $(tail -3 "$work/ki.log")"
entry=$(grep -l "$KVER" "$r"/boot/loader/entries/*.conf "$r"/boot/efi/loader/entries/*.conf 2>/dev/null | head -1)
if [ -n "$entry" ] && grep -q "^options.*ttm.pages_limit=$P" "$entry"; then
  ok "systemd-boot: kernel-install wrote the next kernel's entry with the arguments"
else
  bad "systemd-boot: kernel-install's entry lacks the arguments: $(cat "$entry" 2>/dev/null)"
fi
before=$(snapshot "$r")
run_fix "$r" "$work/sb.sh" "$work/sb2.log" || bad "systemd-boot: rerun exited $?"
grep -q 'nothing to change' "$work/sb2.log" || bad "systemd-boot: rerun did something: $(grep '^+' "$work/sb2.log" | head -3)"
ok "systemd-boot with the real kernel-install and dracut: entries, next kernel, no-op rerun"

# --- kernel-install's copy of the initrd ($BOOT/MACHINE-ID/VERSION/, issue 37) -------------------
# kernel-install add VERSION KERNEL INITRD (systemd 252, layout=bls; 90-loaderentry.install)
# copies INITRD into /boot/MACHINE-ID/VERSION/ under its own base name and the entry loads that
# copy. Neither builder rewrites it: dracut.sh's default output is /boot/MACHINE-ID/VERSION/initrd
# once that directory exists (another file), update-initramfs writes /boot/initrd.img-VERSION.
# The script must stop naming the entry and its copy; after the person runs kernel-install add
# again with the rebuilt image, the rerun finishes and the next changes nothing.
ki_root() { # NAME: a fresh root with a kernel-install entry whose initrd is a copy
  local r
  r=$(fresh_root "${1// /-}")
  mkdir -p "$r/boot/loader/entries" "$r/etc/kernel" "$r/boot/0b9a7c1e5d2f4b8e9f613c2d4e5f6a7b"
  printf 'layout=bls\n' >"$r/etc/kernel/install.conf"
  printf '0b9a7c1e5d2f4b8e9f613c2d4e5f6a7b\n' >"$r/etc/machine-id"
  printf 'root=UUID=0b9a7c1e-5d2f-4b8e-9f61-3c2d4e5f6a7b ro quiet\n' >"$r/etc/kernel/cmdline"
  in_ns "$r" chroot "$r" kernel-install add "$KVER" "/boot/vmlinuz-$KVER" "/boot/initrd.img-$KVER" >"$work/$1-ki.log" 2>&1 ||
    bad "$1: kernel-install add failed: $(tail -3 "$work/$1-ki.log")"
  [ ! -f "$r$copy" ] || touch -d 2020-01-01 "$r$copy"
  printf '%s\n' "$r"
}
mid=0b9a7c1e5d2f4b8e9f613c2d4e5f6a7b
copy=/boot/$mid/$KVER/initrd.img-$KVER
entry_conf=/boot/loader/entries/$mid-$KVER.conf
# ki_case NAME SCRIPT BUILT: the stop, the person's kernel-install add of BUILT, the rerun, a no-op.
ki_case() {
  local name=$1 script=$2 built=$3 r
  r=$(ki_root "$name")
  if [ ! -f "$r$copy" ] || ! grep -qs "^initrd.*/$mid/$KVER/initrd.img-$KVER" "$r$entry_conf"; then
    bad "$name: kernel-install did not copy the initrd to $copy: $(tail -3 "$work/$name-ki.log")"
    return
  fi
  if run_fix "$r" "$script" "$work/${name}1.log"; then
    bad "$name: exited 0 with the entry's copy older than the modprobe.d file"
  fi
  grep -qF "$copy (entry $entry_conf loads it)" "$work/${name}1.log" ||
    bad "$name: the stop does not name the entry and its copy: $(tail -4 "$work/${name}1.log")"
  if sed -n '/still older/,$p' "$work/${name}1.log" | grep -qF "$built ("; then
    bad "$name: the builder's own image $built is still reported stale"
  fi
  [ "$r$built" -nt "$r/etc/modprobe.d/halo-doctor-ttm.conf" ] || bad "$name: the builder did not write $built"
  # (From a copy: kernel-install refuses to copy a file onto itself, as dracut's output is.)
  mkdir -p "$r/tmp/ki" && cp -p "$r$built" "$r/tmp/ki/${built##*/}"
  in_ns "$r" chroot "$r" kernel-install add "$KVER" "/boot/vmlinuz-$KVER" "/tmp/ki/${built##*/}" >"$work/$name-ki2.log" 2>&1 ||
    bad "$name: kernel-install add $built failed: $(tail -3 "$work/$name-ki2.log")"
  rm -rf "$r/tmp/ki"
  run_fix "$r" "$script" "$work/${name}2.log" || bad "$name: the rerun after kernel-install exited $?: $(tail -3 "$work/${name}2.log")"
  before=$(snapshot "$r")
  run_fix "$r" "$script" "$work/${name}3.log" || bad "$name: third run exited $?"
  grep -q 'nothing to change' "$work/${name}3.log" || bad "$name: third run did something: $(grep '^+' "$work/${name}3.log" | head -3)"
  [ "$before" = "$(snapshot "$r")" ] || bad "$name: third run changed files"
  ok "$name: stops naming kernel-install's copy, finishes after kernel-install add, then changes nothing"
}
ki_case "kernel-install + real dracut" "$work/sb.sh" "/boot/$mid/$KVER/initrd"
# The same layout built by update-initramfs (Debian or Ubuntu with systemd-boot).
cp -a "$fixtures/stack-systemd-boot" "$work/sbu-fixture"
rm -f "$work/sbu-fixture/usr/bin/dracut"
mkdir -p "$work/sbu-fixture/usr/sbin"
install -m 0755 /dev/null "$work/sbu-fixture/usr/sbin/update-initramfs"
"$bin" fix --root "$work/sbu-fixture" --no-runtime -o "$work/sbu.sh" 2>/dev/null || bad "fix systemd-boot with update-initramfs"
grep -qF "INITRAMFS_CMD=( 'update-initramfs' '-u' '-k' 'all' )" "$work/sbu.sh" || bad "the systemd-boot script does not use update-initramfs"
ki_case "kernel-install + real update-initramfs" "$work/sbu.sh" "/boot/initrd.img-$KVER"

# --- nothing outside the roots was touched ------------------------------------------------------
[ "$host_before" = "$(host_state)" ] || bad "the host's /etc/default, /etc/modprobe.d, /etc/kernel or /boot changed"
ok "nothing outside the test roots changed"
exit $fail

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

# run_fix ROOT SCRIPT LOG: runs the generated script on ROOT as root; its exit code.
run_fix() {
  in_ns "$1" env HALO_FIX_ROOT="$1" bash "$2" >"$3" 2>&1
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
  local r=$1 x=$work/unpacked
  rm -rf "$x"
  chroot "$r" lsinitramfs "/boot/initrd.img-$KVER" | grep -qx 'etc/modprobe.d/halo-doctor-ttm.conf' || return 1
  mkdir -p "$x" && chroot "$r" unmkinitramfs "/boot/initrd.img-$KVER" /tmp/unpacked >/dev/null 2>&1 || return 1
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
r=$(fresh_root gd)
run_fix "$r" "$work/grub-debian.sh" "$work/gd1.log" || bad "grub-debian: first run exited $?: $(tail -3 "$work/gd1.log")"
grub_cfg_ok "$r" /boot/grub/grub.cfg || bad "grub-debian: grub.cfg entries: $(grep -E '^\s*linux\s' "$r/boot/grub/grub.cfg" | head -2)"
initramfs_ok "$r" || bad "grub-debian: the initramfs does not carry the modprobe.d options"
before=$(snapshot "$r")
run_fix "$r" "$work/grub-debian.sh" "$work/gd2.log" || bad "grub-debian: rerun exited $?"
grep -q 'nothing to change' "$work/gd2.log" || bad "grub-debian: rerun did something: $(grep '^+' "$work/gd2.log" | head -3)"
[ "$before" = "$(snapshot "$r")" ] || bad "grub-debian: rerun changed files"
ok "grub-debian with the real update-grub and update-initramfs: fresh run, no-op rerun"

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
printf 'title Hand-written\nlinux /vmlinuz\noptions root=/dev/sda2 ro ttm.pages_limit=1\n' >"$r/boot/loader/entries/manual.conf"
run_fix "$r" "$work/sb.sh" "$work/sb1.log" || bad "systemd-boot: exited $?: $(tail -3 "$work/sb1.log")"
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

# --- nothing outside the roots was touched ------------------------------------------------------
[ "$host_before" = "$(host_state)" ] || bad "the host's /etc/default, /etc/modprobe.d, /etc/kernel or /boot changed"
ok "nothing outside the test roots changed"
exit $fail

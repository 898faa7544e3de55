#!/usr/bin/env bash
# halo-doctor fix for strix-halo (Fedora Linux 42 (Workstation Edition))
# Written by halo-doctor <version> from the failing rules' fixes. Read it before you run it.
# Boot stack: grubby
#   evidence: grubby is installed (/usr/bin/grubby)
#   evidence: grub2-mkconfig is installed (/usr/sbin/grub2-mkconfig)
#   evidence: bootctl is installed (/usr/bin/bootctl)
#   evidence: kernel-install is installed (/usr/bin/kernel-install)
#   evidence: dracut is installed (/usr/bin/dracut)
#   evidence: /etc/os-release: ID=fedora VARIANT_ID=workstation
#   evidence: /etc/default/grub sets GRUB_ENABLE_BLSCFG=true
#   evidence: 1 loader entries (/boot/loader/entries/0b9a7c1e-6.17.4-200.fc42.x86_64.conf)
#
# Usage: sudo bash THIS-SCRIPT [--dry-run]
#   --dry-run  print every command and file it would write, change nothing (no root needed)
# Running it twice is safe: the second run changes nothing. Files are backed up to
# FILE.halo-doctor.bak before their first edit. Afterwards: reboot, then halo-doctor check.
# HALO_FIX_ROOT=DIR puts every path this script reads or writes, in files and in command
# arguments, under DIR (default: the live system); HALO_FIX_ALLOW_NON_ROOT=1 (test-only)
# lets it run without root when HALO_FIX_ROOT is set.
#
# Rules covered: ttm-limit-low
# Note: --ttm-limit 100 GiB: pages_limit and page_pool_size set to 26214400 pages (100 x 262144)
# Not done by this script (needs a person):
#   [gfx1151-kernel-min] install kernel 6.18.4 or later (Fedora 43, Ubuntu 26.04, Arch 2026.02.01 and later ship it), or on Ubuntu 24.04 the HWE kernel 6.17.0-19 or the OEM kernel 6.14.0-1018 or later
#   [gfx1151-kernel-min] reboot into it
set -euo pipefail

ROOT=${HALO_FIX_ROOT:-}
DRY_RUN=0
for arg in "$@"; do
  case $arg in
    --dry-run) DRY_RUN=1 ;;
    -h | --help)
      sed -n '2,/^set -euo pipefail$/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'
      exit 0
      ;;
    *)
      echo "halo-doctor fix: unknown argument '$arg' (use --dry-run or --help)" >&2
      exit 2
      ;;
  esac
done

if [ "$DRY_RUN" -eq 0 ] && [ "$(id -u)" -ne 0 ]; then
  if [ -z "$ROOT" ] || [ "${HALO_FIX_ALLOW_NON_ROOT:-0}" != 1 ]; then
    echo "halo-doctor fix: run this as root (sudo bash $0), or look first with --dry-run" >&2
    exit 1
  fi
fi

CHANGED=0
WROTE=0
FILES_CHANGED=0

say() { printf '%s\n' "$*"; }

# run COMMAND ARGS...: prints the command, and runs it unless --dry-run.
run() {
  printf '+'
  printf ' %q' "$@"
  printf '\n'
  if [ "$DRY_RUN" -eq 0 ]; then "$@"; fi
}

# backup FILE: copies FILE to FILE.halo-doctor.bak before its first edit (the original is kept).
backup() {
  if [ -e "$1" ] && [ ! -e "$1.halo-doctor.bak" ]; then run cp -p -- "$1" "$1.halo-doctor.bak"; fi
}

# put_file FILE CONTENT: makes FILE hold CONTENT and a final newline. Leaves it alone when it
# already does; sets WROTE=1 when it changed (or, with --dry-run, would change) the file.
put_file() {
  local file=$1 content=$2
  WROTE=0
  if [ -f "$file" ] && [ "$(cat -- "$file")" = "$content" ]; then
    say "unchanged: $file"
    return 0
  fi
  WROTE=1
  CHANGED=1
  FILES_CHANGED=$((FILES_CHANGED + WROTE))
  if [ "$DRY_RUN" -eq 1 ]; then
    say "would write $file:"
    printf '%s\n' "$content" | sed 's/^/    /'
    return 0
  fi
  mkdir -p -- "$(dirname -- "$file")"
  backup "$file"
  printf '%s\n' "$content" >"$file.halo-doctor.tmp"
  mv -f -- "$file.halo-doctor.tmp" "$file"
  say "wrote $file"
}

# has_token LINE TOKEN: the space-separated arguments in LINE include TOKEN exactly.
has_token() {
  local -a words
  local w
  read -r -a words <<<"$1"
  for w in "${words[@]}"; do [ "$w" = "$2" ] && return 0; done
  return 1
}

# tokens_of LINE KEY: prints the arguments in LINE named KEY (KEY or KEY=VALUE), one a line.
tokens_of() {
  local -a words
  local w
  read -r -a words <<<"$1"
  for w in "${words[@]}"; do
    case $w in "$2" | "$2"=*) printf '%s\n' "$w" ;; esac
  done
}

# ---------------------------------------------------------------------------
# Step 1: TTM options in /etc/modprobe.d
# Rules: ttm-limit-low
# modprobe reads /etc/modprobe.d when TTM and amdgpu load; both load from the initramfs,
# so the initramfs is rebuilt in the next step.
say '== step 1: TTM options in /etc/modprobe.d'
MODPROBE_WROTE=0
put_file "${ROOT}/etc/modprobe.d/halo-doctor-ttm.conf" '# Written by halo-doctor fix (rules: ttm-limit-low).
# Pages are 4 KiB: GiB x 262144.
options ttm page_pool_size=26214400 pages_limit=26214400'
MODPROBE_WROTE=$((MODPROBE_WROTE + WROTE))

# ---------------------------------------------------------------------------
# Step 2: kernel command line
# Rules: ttm-limit-low
# Set: ttm.page_pool_size=26214400 ttm.pages_limit=26214400
# Through grubby; arguments not named here are left as they are.
say '== step 2: kernel command line'
KARGS_SET=( 'ttm.page_pool_size=26214400' 'ttm.pages_limit=26214400' )
KARGS_REMOVE=( )
# grubby --info=ALL prints one args="..." line per installed kernel.
CURRENT=$(grubby --info=ALL | sed -n 's/^args="\(.*\)"$/\1/p')
for kv in "${KARGS_SET[@]}"; do
  need=0
  [ -n "$CURRENT" ] || need=1
  while IFS= read -r line; do
    [ -z "$line" ] || has_token "$line" "$kv" || need=1
  done <<<"$CURRENT"
  if [ "$need" -eq 1 ]; then
    run grubby --update-kernel=ALL --args="$kv"
    CHANGED=1
  else
    say "already set on every kernel: $kv"
  fi
done
for key in "${KARGS_REMOVE[@]}"; do
  if [ -n "$(tokens_of "$(tr '\n' ' ' <<<"$CURRENT")" "$key")" ]; then
    run grubby --update-kernel=ALL --remove-args="$key"
    CHANGED=1
  else
    say "not on the command line: $key"
  fi
done

# ---------------------------------------------------------------------------
# Step 3: rebuild the initramfs
# Rules: ttm-limit-low
# The initramfs carries its own copy of /etc/modprobe.d; it is rebuilt only when the
# modprobe.d file changed in this run.
say '== step 3: rebuild the initramfs'
if [ "${MODPROBE_WROTE:-0}" -gt 0 ]; then
  run dracut --regenerate-all --force
  CHANGED=1
else
  say "modprobe.d unchanged: the initramfs is not rebuilt"
fi

# ---------------------------------------------------------------------------
# Done: what is left to do.
say 'needs a person [gfx1151-kernel-min]: install kernel 6.18.4 or later (Fedora 43, Ubuntu 26.04, Arch 2026.02.01 and later ship it), or on Ubuntu 24.04 the HWE kernel 6.17.0-19 or the OEM kernel 6.14.0-1018 or later'
say 'needs a person [gfx1151-kernel-min]: reboot into it'
if [ "$DRY_RUN" -eq 1 ]; then
  say "dry run: nothing was changed ($FILES_CHANGED file(s) would change)"
elif [ "$CHANGED" -eq 0 ]; then
  say "nothing to change: this machine is already configured as above"
fi
say "next: reboot, then run: halo-doctor check"

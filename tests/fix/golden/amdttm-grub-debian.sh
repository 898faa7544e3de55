#!/usr/bin/env bash
# halo-doctor fix for framework-desktop (Debian GNU/Linux 13 (trixie))
# Written by halo-doctor <version> from the failing rules' fixes. Read it before you run it.
# Boot stack: grub-debian
#   evidence: --stack grub-debian
#
# Usage: sudo bash THIS-SCRIPT [--dry-run]
#   --dry-run  print every command and file it would write, change nothing (no root needed)
# Running it twice is safe: the second run changes nothing. Files are backed up to
# FILE.halo-doctor.bak before their first edit. Afterwards: reboot, then halo-doctor check.
# HALO_FIX_ROOT=DIR puts every path this script reads or writes, in files and in command
# arguments, under DIR (default: the live system); HALO_FIX_ALLOW_NON_ROOT=1 (test-only)
# lets it run without root when HALO_FIX_ROOT is set.
#
# Rules covered: ttm-limit-low, ttm-wrong-module
# Not done by this script (needs a person):
#   [gfx1151-kernel-min] install kernel 6.18.4 or later (Fedora 43, Ubuntu 26.04, Arch 2026.02.01 and later ship it), or on Ubuntu 24.04 the HWE kernel 6.17.0-19 or the OEM kernel 6.14.0-1018 or later
#   [gfx1151-kernel-min] reboot into it
#   [ttm-wrong-module] remove the settings on the unused module: amdttm.pages_limit (kernel command line), amdttm.page_pool_size (kernel command line)
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
# Rules: ttm-limit-low, ttm-wrong-module
# modprobe reads /etc/modprobe.d when TTM and amdgpu load; both load from the initramfs,
# so the initramfs is rebuilt in the next step.
say '== step 1: TTM options in /etc/modprobe.d'
MODPROBE_WROTE=0
put_file "${ROOT}/etc/modprobe.d/halo-doctor-ttm.conf" '# Written by halo-doctor fix (rules: ttm-limit-low, ttm-wrong-module).
# Pages are 4 KiB: GiB x 262144.
options ttm page_pool_size=31457280 pages_limit=31457280'
MODPROBE_WROTE=$((MODPROBE_WROTE + WROTE))

# ---------------------------------------------------------------------------
# Step 2: kernel command line
# Rules: ttm-limit-low, ttm-wrong-module
# Set: ttm.page_pool_size=31457280 ttm.pages_limit=31457280
# Through grub-debian; arguments not named here are left as they are.
say '== step 2: kernel command line'
# Debian's grub-mkconfig sources /etc/default/grub.d/*.cfg after /etc/default/grub, so the
# drop-in below filters the old values out and appends the new ones; later drop-ins win.
GRUB_DROPIN="${ROOT}/etc/default/grub.d/90-halo-doctor.cfg"
GRUB_BLOCK=$(
  cat <<'HALO_EOF'
# BEGIN halo-doctor (written by halo-doctor fix; rules: ttm-limit-low, ttm-wrong-module)
# Drops ttm.page_pool_size, ttm.pages_limit from the command line and appends the values below.
halo_filter() {
  halo_out=
  for halo_a in $1; do
    case $halo_a in
      ttm.page_pool_size | ttm.page_pool_size=* | ttm.pages_limit | ttm.pages_limit=*) ;;
      *) halo_out="$halo_out $halo_a" ;;
    esac
  done
  printf '%s' "${halo_out# }"
}
GRUB_CMDLINE_LINUX="$(halo_filter "${GRUB_CMDLINE_LINUX:-}")"
halo_d="$(halo_filter "${GRUB_CMDLINE_LINUX_DEFAULT:-}")"
GRUB_CMDLINE_LINUX_DEFAULT="${halo_d:+$halo_d }ttm.page_pool_size=31457280 ttm.pages_limit=31457280"
unset -f halo_filter
unset halo_out halo_a halo_d
# END halo-doctor
HALO_EOF
)
put_file "$GRUB_DROPIN" "$GRUB_BLOCK"
if [ "$WROTE" -eq 1 ]; then run update-grub; fi

# ---------------------------------------------------------------------------
# Step 3: rebuild the initramfs
# Rules: ttm-limit-low, ttm-wrong-module
# The initramfs carries its own copy of /etc/modprobe.d; it is rebuilt only when the
# modprobe.d file changed in this run.
say '== step 3: rebuild the initramfs'
if [ "${MODPROBE_WROTE:-0}" -gt 0 ]; then
  run update-initramfs -u -k all
  CHANGED=1
else
  say "modprobe.d unchanged: the initramfs is not rebuilt"
fi

# ---------------------------------------------------------------------------
# Done: what is left to do.
say 'needs a person [gfx1151-kernel-min]: install kernel 6.18.4 or later (Fedora 43, Ubuntu 26.04, Arch 2026.02.01 and later ship it), or on Ubuntu 24.04 the HWE kernel 6.17.0-19 or the OEM kernel 6.14.0-1018 or later'
say 'needs a person [gfx1151-kernel-min]: reboot into it'
say 'needs a person [ttm-wrong-module]: remove the settings on the unused module: amdttm.pages_limit (kernel command line), amdttm.page_pool_size (kernel command line)'
if [ "$DRY_RUN" -eq 1 ]; then
  say "dry run: nothing was changed ($FILES_CHANGED file(s) would change)"
elif [ "$CHANGED" -eq 0 ]; then
  say "nothing to change: this machine is already configured as above"
fi
say "next: reboot, then run: halo-doctor check"

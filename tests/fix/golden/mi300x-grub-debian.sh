#!/usr/bin/env bash
# halo-doctor fix for mi300x-node01 (Ubuntu 22.04.5 LTS)
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
# Rules covered: instinct-numa-balancing, instinct-iommu-pt
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
# Step 1: kernel command line
# Rules: instinct-iommu-pt
# Set: iommu=pt
# Through grub-debian; arguments not named here are left as they are.
say '== step 1: kernel command line'
# Debian's grub-mkconfig sources /etc/default/grub.d/*.cfg after /etc/default/grub, so the
# drop-in below filters the old values out and appends the new ones; later drop-ins win.
GRUB_DROPIN="${ROOT}/etc/default/grub.d/90-halo-doctor.cfg"
GRUB_BLOCK=$(
  cat <<'HALO_EOF'
# BEGIN halo-doctor (written by halo-doctor fix; rules: instinct-iommu-pt)
# Drops iommu from the command line and appends the values below.
halo_filter() {
  halo_out=
  for halo_a in $1; do
    case $halo_a in
      iommu | iommu=*) ;;
      *) halo_out="$halo_out $halo_a" ;;
    esac
  done
  printf '%s' "${halo_out# }"
}
GRUB_CMDLINE_LINUX="$(halo_filter "${GRUB_CMDLINE_LINUX:-}")"
halo_d="$(halo_filter "${GRUB_CMDLINE_LINUX_DEFAULT:-}")"
GRUB_CMDLINE_LINUX_DEFAULT="${halo_d:+$halo_d }iommu=pt"
unset -f halo_filter
unset halo_out halo_a halo_d
# END halo-doctor
HALO_EOF
)
put_file "$GRUB_DROPIN" "$GRUB_BLOCK"
if [ "$WROTE" -eq 1 ]; then run update-grub; fi

# ---------------------------------------------------------------------------
# Step 2: sysctl
# Rules: instinct-numa-balancing
# A drop-in in /etc/sysctl.d keeps the setting across reboots; it is loaded now too.
say '== step 2: sysctl'
SYSCTL_FILE="${ROOT}/etc/sysctl.d/90-halo-doctor.conf"
put_file "$SYSCTL_FILE" '# Written by halo-doctor fix (rules: instinct-numa-balancing).
kernel.numa_balancing = 0'
if [ "$WROTE" -eq 1 ]; then run sysctl -p "$SYSCTL_FILE"; fi

# ---------------------------------------------------------------------------
# Done: what is left to do.
if [ "$DRY_RUN" -eq 1 ]; then
  say "dry run: nothing was changed ($FILES_CHANGED file(s) would change)"
elif [ "$CHANGED" -eq 0 ]; then
  say "nothing to change: this machine is already configured as above"
fi
say "next: reboot, then run: halo-doctor check"

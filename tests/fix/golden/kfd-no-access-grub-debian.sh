#!/usr/bin/env bash
# halo-doctor fix for ai2 (Ubuntu 24.04.3 LTS)
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
# Rules covered: kfd-access, render-node-access
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
# Step 1: access to /dev/kfd and the render nodes
# Rules: kfd-access, render-node-access
# ROCr opens /dev/kfd and /dev/dri/renderD*: they belong to group render (mode 0660);
# the user joins render and video. Group changes apply after logging out and back in.
say '== step 1: access to /dev/kfd and the render nodes'
put_file "${ROOT}/etc/udev/rules.d/70-halo-doctor-gpu.rules" '# Written by halo-doctor fix (rules: kfd-access, render-node-access).
SUBSYSTEM=="kfd", KERNEL=="kfd", GROUP="render", MODE="0660"
SUBSYSTEM=="drm", KERNEL=="renderD*", GROUP="render", MODE="0660"'
if [ "$WROTE" -eq 1 ]; then
  run udevadm control --reload-rules
  run udevadm trigger --subsystem-match=kfd --subsystem-match=drm
fi
FIX_USER='imac'
FIX_GROUPS=( 'render' 'video' )
GROUP_FILE="${ROOT}/etc/group"
ADD=()
for g in "${FIX_GROUPS[@]}"; do
  if ! awk -F: -v g="$g" '$1 == g { f = 1 } END { exit f ? 0 : 1 }' "$GROUP_FILE"; then
    say "warning: group $g does not exist on this system; skipped"
  elif awk -F: -v g="$g" -v u="$FIX_USER" \
    '$1 == g { n = split($4, m, ","); for (i = 1; i <= n; i++) if (m[i] == u) f = 1 } END { exit f ? 0 : 1 }' \
    "$GROUP_FILE"; then
    say "$FIX_USER is already in $g"
  else
    ADD+=("$g")
  fi
done
if [ "${#ADD[@]}" -gt 0 ]; then
  backup "$GROUP_FILE"
  run usermod -aG "$(IFS=,; printf '%s' "${ADD[*]}")" "$FIX_USER"
  CHANGED=1
fi
say "note: $FIX_USER must log out and back in (or reboot) before the new groups apply"

# ---------------------------------------------------------------------------
# Done: what is left to do.
say 'needs a person [gfx1151-kernel-min]: install kernel 6.18.4 or later (Fedora 43, Ubuntu 26.04, Arch 2026.02.01 and later ship it), or on Ubuntu 24.04 the HWE kernel 6.17.0-19 or the OEM kernel 6.14.0-1018 or later'
say 'needs a person [gfx1151-kernel-min]: reboot into it'
if [ "$DRY_RUN" -eq 1 ]; then
  say "dry run: nothing was changed ($FILES_CHANGED file(s) would change)"
elif [ "$CHANGED" -eq 0 ]; then
  say "nothing to change: this machine is already configured as above"
fi
say "next: run: halo-doctor check"

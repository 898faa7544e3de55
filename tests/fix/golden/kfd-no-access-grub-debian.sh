#!/usr/bin/env bash
# halo-doctor fix for ai2 (Ubuntu 24.04.3 LTS), boot stack grub-debian
# Written by halo-doctor <version>. Read this summary; run it with --dry-run first to see each change as a diff.
#
# What it does (a step already done is skipped):
#   1. writes /etc/udev/rules.d/70-halo-doctor-gpu.rules:
#        SUBSYSTEM=="kfd", KERNEL=="kfd", GROUP="render", MODE="0660"
#        SUBSYSTEM=="drm", KERNEL=="renderD*", GROUP="render", MODE="0660"
#      then runs: udevadm control --reload-rules; udevadm trigger --subsystem-match=kfd --subsystem-match=drm
#   2. runs: usermod -aG render,video imac (the groups it lacks; then log out and back in)
#   Then: run halo-doctor check.
# Why: [kfd-access] give the user the render and video groups (and a udev rule for the node's group and mode)
# Why: [render-node-access] give the user the render and video groups
# Not done here (needs a person):
#   [gfx1151-cwsr-hang] add amdgpu.cwsr_enable=0 to the kernel command line and reboot (halo-doctor fix leaves this to you: it is a workaround, and without CWSR the GPU cannot preempt running compute waves)
#   [gfx1151-cwsr-hang] or install a 6.18 or later kernel, where the driver's default handles it
#   [gfx1151-kernel-min] install the amdgpu-dkms of a current ROCm release (its /sys/module/amdgpu/version 6.18.4 or later), or remove amdgpu-dkms (sudo apt remove amdgpu-dkms, or sudo dnf remove amdgpu-dkms) on a kernel that has the fixes (6.18.4 or later; Ubuntu 24.04 HWE 6.17.0-19; OEM 6.14.0-1018)
#   [gfx1151-kernel-min] reboot
# Undo: each file is backed up to FILE.halo-doctor.bak before its first edit; a run prints
#   the commands that undo it (after halo-doctor fix --apply: halo-doctor fix --undo).
# Only for this machine (MemTotal 124 GiB, update-grub installed): elsewhere it stops, unless run with --force-other-machine.
# Usage: sudo bash THIS-SCRIPT [--dry-run] [--force-other-machine]
# Boot stack evidence: --stack grub-debian

# The helpers every step uses (docs/fix.md, "Script contract"). Each step checks the state the
# next boot uses, never what this run did: a rerun after a failed tool finishes the job, and a run
# on a configured machine changes nothing.
set -euo pipefail

ROOT=${HALO_FIX_ROOT:-}
ROOT=${ROOT%/}
DRY_RUN=0
FORCE_OTHER=0
for arg in "$@"; do
  case $arg in
    --dry-run) DRY_RUN=1 ;;
    --force-other-machine) FORCE_OTHER=1 ;;
    -h | --help)
      sed -n '2,/^set -euo pipefail$/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'
      exit 0
      ;;
    *)
      echo "halo-doctor fix: unknown argument '$arg' (use --dry-run, --force-other-machine or --help)" >&2
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
UNDO=()
MISSING=()

say() { printf '%s\n' "$*"; }

# run COMMAND ARGS...: prints the command, and runs it unless --dry-run.
run() {
  printf '+'
  printf ' %q' "$@"
  printf '\n'
  if [ "$DRY_RUN" -eq 0 ]; then "$@"; fi
}

# have TOOL: TOOL is installed on the system being fixed (under HALO_FIX_ROOT when it is set).
have() {
  local d
  for d in /usr/local/sbin /usr/local/bin /usr/sbin /usr/bin /sbin /bin; do
    [ -x "${ROOT}$d/$1" ] && [ ! -d "${ROOT}$d/$1" ] && return 0
  done
  return 1
}

# missing TOOL: records and reports a tool this system lacks; with --dry-run the run goes on and
# shows what it would run, without it the script stops before changing anything more.
missing() {
  case " ${MISSING[*]} " in *" $1 "*) ;; *) MISSING+=("$1") ;; esac
  if [ "$DRY_RUN" -eq 1 ]; then
    echo "note: $1 is not installed on this system; a real run would stop here" >&2
  else
    echo "halo-doctor fix: $1 is not installed on this system (looked in /usr/local/sbin, /usr/local/bin, /usr/sbin, /usr/bin, /sbin, /bin${ROOT:+ under $ROOT}); this script was written for a machine whose boot stack uses it" >&2
    exit 1
  fi
}

# tool TOOL ARGS...: runs a boot tool (unless --dry-run) on the system being fixed; with
# HALO_FIX_ROOT inside that root (chroot(8)), never on the running host.
tool() {
  have "$1" || missing "$1"
  if [ -n "$ROOT" ]; then run chroot "$ROOT" "$@"; else run "$@"; fi
}

# query TOOL ARGS...: a tool call that only reads state (--dry-run runs it too); prints nothing
# when the tool is missing.
query() {
  if ! have "$1"; then
    missing "$1"
    return 0
  fi
  if [ -n "$ROOT" ]; then chroot "$ROOT" "$@"; else "$@"; fi
}

# undo_tool COMMAND...: records a tool call that undoes a change.
undo_tool() { UNDO+=("tool $(printf '%q ' "$@")"); }

# backup FILE: copies FILE to FILE.halo-doctor.bak before its first edit (the original is kept)
# and records how to undo the edit.
backup() {
  if [ -e "$1" ] && [ ! -e "$1.halo-doctor.bak" ]; then
    run cp -p -- "$1" "$1.halo-doctor.bak"
    UNDO+=("mv -f -- $(printf '%q' "$1.halo-doctor.bak") $(printf '%q' "$1")")
  elif [ ! -e "$1" ]; then
    UNDO+=("rm -f -- $(printf '%q' "$1")")
  fi
}

# put_file FILE CONTENT: makes FILE hold CONTENT and a final newline, showing the change as a
# diff; leaves it alone when it already does. WROTE=1 when it changed (or would change) the file.
# shellcheck disable=SC2034 # WROTE is read by the steps after put_file, not in every script.
put_file() {
  local file=$1 content=$2
  WROTE=0
  if [ -f "$file" ] && [ "$(cat -- "$file")" = "$content" ]; then
    say "unchanged: $file"
    return 0
  fi
  if [ -e "$file" ] && [ ! -f "$file" ]; then
    echo "halo-doctor fix: $file exists and is not a regular file; not touched" >&2
    exit 1
  fi
  WROTE=1
  CHANGED=1
  FILES_CHANGED=$((FILES_CHANGED + 1))
  if [ -f "$file" ]; then
    diff -u --label "$file" --label "$file (new)" -- "$file" - <<<"$content" || true
  else
    diff -u --label /dev/null --label "$file (new)" /dev/null - <<<"$content" || true
  fi
  if [ "$DRY_RUN" -eq 1 ]; then
    say "would write $file"
    return 0
  fi
  mkdir -p -- "$(dirname -- "$file")"
  backup "$file"
  printf '%s\n' "$content" >"$file.halo-doctor.tmp"
  mv -f -- "$file.halo-doctor.tmp" "$file"
  say "wrote $file"
}
FOR_MEM_GIB='124'
FOR_MACHINE_TAG=''
FOR_STACK='grub-debian'
FOR_STACK_TOOL='update-grub'
# The machine this script was written for (set before: FOR_MEM_GIB, FOR_MACHINE_TAG, FOR_STACK,
# FOR_STACK_TOOL). The limits were sized from its RAM; on another machine they could exceed its
# RAM, so the script stops there unless --force-other-machine is given.
OTHER=()
if [ -n "$FOR_MEM_GIB" ] && [ -r "${ROOT}/proc/meminfo" ]; then
  mem_kib=$(awk '$1 == "MemTotal:" { print $2; exit }' "${ROOT}/proc/meminfo")
  if [ -n "$mem_kib" ] && [ "$((mem_kib / 1048576))" != "$FOR_MEM_GIB" ]; then
    OTHER+=("MemTotal is $((mem_kib / 1048576)) GiB here, $FOR_MEM_GIB GiB there (the limits were sized from it)")
  fi
fi
if [ -n "$FOR_MACHINE_TAG" ]; then
  tag=""
  if [ -r "${ROOT}/etc/machine-id" ]; then
    tag=$(printf 'halo-doctor fix:%s' "$(head -n 1 "${ROOT}/etc/machine-id")" | sha256sum | cut -c1-16)
  fi
  [ "$tag" = "$FOR_MACHINE_TAG" ] || OTHER+=("/etc/machine-id differs")
fi
if [ -n "$FOR_STACK_TOOL" ] && ! have "$FOR_STACK_TOOL"; then
  OTHER+=("the boot stack was $FOR_STACK, but $FOR_STACK_TOOL is not installed here")
  [ "$DRY_RUN" -eq 1 ] || FORCE_OTHER=0 # no flag makes a missing boot tool work
fi
if [ "${#OTHER[@]}" -gt 0 ]; then
  {
    echo "halo-doctor fix: this script was written for another machine:"
    printf '  %s\n' "${OTHER[@]}"
  } >&2
  if [ "$DRY_RUN" -eq 1 ]; then
    echo "  (dry run: showing what it would do there)" >&2
  elif [ "$FORCE_OTHER" -eq 1 ]; then
    echo "  going on: --force-other-machine" >&2
  else
    echo "  run halo-doctor fix on this machine for its own script, or pass --force-other-machine" >&2
    exit 3
  fi
fi
# live TOOL ARGS...: a change to the running kernel or a running daemon (sysctl -p, udevadm).
# With HALO_FIX_ROOT the root is not the running system: the setting applies when it boots.
# A failure is a note, not the end of the script (udevd is absent in containers and chroots).
live() {
  if [ -n "$ROOT" ]; then
    say "not applied to the running system (HALO_FIX_ROOT is set): $*"
    return 0
  fi
  if ! run "$@"; then say "note: '$*' failed; the setting applies at the next boot"; fi
}

# ---------------------------------------------------------------------------
# Step 1: access to /dev/kfd and the render nodes (rules: kfd-access, render-node-access)
say '== step 1: access to /dev/kfd and the render nodes'
UDEV_RULES='# Written by halo-doctor fix (rules: kfd-access, render-node-access).
SUBSYSTEM=="kfd", KERNEL=="kfd", GROUP="render", MODE="0660"
SUBSYSTEM=="drm", KERNEL=="renderD*", GROUP="render", MODE="0660"'
FIX_USER='imac'
FIX_GROUPS=( 'render' 'video' )
# Access to /dev/kfd and the render nodes (set before: UDEV_RULES: the rule file's content or
# empty; FIX_USER and FIX_GROUPS, or empty). ROCr opens /dev/kfd and /dev/dri/renderD*; they
# belong to group render (mode 0660) and the user joins render and video.
if [ -n "$UDEV_RULES" ]; then
  put_file "${ROOT}/etc/udev/rules.d/70-halo-doctor-gpu.rules" "$UDEV_RULES"
  if [ "$WROTE" -eq 1 ]; then
    live udevadm control --reload-rules
    live udevadm trigger --subsystem-match=kfd --subsystem-match=drm
  fi
fi
if [ -n "$FIX_USER" ]; then
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
    tool usermod -aG "$(IFS=,; printf '%s' "${ADD[*]}")" "$FIX_USER"
    CHANGED=1
  fi
  say "note: $FIX_USER must log out and back in (or reboot) before the new groups apply"
fi

# --- Done: what is left to do.
say 'needs a person [gfx1151-cwsr-hang]: add amdgpu.cwsr_enable=0 to the kernel command line and reboot (halo-doctor fix leaves this to you: it is a workaround, and without CWSR the GPU cannot preempt running compute waves)'
say 'needs a person [gfx1151-cwsr-hang]: or install a 6.18 or later kernel, where the driver'\''s default handles it'
say 'needs a person [gfx1151-kernel-min]: install the amdgpu-dkms of a current ROCm release (its /sys/module/amdgpu/version 6.18.4 or later), or remove amdgpu-dkms (sudo apt remove amdgpu-dkms, or sudo dnf remove amdgpu-dkms) on a kernel that has the fixes (6.18.4 or later; Ubuntu 24.04 HWE 6.17.0-19; OEM 6.14.0-1018)'
say 'needs a person [gfx1151-kernel-min]: reboot'
# The end of every fix script: what happened, how to undo it, what is left.
if [ "$DRY_RUN" -eq 1 ]; then
  say "dry run: nothing was changed ($FILES_CHANGED file(s) would change)"
  if [ "${#MISSING[@]}" -gt 0 ]; then
    say "not installed on this system: ${MISSING[*]}; a real run would stop (the commands above are what it would have run)"
    exit 3
  fi
elif [ "$CHANGED" -eq 0 ]; then
  say "nothing to change: this machine is already configured as above"
fi
if [ "${#UNDO[@]}" -gt 0 ] && [ "$DRY_RUN" -eq 0 ]; then
  say "to undo this run, as root and in this order:"
  for u in "${UNDO[@]}"; do say "  ${u#tool }"; done
  # halo-doctor fix --apply keeps the undo of its last run (HALO_FIX_UNDO_FILE) for fix --undo.
  if [ -n "${HALO_FIX_UNDO_FILE:-}" ]; then
    {
      printf '%s\n' '#!/bin/bash' '# Undoes the last halo-doctor fix --apply (run by halo-doctor fix --undo).' \
        'set -euo pipefail' "ROOT=$(printf '%q' "$ROOT")"
      # shellcheck disable=SC2016 # written as it is, for the undo file
      printf '%s\n' 'tool() { if [ -n "$ROOT" ]; then chroot "$ROOT" "$@"; else "$@"; fi; }'
      for u in "${UNDO[@]}"; do printf '%s\n' "$u"; done
    } >"$HALO_FIX_UNDO_FILE"
  fi
fi
say "next: run: halo-doctor check"

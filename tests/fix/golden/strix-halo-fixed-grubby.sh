#!/usr/bin/env bash
# halo-doctor fix for strix-halo (Fedora Linux 42 (Workstation Edition)), boot stack grubby
# Written by halo-doctor <version>. Read this summary; run it with --dry-run first to see each change as a diff.
#
# What it does (a step already done is skipped):
#   1. runs: grubby --update-kernel=ALL --remove-args=amdgpu.gttsize
#   2. writes /etc/profile.d/halo-doctor-rocm.sh:
#        unset HSA_OVERRIDE_GFX_VERSION
#   Then: reboot, and run halo-doctor check.
# Why: [hsa-override-gfx] unset HSA_OVERRIDE_GFX_VERSION (in your shell profile, container image or job script)
# Why: [amdgpu-gttsize-deprecated] drop amdgpu.gttsize; size GPU memory with ttm.pages_limit (see ttm-limit-low)
# Not done here (needs a person):
#   [hsa-override-gfx] unset each HSA_OVERRIDE_GFX_VERSION_<node> named above as well
#   [env-debug-settings] unset AMD_SERIALIZE_KERNEL AMD_SERIALIZE_COPY PYTORCH_NO_CUDA_MEMORY_CACHING PYTORCH_NO_HIP_MEMORY_CACHING AMD_LOG_LEVEL (and remove them from ~/.bashrc, the container image or the job script)
#   [env-debug-settings] keep HSA_ENABLE_SDMA=0 only while it is the workaround for a copy hang you have seen; remove it otherwise
#   [gfx1151-cwsr-hang] add amdgpu.cwsr_enable=0 to the kernel command line and reboot (halo-doctor fix leaves this to you: it is a workaround, and without CWSR the GPU cannot preempt running compute waves)
#   [gfx1151-cwsr-hang] or install a 6.18 or later kernel, where the driver's default handles it
#   [gfx1151-kernel-min] install kernel 6.18.4 or later (Fedora 43, Ubuntu 26.04, Arch 2026.02.01 and later ship it), or on Ubuntu 24.04 the HWE kernel 6.17.0-19 or the OEM kernel 6.14.0-1018 or later
#   [gfx1151-kernel-min] reboot into it
#   [amdgpu-gttsize-deprecated] delete gttsize= from 'options amdgpu' lines in /etc/modprobe.d if present, then rebuild the initramfs
# Undo: each file is backed up to FILE.halo-doctor.bak before its first edit; a run prints
#   the commands that undo it (after halo-doctor fix --apply: halo-doctor fix --undo).
# Only for this machine (MemTotal 125 GiB, grubby installed): elsewhere it stops, unless run with --force-other-machine.
# Usage: sudo bash THIS-SCRIPT [--dry-run] [--force-other-machine]
# Boot stack evidence: --stack grubby

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
FOR_MEM_GIB='125'
FOR_MACHINE_TAG=''
FOR_STACK='grubby'
FOR_STACK_TOOL='grubby'
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
KARGS_SET=( )
KARGS_REMOVE=( 'amdgpu.gttsize' )
# Kernel command-line helpers (set before: KARGS_SET, KARGS_REMOVE).

# tokens_of LINE KEY: prints the arguments in LINE named KEY (KEY or KEY=VALUE), one a line.
# read -a splits without pathname expansion, so an argument such as foo=* stays as it is.
tokens_of() {
  local -a words
  local w
  read -r -a words <<<"$1"
  for w in "${words[@]}"; do
    case $w in "$2" | "$2"=*) printf '%s\n' "$w" ;; esac
  done
}

# args_hold LINE: LINE carries every KARGS_SET argument with exactly the wanted value (once) and
# no argument named in KARGS_REMOVE.
args_hold() {
  local kv
  for kv in "${KARGS_SET[@]}"; do
    [ "$(tokens_of "$1" "${kv%%=*}")" = "$kv" ] || return 1
  done
  for kv in "${KARGS_REMOVE[@]}"; do
    [ -z "$(tokens_of "$1" "$kv")" ] || return 1
  done
  return 0
}

# ---------------------------------------------------------------------------
# Step 1: kernel command line (rules: amdgpu-gttsize-deprecated)
say '== step 1: kernel command line'
# grubby (Fedora, RHEL: GRUB 2 with Boot Loader Spec entries). grubby --info=ALL prints one
# args="..." line per installed kernel; --update-kernel=ALL --args/--remove-args edits every entry
# and the kernelopts default for kernels installed later (grubby(8)).
CURRENT=$(query grubby --info=ALL | sed -n 's/^args="\(.*\)"$/\1/p')
ENTRIES_OK=1
[ -n "$CURRENT" ] || ENTRIES_OK=0
while IFS= read -r line; do
  [ -z "$line" ] || args_hold "$line" || ENTRIES_OK=0
done <<<"$CURRENT"
if [ "$ENTRIES_OK" -eq 1 ]; then
  say "every kernel entry already has the arguments"
else
  ALL=$(tr '\n' ' ' <<<"$CURRENT")
  for kv in "${KARGS_SET[@]}"; do
    key=${kv%%=*}
    # Drop every other value of the key first: grubby --args replaces one value but leaves
    # duplicates that a hand edit made.
    while IFS= read -r t; do
      [ -z "$t" ] || [ "$t" = "$kv" ] || tool grubby --update-kernel=ALL --remove-args="$t"
    done < <(tokens_of "$ALL" "$key" | sort -u)
    tool grubby --update-kernel=ALL --args="$kv"
    old=$(tokens_of "$ALL" "$key" | head -n 1)
    if [ -n "$old" ]; then
      undo_tool grubby --update-kernel=ALL --args="$old"
    else
      undo_tool grubby --update-kernel=ALL --remove-args="$key"
    fi
  done
  for key in "${KARGS_REMOVE[@]}"; do
    if [ -n "$(tokens_of "$ALL" "$key")" ]; then
      tool grubby --update-kernel=ALL --remove-args="$key"
      undo_tool grubby --update-kernel=ALL --args="$(tokens_of "$ALL" "$key" | head -n 1)"
    else
      say "not on the command line: $key"
    fi
  done
  CHANGED=1
fi

# ---------------------------------------------------------------------------
# Step 2: environment (rules: hsa-override-gfx)
say '== step 2: environment'
put_file "${ROOT}/etc/profile.d/halo-doctor-rocm.sh" '# Written by halo-doctor fix (rules: hsa-override-gfx). Source it: . /etc/profile.d/halo-doctor-rocm.sh
unset HSA_OVERRIDE_GFX_VERSION'
say 'also remove these where your shell profile, job script or image sets them: HSA_OVERRIDE_GFX_VERSION'

# --- Done: what is left to do.
say 'needs a person [hsa-override-gfx]: unset each HSA_OVERRIDE_GFX_VERSION_<node> named above as well'
say 'needs a person [env-debug-settings]: unset AMD_SERIALIZE_KERNEL AMD_SERIALIZE_COPY PYTORCH_NO_CUDA_MEMORY_CACHING PYTORCH_NO_HIP_MEMORY_CACHING AMD_LOG_LEVEL (and remove them from ~/.bashrc, the container image or the job script)'
say 'needs a person [env-debug-settings]: keep HSA_ENABLE_SDMA=0 only while it is the workaround for a copy hang you have seen; remove it otherwise'
say 'needs a person [gfx1151-cwsr-hang]: add amdgpu.cwsr_enable=0 to the kernel command line and reboot (halo-doctor fix leaves this to you: it is a workaround, and without CWSR the GPU cannot preempt running compute waves)'
say 'needs a person [gfx1151-cwsr-hang]: or install a 6.18 or later kernel, where the driver'\''s default handles it'
say 'needs a person [gfx1151-kernel-min]: install kernel 6.18.4 or later (Fedora 43, Ubuntu 26.04, Arch 2026.02.01 and later ship it), or on Ubuntu 24.04 the HWE kernel 6.17.0-19 or the OEM kernel 6.14.0-1018 or later'
say 'needs a person [gfx1151-kernel-min]: reboot into it'
say 'needs a person [amdgpu-gttsize-deprecated]: delete gttsize= from '\''options amdgpu'\'' lines in /etc/modprobe.d if present, then rebuild the initramfs'
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
say "next: reboot, then run: halo-doctor check"

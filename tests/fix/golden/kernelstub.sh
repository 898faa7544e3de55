#!/usr/bin/env bash
# halo-doctor fix for strix-halo (Pop!_OS 24.04 LTS), boot stack kernelstub
# Written by halo-doctor <version>. Read this summary; run it with --dry-run first to see each change as a diff.
#
# What it does (a step already done is skipped):
#   1. writes /etc/modprobe.d/halo-doctor-ttm.conf:
#        options ttm page_pool_size=31719424 pages_limit=31719424
#   2. runs: kernelstub -o 'CURRENT OPTIONS', with ttm.page_pool_size=31719424 ttm.pages_limit=31719424
#   3. runs: update-initramfs -u -k all, if an initramfs image is older than the modprobe.d file
#   Then: reboot, and run halo-doctor check.
# Why: [ttm-limit-low] raise ttm.pages_limit and page_pool_size to 121 GiB (31719424 pages: MemTotal minus --reserve 4 GiB, whole GiB x 262144)
# Not done here (needs a person):
#   [gfx1151-cwsr-hang] add amdgpu.cwsr_enable=0 to the kernel command line and reboot (halo-doctor fix leaves this to you: it is a workaround, and without CWSR the GPU cannot preempt running compute waves)
#   [gfx1151-cwsr-hang] or install a 6.18 or later kernel, where the driver's default handles it
#   [gfx1151-kernel-min] install kernel 6.18.4 or later (Fedora 43, Ubuntu 26.04, Arch 2026.02.01 and later ship it), or on Ubuntu 24.04 the HWE kernel 6.17.0-19 or the OEM kernel 6.14.0-1018 or later
#   [gfx1151-kernel-min] reboot into it
# Undo: each file is backed up to FILE.halo-doctor.bak before its first edit; a run prints
#   the commands that undo it (after halo-doctor fix --apply: halo-doctor fix --undo).
# Only for this machine (MemTotal 125 GiB, kernelstub installed): elsewhere it stops, unless run with --force-other-machine.
# Usage: sudo bash THIS-SCRIPT [--dry-run] [--force-other-machine]
# Boot stack evidence: kernelstub is installed (/usr/bin/kernelstub); bootctl is installed (/usr/bin/bootctl); update-initramfs is installed (/usr/sbin/update-initramfs); /etc/os-release: ID=pop; /etc/kernelstub/configuration exists

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
FOR_STACK='kernelstub'
FOR_STACK_TOOL='kernelstub'
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
KARGS_SET=( 'ttm.page_pool_size=31719424' 'ttm.pages_limit=31719424' )
KARGS_REMOVE=( )
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
# edit_args LINE: prints LINE with the KARGS_SET keys replaced in place (the first occurrence
# keeps its position, later ones are dropped), new ones appended, KARGS_REMOVE keys dropped, and
# every other argument left in its order.
edit_args() {
  local -a words out
  local w kv key done_keys=" " drop
  read -r -a words <<<"$1"
  out=()
  for w in "${words[@]}"; do
    drop=0
    for key in "${KARGS_REMOVE[@]}"; do
      case $w in "$key" | "$key"=*) drop=1 ;; esac
    done
    for kv in "${KARGS_SET[@]}"; do
      key=${kv%%=*}
      case $w in
        "$key" | "$key"=*)
          drop=1
          case $done_keys in *" $key "*) ;; *)
            out+=("$kv")
            done_keys="$done_keys$key "
            ;;
          esac
          ;;
      esac
    done
    [ "$drop" -eq 1 ] || out+=("$w")
  done
  for kv in "${KARGS_SET[@]}"; do
    case $done_keys in *" ${kv%%=*} "*) ;; *) out+=("$kv") ;; esac
  done
  printf '%s' "${out[*]}"
}

# ---------------------------------------------------------------------------
# Step 1: module options in /etc/modprobe.d (rules: ttm-limit-low)
say '== step 1: module options in /etc/modprobe.d'
put_file "${ROOT}/etc/modprobe.d/halo-doctor-ttm.conf" '# Written by halo-doctor fix (rules: ttm-limit-low).
# Pages are 4 KiB: GiB x 262144.
options ttm page_pool_size=31719424 pages_limit=31719424'

# ---------------------------------------------------------------------------
# Step 2: kernel command line (rules: ttm-limit-low)
say '== step 2: kernel command line'
# kernelstub (Pop!_OS) keeps the user's options in /etc/kernelstub/configuration ("user" ->
# "kernel_options"). Its -d removes with a set difference, which reorders the remaining options,
# and -a appends (kernelstub/application.py); -o sets the whole list in the order given. So the
# list is edited here in place (other options keep their order) and written back with -o.
KS_CONF="${ROOT}/etc/kernelstub/configuration"
if [ ! -f "$KS_CONF" ]; then
  echo "halo-doctor fix: $KS_CONF does not exist; is this machine booted by kernelstub? (see --stack)" >&2
  exit 1
fi
CURRENT=$(sed -n '/"user"/,$p' "$KS_CONF" | sed -n '/"kernel_options"/,/\]/p' |
  grep -o '"[^"]*"' | tr -d '"' | grep -v '^kernel_options$' | tr '\n' ' ' || true)
if args_hold "$CURRENT"; then
  say "kernelstub's options already have the arguments"
else
  NEW=$(edit_args "$CURRENT")
  tool kernelstub -o "$NEW"
  undo_tool kernelstub -o "${CURRENT% }"
  CHANGED=1
fi

# ---------------------------------------------------------------------------
# Step 3: initramfs (rules: ttm-limit-low)
say '== step 3: initramfs'
INITRAMFS_CARRY=( '/etc/modprobe.d/halo-doctor-ttm.conf' )
INITRAMFS_CMD=( 'update-initramfs' '-u' '-k' 'all' )
# The initramfs (set before: INITRAMFS_CMD, INITRAMFS_CARRY: the modprobe.d files it must carry,
# empty: every /etc/modprobe.d/*.conf). TTM and amdgpu load from the initramfs, which holds its
# own copy of /etc/modprobe.d (initramfs-tools' modprobe.d hook, dracut's kernel-modules module,
# mkinitcpio's modconf hook): an image older than those files boots with the old options. The
# images judged: the builder's own for the kernels in /lib/modules, and the initrds the boot
# loader entries load; other files in /boot (rescue images, backups) are no one's boot image.
if [ "${#INITRAMFS_CARRY[@]}" -eq 0 ]; then
  for f in "${ROOT}"/etc/modprobe.d/*.conf; do
    [ -f "$f" ] && INITRAMFS_CARRY+=("${f#"$ROOT"}")
  done
fi
KERNELS=()
for d in "${ROOT}"/lib/modules/*/ "${ROOT}"/usr/lib/modules/*/; do
  [ -f "${d}modules.dep" ] || [ -f "${d}modules.dep.bin" ] || continue
  d=${d%/}
  KERNELS+=("${d##*/}")
done
IMG_PATHS=()
IMG_LABELS=()
add_image() { # PATH-ON-THE-FIXED-SYSTEM LABEL
  local i
  for i in "${!IMG_PATHS[@]}"; do
    if [ "${IMG_PATHS[$i]}" = "$1" ]; then
      IMG_LABELS[i]="${IMG_LABELS[$i]}; $2"
      return 0
    fi
  done
  IMG_PATHS+=("$1")
  IMG_LABELS+=("$2")
}
# initramfs-tools' update-initramfs writes /boot/initrd.img-VERSION; -u -k all updates those that exist.
for v in "${KERNELS[@]}"; do
  if [ -f "${ROOT}/boot/initrd.img-$v" ]; then add_image "/boot/initrd.img-$v" "the image update-initramfs writes for kernel $v"; fi
done
# stale_images: "IMAGE (LABELS)" for each image older than a file it must carry.
stale_images() {
  local i f
  for i in "${!IMG_PATHS[@]}"; do
    for f in "${INITRAMFS_CARRY[@]}"; do
      if [ -e "${ROOT}$f" ] && [ "${ROOT}$f" -nt "${ROOT}${IMG_PATHS[$i]}" ]; then
        printf '%s (%s)\n' "${IMG_PATHS[$i]}" "${IMG_LABELS[$i]}"
        break
      fi
    done
  done
}
mapfile -t STALE < <(stale_images)
if [ "${#IMG_PATHS[@]}" -eq 0 ]; then
  # Without an image the modules load from the root file system, which reads /etc/modprobe.d.
  say "note: no initramfs image of ${INITRAMFS_CMD[0]} for the kernels in /lib/modules and none named by a boot entry; if this system boots one, rebuild it with ${INITRAMFS_CMD[*]}"
elif [ "${#STALE[@]}" -eq 0 ]; then
  say "every initramfs image is newer than ${INITRAMFS_CARRY[*]:-/etc/modprobe.d}: ${IMG_PATHS[*]}"
else
  say "older than the modprobe.d files: ${STALE[*]}"
  tool "${INITRAMFS_CMD[@]}"
  undo_tool "${INITRAMFS_CMD[@]}"
  CHANGED=1
  if [ "$DRY_RUN" -eq 0 ]; then
    # The builder writes only its own images: one a boot entry loads from elsewhere (a
    # kernel-install copy, a hand-written entry) stays as it was.
    mapfile -t STALE < <(stale_images)
    if [ "${#STALE[@]}" -gt 0 ]; then
      {
        echo "halo-doctor fix: after ${INITRAMFS_CMD[*]}, still older than ${INITRAMFS_CARRY[*]:-/etc/modprobe.d}:"
        printf '  %s\n' "${STALE[@]}"
        echo "  ${INITRAMFS_CMD[0]} does not write these: rebuild or replace each (for a kernel-install layout: kernel-install add VERSION /boot/vmlinuz-VERSION), then run this script again"
      } >&2
      exit 1
    fi
  fi
fi

# --- Done: what is left to do.
say 'needs a person [gfx1151-cwsr-hang]: add amdgpu.cwsr_enable=0 to the kernel command line and reboot (halo-doctor fix leaves this to you: it is a workaround, and without CWSR the GPU cannot preempt running compute waves)'
say 'needs a person [gfx1151-cwsr-hang]: or install a 6.18 or later kernel, where the driver'\''s default handles it'
say 'needs a person [gfx1151-kernel-min]: install kernel 6.18.4 or later (Fedora 43, Ubuntu 26.04, Arch 2026.02.01 and later ship it), or on Ubuntu 24.04 the HWE kernel 6.17.0-19 or the OEM kernel 6.14.0-1018 or later'
say 'needs a person [gfx1151-kernel-min]: reboot into it'
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

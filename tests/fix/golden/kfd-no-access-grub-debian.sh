#!/usr/bin/env bash
# halo-doctor fix for ai2 (Ubuntu 24.04.3 LTS)
# Written by halo-doctor <version> from the failing rules' fixes. Read it before you run it.
# Boot stack: grub-debian
#   evidence: --stack grub-debian
#
# Usage: sudo bash THIS-SCRIPT [--dry-run]
#   --dry-run  print every command and every file change (as a diff), change nothing (no root
#              needed)
# Each step checks the state it needs (the generated boot configuration, the loader entries,
# the initramfs), so running it again after a failed tool finishes the job, and a run on a
# configured machine changes nothing. Files are backed up to FILE.halo-doctor.bak before
# their first edit; the end of a run prints the commands that undo it. Afterwards: reboot,
# then halo-doctor check.
# HALO_FIX_ROOT=DIR fixes the system installed under DIR instead of this one: files are edited
# under DIR and the boot tools run inside it (chroot DIR TOOL), never on the running host.
#
# Rules covered: kfd-access, render-node-access
# Not done by this script (needs a person):
#   [gfx1151-cwsr-hang] add amdgpu.cwsr_enable=0 to the kernel command line and reboot (halo-doctor fix leaves this to you: it is a workaround, and without CWSR the GPU cannot preempt running compute waves)
#   [gfx1151-cwsr-hang] or install a 6.18 or later kernel, where the driver's default handles it
#   [gfx1151-kernel-min] install the amdgpu-dkms of a current ROCm release (its /sys/module/amdgpu/version 6.18.4 or later), or remove amdgpu-dkms (sudo apt remove amdgpu-dkms, or sudo dnf remove amdgpu-dkms) on a kernel that has the fixes (6.18.4 or later; Ubuntu 24.04 HWE 6.17.0-19; OEM 6.14.0-1018)
#   [gfx1151-kernel-min] reboot

# The part every generated fix script starts with (after its header): options, the root, and the
# helpers the steps use. Each step checks the state it needs on the system being fixed, never what
# this run did, so a run after a failed tool call finishes the job and a second run is a no-op.
set -euo pipefail

ROOT=${HALO_FIX_ROOT:-}
ROOT=${ROOT%/}
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
UNDO=()

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

# tool TOOL ARGS...: runs a boot tool (unless --dry-run) on the system being fixed. With
# HALO_FIX_ROOT it runs inside that root through chroot(8), so it acts on the root and never on
# the running host; paths in ARGS are paths on the fixed system, not prefixed with the root.
tool() {
  if [ -n "$ROOT" ]; then run chroot "$ROOT" "$@"; else run "$@"; fi
}

# query TOOL ARGS...: like tool, for a tool call that only reads state, so --dry-run runs it too.
query() {
  if [ -n "$ROOT" ]; then chroot "$ROOT" "$@"; else "$@"; fi
}

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

# put_file FILE CONTENT: makes FILE hold CONTENT and a final newline. Leaves it alone when it
# already does; sets WROTE=1 when it changed (or, with --dry-run, would change) the file, and
# prints the change as a diff.
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

# has_token LINE TOKEN: the space-separated arguments in LINE include TOKEN exactly.
has_token() {
  local -a words
  local w
  read -r -a words <<<"$1"
  for w in "${words[@]}"; do [ "$w" = "$2" ] && return 0; done
  return 1
}

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

KARGS_SET=( )
KARGS_REMOVE=( )

# ---------------------------------------------------------------------------
# Step 1: access to /dev/kfd and the render nodes
# Rules: kfd-access, render-node-access
# ROCr opens /dev/kfd and /dev/dri/renderD*: they belong to group render (mode 0660);
# the user joins render and video. Group changes apply after logging out and back in.
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

# ---------------------------------------------------------------------------
# Done: what is left to do.
say 'needs a person [gfx1151-cwsr-hang]: add amdgpu.cwsr_enable=0 to the kernel command line and reboot (halo-doctor fix leaves this to you: it is a workaround, and without CWSR the GPU cannot preempt running compute waves)'
say 'needs a person [gfx1151-cwsr-hang]: or install a 6.18 or later kernel, where the driver'\''s default handles it'
say 'needs a person [gfx1151-kernel-min]: install the amdgpu-dkms of a current ROCm release (its /sys/module/amdgpu/version 6.18.4 or later), or remove amdgpu-dkms (sudo apt remove amdgpu-dkms, or sudo dnf remove amdgpu-dkms) on a kernel that has the fixes (6.18.4 or later; Ubuntu 24.04 HWE 6.17.0-19; OEM 6.14.0-1018)'
say 'needs a person [gfx1151-kernel-min]: reboot'
# The end of every fix script: what happened, how to undo it, what is left.
if [ "$DRY_RUN" -eq 1 ]; then
  say "dry run: nothing was changed ($FILES_CHANGED file(s) would change)"
elif [ "$CHANGED" -eq 0 ]; then
  say "nothing to change: this machine is already configured as above"
fi
if [ "${#UNDO[@]}" -gt 0 ] && [ "$DRY_RUN" -eq 0 ]; then
  say "to undo this run, as root and in this order:"
  for u in "${UNDO[@]}"; do say "  $u"; done
fi
say "next: run: halo-doctor check"

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
# Rules covered: ttm-limit-low
# Note: --ttm-limit 100 GiB: pages_limit and page_pool_size set to 26214400 pages (100 x 262144)
# Not done by this script (needs a person):
#   [gfx1151-cwsr-hang] add amdgpu.cwsr_enable=0 to the kernel command line and reboot (halo-doctor fix leaves this to you: it is a workaround, and without CWSR the GPU cannot preempt running compute waves)
#   [gfx1151-cwsr-hang] or install a 6.18 or later kernel, where the driver's default handles it
#   [gfx1151-kernel-min] install kernel 6.18.4 or later (Fedora 43, Ubuntu 26.04, Arch 2026.02.01 and later ship it), or on Ubuntu 24.04 the HWE kernel 6.17.0-19 or the OEM kernel 6.14.0-1018 or later
#   [gfx1151-kernel-min] reboot into it

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

KARGS_SET=( 'ttm.page_pool_size=26214400' 'ttm.pages_limit=26214400' )
KARGS_REMOVE=( )

# ---------------------------------------------------------------------------
# Step 1: TTM options in /etc/modprobe.d
# Rules: ttm-limit-low
# modprobe reads /etc/modprobe.d when TTM and amdgpu load; both load from the initramfs,
# so the initramfs is rebuilt in a later step when it is older than this file.
say '== step 1: TTM options in /etc/modprobe.d'
put_file "${ROOT}/etc/modprobe.d/halo-doctor-ttm.conf" '# Written by halo-doctor fix (rules: ttm-limit-low).
# Pages are 4 KiB: GiB x 262144.
options ttm page_pool_size=26214400 pages_limit=26214400'

# ---------------------------------------------------------------------------
# Step 2: kernel command line
# Rules: ttm-limit-low
# Set: ttm.page_pool_size=26214400 ttm.pages_limit=26214400
# Through grubby; arguments not named here are left as they are, in their order.
say '== step 2: kernel command line'
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
      UNDO+=("grubby --update-kernel=ALL --args=$(printf '%q' "$old")")
    else
      UNDO+=("grubby --update-kernel=ALL --remove-args=$(printf '%q' "$key")")
    fi
  done
  for key in "${KARGS_REMOVE[@]}"; do
    if [ -n "$(tokens_of "$ALL" "$key")" ]; then
      tool grubby --update-kernel=ALL --remove-args="$key"
      UNDO+=("grubby --update-kernel=ALL --args=$(printf '%q' "$(tokens_of "$ALL" "$key" | head -n 1)")")
    else
      say "not on the command line: $key"
    fi
  done
  CHANGED=1
fi

# ---------------------------------------------------------------------------
# Step 3: rebuild the initramfs
# Rules: ttm-limit-low
# The initramfs carries its own copy of /etc/modprobe.d; it is rebuilt when an image is
# older than the modprobe.d files it must carry.
say '== step 3: rebuild the initramfs'
INITRAMFS_TOOL='dracut'
INITRAMFS_CARRY=( '/etc/modprobe.d/halo-doctor-ttm.conf' )
# The initramfs (set before: INITRAMFS_TOOL, INITRAMFS_CARRY: the modprobe.d files it must carry;
# empty: every /etc/modprobe.d/*.conf). TTM and amdgpu load from the initramfs, which holds its
# own copy of /etc/modprobe.d (initramfs-tools hook "modprobe.d"; dracut's kernel-modules module;
# mkinitcpio's modconf hook), so an image older than a file it must carry still boots with the
# old options. The images judged are listed below, (a) and (b); after the builder they are judged
# again, and one still older than the files stops the script with its name.
if [ "${#INITRAMFS_CARRY[@]}" -eq 0 ]; then
  for f in "${ROOT}"/etc/modprobe.d/*.conf; do
    [ -f "$f" ] && INITRAMFS_CARRY+=("${f#"$ROOT"}")
  done
fi
if [ "$INITRAMFS_TOOL" = rpm-ostree ]; then
  # rpm-ostree initramfs-etc copies tracked /etc files into the initramfs of the next deployment
  # (rpm-ostree-initramfs-etc(1)); without arguments it lists the tracked files.
  TRACKED=$(query rpm-ostree initramfs-etc 2>/dev/null || true)
  OPS=()
  for f in "${INITRAMFS_CARRY[@]}"; do
    grep -qF -- "$f" <<<"$TRACKED" || OPS+=("--track=$f")
  done
  if [ "${#OPS[@]}" -gt 0 ]; then
    tool rpm-ostree initramfs-etc "${OPS[@]}"
    CHANGED=1
  else
    say "the initramfs already tracks: ${INITRAMFS_CARRY[*]}"
  fi
else
  # Which images count (issue 37): (a) the images the builder writes for the kernels in
  # /lib/modules, and (b) the initrds of the boot loader entries (Boot Loader Specification type 1
  # entries in /boot, /efi, /boot/efi loader/entries: what the boot loader really loads, including
  # kernel-install(8)'s copies in $BOOT/ENTRY-TOKEN/VERSION/). Other files in /boot are no
  # one's boot image here and are left alone: Fedora's rescue image (initramfs-0-rescue-*, built
  # once without host-only modules), DKMS's .old-dkms copies, backups.
  KERNELS=()
  for d in "${ROOT}"/lib/modules/*/ "${ROOT}"/usr/lib/modules/*/; do
    [ -f "${d}modules.dep" ] || [ -f "${d}modules.dep.bin" ] || continue
    d=${d%/}
    KERNELS+=("${d##*/}")
  done
  MACHINE_ID=""
  if [ -f "${ROOT}/etc/machine-id" ]; then read -r MACHINE_ID <"${ROOT}/etc/machine-id" || true; fi
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
  # (a) The builder's own images.
  case $INITRAMFS_TOOL in
    update-initramfs)
      # initramfs-tools' update-initramfs: ${BOOTDIR}/initrd.img-${version}; -u -k all updates
      # the images that exist.
      for v in "${KERNELS[@]}"; do
        if [ -f "${ROOT}/boot/initrd.img-$v" ]; then add_image "/boot/initrd.img-$v" "the image update-initramfs writes for kernel $v"; fi
      done
      ;;
    mkinitcpio)
      # mkinitcpio -P builds every preset in /etc/mkinitcpio.d: each PRESET's ${PRESET}_image
      # (a unified kernel image, ${PRESET}_uki, carries its initramfs inside and is not a file
      # here). The preset is a bash file, read in a subshell as mkinitcpio reads it.
      for preset in "${ROOT}"/etc/mkinitcpio.d/*.preset; do
        [ -f "$preset" ] || continue
        while IFS= read -r img; do
          if [ -n "$img" ] && [ -f "${ROOT}$img" ]; then add_image "$img" "the ${preset##*/} image mkinitcpio writes"; fi
        done < <(bash -c 'set +eu; . "$1" >/dev/null 2>&1; for p in "${PRESETS[@]}"; do v="${p}_image"; printf "%s\n" "${!v}"; done' bash "$preset" || true)
      done
      ;;
    *)
      # dracut --regenerate-all: every /lib/modules/VERSION with modules.dep, each to dracut's
      # default output (dracut.sh, 059): $BOOT/MACHINE-ID/VERSION/initrd where $BOOT (/efi, /boot,
      # /boot/efi) has loader/entries and a MACHINE-ID directory, else
      # /lib/modules/VERSION/initrd where that exists, else /boot/initramfs-VERSION.img;
      # distributions that rename it: /boot/initrd-VERSION (openSUSE), /boot/initrd.img-VERSION
      # (Debian).
      for v in "${KERNELS[@]}"; do
        img_out=""
        for b in /efi /boot /boot/efi; do
          if [ -n "$MACHINE_ID" ] && [ -d "${ROOT}$b/loader/entries" ] && [ -d "${ROOT}$b/$MACHINE_ID" ]; then
            img_out="$b/$MACHINE_ID/$v/initrd"
            break
          fi
        done
        if [ -z "$img_out" ] && [ -f "${ROOT}/lib/modules/$v/initrd" ]; then img_out="/lib/modules/$v/initrd"; fi
        if [ -z "$img_out" ]; then
          img_out="/boot/initramfs-$v.img"
          [ -f "${ROOT}$img_out" ] || [ ! -f "${ROOT}/boot/initrd-$v" ] || img_out="/boot/initrd-$v"
          [ -f "${ROOT}$img_out" ] || [ ! -f "${ROOT}/boot/initrd.img-$v" ] || img_out="/boot/initrd.img-$v"
        fi
        if [ -f "${ROOT}$img_out" ]; then add_image "$img_out" "the image dracut writes for kernel $v"; fi
      done
      ;;
  esac
  # (b) The initrds the boot loader entries load (the entries the kernel-arguments step edits).
  ENTRY_NOTES=()
  for part in /boot /efi /boot/efi; do
    for entry in "${ROOT}$part"/loader/entries/*.conf; do
      [ -f "$entry" ] || continue
      case ${entry##*/} in *-0-rescue*) continue ;; esac
      while read -r key rest; do
        [ "$key" = initrd ] || continue
        read -r -a words <<<"$rest"
        for p in "${words[@]}"; do
          case $p in
            \$*) continue ;;                            # grubby's $tuned_initrd (a GRUB variable)
            *ucode*.img | *ucode*.cpio) continue ;;     # CPU microcode: an early cpio, no modprobe.d
            */initramfs-0-rescue-*) continue ;;         # the rescue image, built once, host-independent
          esac
          # A path is relative to the partition that holds the entry; a /boot on the root
          # partition makes it /boot/... from the root.
          if [ -f "${ROOT}$part/${p#/}" ]; then
            add_image "$part/${p#/}" "entry ${entry#"$ROOT"} loads it"
          elif [ -f "${ROOT}/${p#/}" ]; then
            add_image "/${p#/}" "entry ${entry#"$ROOT"} loads it"
          else
            ENTRY_NOTES+=("entry ${entry#"$ROOT"} names initrd $p, which is not there")
          fi
        done
      done <"$entry"
    done
  done
  for n in "${ENTRY_NOTES[@]}"; do say "note: $n"; done
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
    # Without an image the modules load from the root file system, which reads /etc/modprobe.d
    # itself; an initramfs kept elsewhere is the boot tool's business.
    say "note: no initramfs image of $INITRAMFS_TOOL for the kernels in /lib/modules and none named by a boot entry; if this system boots one, rebuild it with $INITRAMFS_TOOL"
  elif [ "${#STALE[@]}" -eq 0 ]; then
    say "every initramfs image is newer than ${INITRAMFS_CARRY[*]:-/etc/modprobe.d}: ${IMG_PATHS[*]}"
  else
    say "older than the modprobe.d files: ${STALE[*]}"
    case $INITRAMFS_TOOL in
      update-initramfs) INITRAMFS_CMD=(update-initramfs -u -k all) ;;
      mkinitcpio) INITRAMFS_CMD=(mkinitcpio -P) ;;
      *) INITRAMFS_CMD=(dracut --regenerate-all --force) ;;
    esac
    if ! have "${INITRAMFS_CMD[0]}"; then
      echo "halo-doctor fix: ${INITRAMFS_CMD[0]} is not installed; rebuild the initramfs with your distribution's tool" >&2
      exit 1
    fi
    tool "${INITRAMFS_CMD[@]}"
    UNDO+=("$(printf '%q ' "${INITRAMFS_CMD[@]}")")
    CHANGED=1
    if [ "$DRY_RUN" -eq 0 ]; then
      # The builder writes only its own images: one a boot entry loads from elsewhere (a
      # kernel-install copy in $BOOT/ENTRY-TOKEN/VERSION/, a hand-written entry) stays as it was.
      mapfile -t STALE < <(stale_images)
      if [ "${#STALE[@]}" -gt 0 ]; then
        {
          echo "halo-doctor fix: after ${INITRAMFS_CMD[*]}, still older than ${INITRAMFS_CARRY[*]:-/etc/modprobe.d}:"
          printf '  %s\n' "${STALE[@]}"
          echo "  $INITRAMFS_TOOL does not write these: rebuild or replace each (for a kernel-install layout: kernel-install add VERSION /boot/vmlinuz-VERSION), then run this script again"
        } >&2
        exit 1
      fi
    fi
  fi
fi

# ---------------------------------------------------------------------------
# Done: what is left to do.
say 'needs a person [gfx1151-cwsr-hang]: add amdgpu.cwsr_enable=0 to the kernel command line and reboot (halo-doctor fix leaves this to you: it is a workaround, and without CWSR the GPU cannot preempt running compute waves)'
say 'needs a person [gfx1151-cwsr-hang]: or install a 6.18 or later kernel, where the driver'\''s default handles it'
say 'needs a person [gfx1151-kernel-min]: install kernel 6.18.4 or later (Fedora 43, Ubuntu 26.04, Arch 2026.02.01 and later ship it), or on Ubuntu 24.04 the HWE kernel 6.17.0-19 or the OEM kernel 6.14.0-1018 or later'
say 'needs a person [gfx1151-kernel-min]: reboot into it'
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
say "next: reboot, then run: halo-doctor check"

#!/usr/bin/env bash
# A recording double for the boot tools a `halo-doctor fix` script calls (grubby, rpm-ostree,
# kernelstub, update-grub, grub-mkconfig, grub2-mkconfig, kernel-install, dracut,
# update-initramfs, mkinitcpio, usermod), for the stacks whose real tools Debian does not ship and
# for fast per-stack checks; tests/cli/fix_real_tools.sh runs Debian's real tools. tests/cli/fix.sh
# links each tool a root has to this file inside that root, and puts a `chroot` double first on
# PATH: the scripts run boot tools as `chroot ROOT TOOL ...` under HALO_FIX_ROOT, and the double
# runs ROOT's TOOL (this file) with HALO_FIX_ROOT=ROOT instead of changing root (no privileges
# needed). Every tool call is appended to $HALO_DOUBLE_LOG as "NAME ARG..." (args %q-quoted).
# A file $HALO_DOUBLE_STATE/fail-once-NAME makes NAME fail once (exit 1, the file removed).
# Tools with state keep it under $HALO_DOUBLE_STATE so a second run sees the first run's changes:
#   grubby      args.txt: the arguments every kernel has (--info=ALL, --args, --remove-args)
#   rpm-ostree  args.txt: the deployment's kargs (kargs, --replace, --append-if-missing, --delete-if-present)
#   kernelstub  ${HALO_FIX_ROOT}/etc/kernelstub/configuration "user" kernel_options (-a, -d)
#   usermod     ${HALO_FIX_ROOT}/etc/group (-aG G1,G2 USER)
#   update-grub, grub-mkconfig  grub-cmdline.txt: the command line GRUB would generate, from sourcing
#               /etc/default/grub and (update-grub only) /etc/default/grub.d/*.cfg with /bin/sh
set -euo pipefail
name=$(basename -- "$0")
if [ "$name" = chroot ]; then
  croot=$1 cmd=$2
  shift 2
  for d in /usr/local/sbin /usr/local/bin /usr/sbin /usr/bin /sbin /bin; do
    if [ -x "$croot$d/$cmd" ]; then exec env HALO_FIX_ROOT="$croot" "$croot$d/$cmd" "$@"; fi
  done
  echo "chroot: failed to run command '$cmd': No such file or directory" >&2
  exit 127
fi
{
  printf '%s' "$name"
  for a in "$@"; do printf ' %q' "$a"; done
  printf '\n'
} >>"${HALO_DOUBLE_LOG:?}"
state=${HALO_DOUBLE_STATE:?}
root=${HALO_FIX_ROOT:-}
mkdir -p "$state"
if [ -e "$state/fail-once-$name" ]; then
  rm -f "$state/fail-once-$name"
  echo "$name: failing once (test double)" >&2
  exit 1
fi

# set_arg FILE KEY=VALUE: replaces KEY's tokens in FILE's one line, or appends.
set_arg() {
  local out=() w found=0
  read -r -a words <"$1" || true
  for w in "${words[@]}"; do
    if [ "${w%%=*}" = "${2%%=*}" ]; then
      [ "$found" -eq 1 ] || out+=("$2")
      found=1
    else
      out+=("$w")
    fi
  done
  [ "$found" -eq 1 ] || out+=("$2")
  printf '%s\n' "${out[*]}" >"$1"
}
# del_arg FILE TOKEN-OR-KEY: drops the token (or every token of the key).
del_arg() {
  local out=() w
  read -r -a words <"$1" || true
  for w in "${words[@]}"; do
    [ "$w" = "$2" ] || [ "${w%%=*}" = "$2" ] || out+=("$w")
  done
  printf '%s\n' "${out[*]}" >"$1"
}

case $name in
  grubby)
    touch "$state/args.txt"
    for a in "$@"; do
      case $a in
        --info=ALL) printf 'index=0\nkernel="/boot/vmlinuz"\nargs="%s"\nroot="UUID=x"\n' "$(cat "$state/args.txt")" ;;
        --args=*) set_arg "$state/args.txt" "${a#--args=}" ;;
        --remove-args=*) del_arg "$state/args.txt" "${a#--remove-args=}" ;;
      esac
    done
    ;;
  rpm-ostree)
    touch "$state/args.txt"
    touch "$state/tracked.txt"
    if [ "${1:-}" = initramfs-etc ]; then
      shift
      [ $# -gt 0 ] || cat "$state/tracked.txt"
      for a in "$@"; do
        case $a in --track=*) printf '%s\n' "${a#--track=}" >>"$state/tracked.txt" ;; esac
      done
    fi
    if [ "${1:-}" = kargs ]; then
      shift
      [ $# -gt 0 ] || cat "$state/args.txt"
      for a in "$@"; do
        case $a in
          --replace=*) set_arg "$state/args.txt" "${a#--replace=}" ;;
          --append-if-missing=*) set_arg "$state/args.txt" "${a#--append-if-missing=}" ;;
          --delete-if-present=*) del_arg "$state/args.txt" "${a#--delete-if-present=}" ;;
        esac
      done
    fi
    ;;
  kernelstub)
    conf="$root/etc/kernelstub/configuration"
    opts=$(sed -n '/"user"/,$p' "$conf" | sed -n '/"kernel_options"/,/\]/p' | grep -o '"[^"]*"' | tr -d '"' | grep -v '^kernel_options$' | tr '\n' ' ')
    printf '%s\n' "$opts" >"$state/ks.txt"
    case ${1:-} in
      -a) set_arg "$state/ks.txt" "$2" ;;
      -d) del_arg "$state/ks.txt" "$2" ;;
      -o) printf '%s\n' "$2" >"$state/ks.txt" ;; # the whole list, in the order given
    esac
    read -r -a words <"$state/ks.txt" || true
    list=""
    for w in "${words[@]}"; do list="$list${list:+, }\"$w\""; done
    printf '{\n  "user": {\n    "kernel_options": [%s],\n    "esp_path": "/boot/efi"\n  }\n}\n' "$list" >"$conf"
    ;;
  usermod)
    # usermod -aG G1,G2 USER
    groups=$2 user=$3
    IFS=, read -r -a gs <<<"$groups"
    for g in "${gs[@]}"; do
      awk -F: -v OFS=: -v g="$g" -v u="$user" '$1 == g { $4 = ($4 == "" ? u : $4 "," u) } { print }' \
        "$root/etc/group" >"$state/group.tmp"
      cat "$state/group.tmp" >"$root/etc/group"
    done
    ;;
  update-grub | grub-mkconfig | grub2-mkconfig)
    # Debian's grub-mkconfig (update-grub is grub-mkconfig -o /boot/grub/grub.cfg) sources
    # /etc/default/grub and then /etc/default/grub.d/*.cfg; upstream's (grub2-mkconfig here) only
    # the first. 10_linux writes GRUB_CMDLINE_LINUX GRUB_CMDLINE_LINUX_DEFAULT into each entry.
    files="$root/etc/default/grub"
    cfg=/boot/grub/grub.cfg
    if [ "$name" != grub2-mkconfig ]; then
      for f in "$root"/etc/default/grub.d/*.cfg; do [ -e "$f" ] && files="$files $f"; done
    fi
    [ "${1:-}" != -o ] || cfg=$2
    # shellcheck disable=SC2016
    sh -c 'for f in $1; do [ ! -e "$f" ] || . "$f"; done; printf "%s|%s\n" "$GRUB_CMDLINE_LINUX" "$GRUB_CMDLINE_LINUX_DEFAULT"' sh "$files" \
      >"$state/grub-cmdline.txt"
    IFS='|' read -r cl cld <"$state/grub-cmdline.txt" || true
    mkdir -p "$(dirname -- "$root$cfg")"
    printf "menuentry 'Linux' {\n\tlinux\t/boot/vmlinuz root=UUID=x ro %s %s\n}\n" "$cl" "$cld" >"$root$cfg"
    ;;
  update-initramfs | dracut | mkinitcpio)
    # Each rebuilds the images it owns, and only those (a new modification time):
    #  update-initramfs -u -k all  /boot/initrd.img-VERSION that exist, for the kernels in /lib/modules
    #  dracut --regenerate-all     each /lib/modules/VERSION with modules.dep, to dracut.sh's (059)
    #                              default output: $BOOT/MACHINE-ID/VERSION/initrd where $BOOT (/efi,
    #                              /boot, /boot/efi) has loader/entries and a MACHINE-ID directory,
    #                              else /lib/modules/VERSION/initrd if present, else
    #                              /boot/initramfs-VERSION.img (openSUSE's build: /boot/initrd-VERSION)
    #  mkinitcpio -P               every preset's ${PRESET}_image in /etc/mkinitcpio.d/*.preset
    mid=""
    if [ -f "$root/etc/machine-id" ]; then read -r mid <"$root/etc/machine-id" || true; fi
    case $name in
      mkinitcpio)
        for preset in "$root"/etc/mkinitcpio.d/*.preset; do
          [ -f "$preset" ] || continue
          # shellcheck disable=SC2016
          bash -c 'set +eu; . "$1"; for p in "${PRESETS[@]}"; do v="${p}_image"; printf "%s\n" "${!v}"; done' bash "$preset" |
            while IFS= read -r img; do [ -z "$img" ] || { mkdir -p "$(dirname -- "$root$img")" && touch -- "$root$img"; }; done
        done
        ;;
      *)
        for d in "$root"/lib/modules/*/ "$root"/usr/lib/modules/*/; do
          [ -f "${d}modules.dep" ] || [ -f "${d}modules.dep.bin" ] || continue
          v=${d%/}
          v=${v##*/}
          if [ "$name" = update-initramfs ]; then
            [ ! -f "$root/boot/initrd.img-$v" ] || touch -- "$root/boot/initrd.img-$v"
            continue
          fi
          img_out=""
          for b in /efi /boot /boot/efi; do
            if [ -n "$mid" ] && [ -d "$root$b/loader/entries" ] && [ -d "$root$b/$mid" ]; then
              img_out="$b/$mid/$v/initrd"
              break
            fi
          done
          if [ -z "$img_out" ] && [ -f "$root/lib/modules/$v/initrd" ]; then img_out="/lib/modules/$v/initrd"; fi
          if [ -z "$img_out" ]; then
            img_out="/boot/initramfs-$v.img"
            if [ -f "$root/etc/SUSE-brand" ] || grep -qs '^ID.*opensuse' "$root/etc/os-release"; then img_out="/boot/initrd-$v"; fi
          fi
          mkdir -p "$(dirname -- "$root$img_out")"
          touch -- "$root$img_out"
        done
        ;;
    esac
    ;;
esac
exit 0

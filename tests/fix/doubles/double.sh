#!/usr/bin/env bash
# A recording double for the boot tools a `halo-doctor fix` script calls (grubby, rpm-ostree,
# kernelstub, update-grub, grub-mkconfig, kernel-install, dracut, update-initramfs, mkinitcpio,
# usermod, udevadm, sysctl). tests/cli/fix.sh links each tool name to this file in a directory put
# first on PATH. Every call is appended to $HALO_DOUBLE_LOG as "NAME ARG..." (args %q-quoted).
# Tools with state keep it under $HALO_DOUBLE_STATE so a second run sees the first run's changes:
#   grubby      args.txt: the arguments every kernel has (--info=ALL, --args, --remove-args)
#   rpm-ostree  args.txt: the deployment's kargs (kargs, --replace, --append-if-missing, --delete-if-present)
#   kernelstub  ${HALO_FIX_ROOT}/etc/kernelstub/configuration "user" kernel_options (-a, -d)
#   usermod     ${HALO_FIX_ROOT}/etc/group (-aG G1,G2 USER)
#   update-grub, grub-mkconfig  grub-cmdline.txt: the command line GRUB would generate, from sourcing
#               /etc/default/grub and (update-grub only) /etc/default/grub.d/*.cfg with /bin/sh
set -euo pipefail
name=$(basename -- "$0")
{
  printf '%s' "$name"
  for a in "$@"; do printf ' %q' "$a"; done
  printf '\n'
} >>"${HALO_DOUBLE_LOG:?}"
state=${HALO_DOUBLE_STATE:?}
root=${HALO_FIX_ROOT:-}
mkdir -p "$state"

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
  update-grub | grub-mkconfig)
    files="$root/etc/default/grub"
    if [ "$name" = update-grub ]; then
      for f in "$root"/etc/default/grub.d/*.cfg; do [ -e "$f" ] && files="$files $f"; done
    fi
    # shellcheck disable=SC2016
    sh -c 'for f in $1; do [ ! -e "$f" ] || . "$f"; done; printf "%s|%s\n" "$GRUB_CMDLINE_LINUX" "$GRUB_CMDLINE_LINUX_DEFAULT"' sh "$files" \
      >"$state/grub-cmdline.txt"
    ;;
esac
exit 0

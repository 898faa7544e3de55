# shellcheck shell=bash disable=SC2034
# The initrds the Boot Loader Specification entries load (the entries the kernel-arguments step
# edits), including kernel-install(8)'s copies in $BOOT/ENTRY-TOKEN/VERSION/.
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

# shellcheck shell=bash disable=SC2034
# dracut --regenerate-all: every /lib/modules/VERSION with modules.dep, each to dracut's default
# output (dracut.sh, 059): $BOOT/MACHINE-ID/VERSION/initrd where $BOOT (/efi, /boot, /boot/efi) has
# loader/entries and a MACHINE-ID directory, else /lib/modules/VERSION/initrd where that exists,
# else /boot/initramfs-VERSION.img (openSUSE: /boot/initrd-VERSION; Debian: /boot/initrd.img-VERSION).
MACHINE_ID=""
if [ -f "${ROOT}/etc/machine-id" ]; then read -r MACHINE_ID <"${ROOT}/etc/machine-id" || true; fi
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

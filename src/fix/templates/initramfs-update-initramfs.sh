# shellcheck shell=bash disable=SC2034
# initramfs-tools' update-initramfs writes /boot/initrd.img-VERSION; -u -k all updates those that exist.
for v in "${KERNELS[@]}"; do
  if [ -f "${ROOT}/boot/initrd.img-$v" ]; then add_image "/boot/initrd.img-$v" "the image update-initramfs writes for kernel $v"; fi
done

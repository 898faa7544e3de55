# shellcheck shell=bash disable=SC2034
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

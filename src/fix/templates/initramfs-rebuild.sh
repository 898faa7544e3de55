# shellcheck shell=bash disable=SC2034
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

# shellcheck shell=bash disable=SC2034
# The initramfs (set before: INITRAMFS_TOOL, INITRAMFS_CARRY: the modprobe.d files it must carry;
# empty: every /etc/modprobe.d/*.conf). TTM and amdgpu load from the initramfs, which holds its
# own copy of /etc/modprobe.d (initramfs-tools hook "modprobe.d"; dracut's kernel-modules module;
# mkinitcpio's modconf hook), so an image older than a file it must carry still boots with the
# old options. Images: /boot/initrd.img-VERSION (initramfs-tools, Debian's dracut),
# /boot/initramfs-VERSION.img (dracut on Fedora/RHEL), /boot/initrd-VERSION (dracut on openSUSE),
# /boot/initramfs-*.img (mkinitcpio).
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
  STALE=()
  IMAGES=0
  for img in "${ROOT}"/boot/initrd.img-* "${ROOT}"/boot/initramfs-*.img "${ROOT}"/boot/initrd-*; do
    [ -f "$img" ] || continue
    IMAGES=$((IMAGES + 1))
    for f in "${INITRAMFS_CARRY[@]}"; do
      if [ -e "${ROOT}$f" ] && [ "${ROOT}$f" -nt "$img" ]; then
        STALE+=("${img#"$ROOT"}")
        break
      fi
    done
  done
  if [ "$IMAGES" -eq 0 ]; then
    # Without an image the modules load from the root file system, which reads /etc/modprobe.d
    # itself; an initramfs kept elsewhere (an ESP) is the boot tool's business.
    say "note: no initramfs image in /boot; if this system boots one from elsewhere, rebuild it with $INITRAMFS_TOOL"
  elif [ "${#STALE[@]}" -eq 0 ]; then
    say "every initramfs image is newer than ${INITRAMFS_CARRY[*]:-/etc/modprobe.d}"
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
  fi
fi

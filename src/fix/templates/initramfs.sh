# shellcheck shell=bash disable=SC2034
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

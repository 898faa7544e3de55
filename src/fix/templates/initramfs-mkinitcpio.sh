# shellcheck shell=bash disable=SC2034
# mkinitcpio -P builds every preset in /etc/mkinitcpio.d: each PRESET's ${PRESET}_image (a unified
# kernel image carries its initramfs inside). The preset is bash, read in a subshell as mkinitcpio does.
for preset in "${ROOT}"/etc/mkinitcpio.d/*.preset; do
  [ -f "$preset" ] || continue
  while IFS= read -r img; do
    if [ -n "$img" ] && [ -f "${ROOT}$img" ]; then add_image "$img" "the ${preset##*/} image mkinitcpio writes"; fi
  done < <(bash -c 'set +eu; . "$1" >/dev/null 2>&1; for p in "${PRESETS[@]}"; do v="${p}_image"; printf "%s\n" "${!v}"; done' bash "$preset" || true)
done

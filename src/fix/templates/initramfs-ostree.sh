# shellcheck shell=bash disable=SC2034
# The initramfs on rpm-ostree (set before: INITRAMFS_CARRY). rpm-ostree initramfs-etc copies
# tracked /etc files into the next deployment's initramfs; without arguments it lists the
# tracked files (rpm-ostree-initramfs-etc(1)).
if [ "${#INITRAMFS_CARRY[@]}" -eq 0 ]; then
  for f in "${ROOT}"/etc/modprobe.d/*.conf; do
    [ -f "$f" ] && INITRAMFS_CARRY+=("${f#"$ROOT"}")
  done
fi
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

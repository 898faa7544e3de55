# shellcheck shell=bash disable=SC2034
# GRUB (set before: GRUB_FLAVOUR=debian|plain, GRUB_BLOCK, KARGS_SET, KARGS_REMOVE).
# debian: Debian's and Ubuntu's grub-mkconfig source /etc/default/grub.d/*.cfg after
#   /etc/default/grub (a Debian patch; upstream GRUB 2.06 reads /etc/default/grub only), so a
#   drop-in filters the old values out and appends the new ones; update-grub regenerates.
# plain: Arch, openSUSE and other upstream GRUBs: the same block between markers at the end of
#   /etc/default/grub (a later run replaces it); grub-mkconfig or grub2-mkconfig regenerates.
# Which generator and output file this system has is decided by what is installed: update-grub
# (/boot/grub/grub.cfg), grub2-mkconfig (openSUSE, Fedora: /boot/grub2/grub.cfg) or
# grub-mkconfig (/boot/grub/grub.cfg) (grub-mkconfig(8), GRUB 2.06).
if have update-grub && [ "$GRUB_FLAVOUR" = debian ]; then
  GRUB_CFG=/boot/grub/grub.cfg
  GRUB_GEN=(update-grub)
elif have grub2-mkconfig; then
  GRUB_CFG=/boot/grub2/grub.cfg
  GRUB_GEN=(grub2-mkconfig -o "$GRUB_CFG")
elif have grub-mkconfig; then
  GRUB_CFG=/boot/grub/grub.cfg
  [ -d "${ROOT}/boot/grub" ] || [ ! -d "${ROOT}/boot/grub2" ] || GRUB_CFG=/boot/grub2/grub.cfg
  GRUB_GEN=(grub-mkconfig -o "$GRUB_CFG")
else
  echo "halo-doctor fix: no GRUB configuration generator (update-grub, grub-mkconfig, grub2-mkconfig) is installed; is this machine booted by GRUB? (see halo-doctor fix --stack)" >&2
  exit 1
fi

if [ "$GRUB_FLAVOUR" = debian ]; then
  GRUB_FILE="${ROOT}/etc/default/grub.d/90-halo-doctor.cfg"
  GRUB_NEW=$GRUB_BLOCK
else
  GRUB_FILE="${ROOT}/etc/default/grub"
  if [ ! -f "$GRUB_FILE" ]; then
    echo "halo-doctor fix: $GRUB_FILE does not exist; is this machine booted by GRUB? (see --stack)" >&2
    exit 1
  fi
  GRUB_NEW="$(sed '/^# BEGIN halo-doctor/,/^# END halo-doctor/d' "$GRUB_FILE")
$GRUB_BLOCK"
fi
put_file "$GRUB_FILE" "$GRUB_NEW"

# grub_cfg_holds: every kernel entry (linux/linuxefi/linux16 line) of the generated configuration
# carries the wanted arguments and none of the removed ones. GRUB's 10_linux writes
# GRUB_CMDLINE_LINUX and GRUB_CMDLINE_LINUX_DEFAULT into each entry, so this is the state the
# next boot uses; /etc/default/grub alone is not.
grub_cfg_holds() {
  local cfg="${ROOT}$GRUB_CFG" line n=0
  [ -f "$cfg" ] || return 1
  while IFS= read -r line; do
    n=$((n + 1))
    args_hold "$line" || return 1
  done < <(grep -E '^[[:space:]]*linux(efi|16)?[[:space:]]' "$cfg" || true)
  [ "$n" -gt 0 ]
}

if grub_cfg_holds; then
  say "every kernel entry in $GRUB_CFG already has the arguments"
else
  tool "${GRUB_GEN[@]}"
  CHANGED=1
  undo_tool "${GRUB_GEN[@]}"
  if [ "$DRY_RUN" -eq 0 ]; then
    if grub_cfg_holds; then
      say "checked: every kernel entry in $GRUB_CFG has the arguments"
    elif grep -q blscfg "${ROOT}$GRUB_CFG" 2>/dev/null; then
      say "note: $GRUB_CFG reads Boot Loader Spec entries (blscfg); if they lack the arguments, use halo-doctor fix --stack grubby"
    else
      echo "halo-doctor fix: ${GRUB_GEN[*]} ran, but the kernel entries in $GRUB_CFG still lack the arguments; another file in /etc/default/grub.d may set GRUB_CMDLINE_LINUX_DEFAULT after ours" >&2
      exit 1
    fi
  fi
fi

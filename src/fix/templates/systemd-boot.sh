# shellcheck shell=bash disable=SC2034
# systemd-boot. Two places hold the command line (Boot Loader Specification; kernel-install(8)):
#  - /etc/kernel/cmdline: what kernel-install writes into the entries of kernels installed next
#    (without it kernel-install falls back to /proc/cmdline, so a missing file is seeded from the
#    running command line without BOOT_IMAGE= and initrd=);
#  - the "options" lines of the type 1 entries already in $BOOT/loader/entries (on the ESP or
#    XBOOTLDR partition: /boot, /efi or /boot/efi), whether kernel-install or a person wrote them.
# Both are edited; other arguments keep their order.
CMDLINE_FILE="${ROOT}/etc/kernel/cmdline"
if [ -f "$CMDLINE_FILE" ]; then
  CURRENT=$(tr '\n' ' ' <"$CMDLINE_FILE")
else
  read -r -a words <"${ROOT}/proc/cmdline"
  CURRENT=""
  for w in "${words[@]}"; do
    case $w in BOOT_IMAGE=* | initrd=*) ;; *) CURRENT="$CURRENT $w" ;; esac
  done
fi
put_file "$CMDLINE_FILE" "$(edit_args "$CURRENT")"

ENTRIES_SEEN=0
for entry in "${ROOT}"/boot/loader/entries/*.conf "${ROOT}"/efi/loader/entries/*.conf \
  "${ROOT}"/boot/efi/loader/entries/*.conf; do
  [ -f "$entry" ] || continue
  ENTRIES_SEEN=$((ENTRIES_SEEN + 1))
  # Several "options" lines are joined with spaces (Boot Loader Specification).
  OPTS=$(sed -n 's/^options[[:space:]]\{1,\}//p' "$entry" | tr '\n' ' ')
  if args_hold "$OPTS"; then
    say "entry already has the arguments: ${entry#"$ROOT"}"
    continue
  fi
  NEW_OPTS=$(edit_args "$OPTS")
  # The first options line gets the whole new list; other options lines are dropped.
  ENTRY_NEW=$(awk -v o="options $NEW_OPTS" '
    /^options[ \t]/ { if (!done) { print o; done = 1 } next }
    { print }
    END { if (!done) print o }' "$entry")
  put_file "$entry" "$ENTRY_NEW"
  say "changed entry: ${entry#"$ROOT"}"
done
if [ "$ENTRIES_SEEN" -eq 0 ]; then
  say "note: no loader entries in /boot, /efi or /boot/efi loader/entries; unified kernel images carry their own command line: run kernel-install add VERSION IMAGE for each installed kernel"
fi

# shellcheck shell=bash disable=SC2034
# grubby (Fedora, RHEL: GRUB 2 with Boot Loader Spec entries). grubby --info=ALL prints one
# args="..." line per installed kernel; --update-kernel=ALL --args/--remove-args edits every entry
# and the kernelopts default for kernels installed later (grubby(8)).
CURRENT=$(query grubby --info=ALL | sed -n 's/^args="\(.*\)"$/\1/p')
ENTRIES_OK=1
[ -n "$CURRENT" ] || ENTRIES_OK=0
while IFS= read -r line; do
  [ -z "$line" ] || args_hold "$line" || ENTRIES_OK=0
done <<<"$CURRENT"
if [ "$ENTRIES_OK" -eq 1 ]; then
  say "every kernel entry already has the arguments"
else
  ALL=$(tr '\n' ' ' <<<"$CURRENT")
  for kv in "${KARGS_SET[@]}"; do
    key=${kv%%=*}
    # Drop every other value of the key first: grubby --args replaces one value but leaves
    # duplicates that a hand edit made.
    while IFS= read -r t; do
      [ -z "$t" ] || [ "$t" = "$kv" ] || tool grubby --update-kernel=ALL --remove-args="$t"
    done < <(tokens_of "$ALL" "$key" | sort -u)
    tool grubby --update-kernel=ALL --args="$kv"
    old=$(tokens_of "$ALL" "$key" | head -n 1)
    if [ -n "$old" ]; then
      undo_tool grubby --update-kernel=ALL --args="$old"
    else
      undo_tool grubby --update-kernel=ALL --remove-args="$key"
    fi
  done
  for key in "${KARGS_REMOVE[@]}"; do
    if [ -n "$(tokens_of "$ALL" "$key")" ]; then
      tool grubby --update-kernel=ALL --remove-args="$key"
      undo_tool grubby --update-kernel=ALL --args="$(tokens_of "$ALL" "$key" | head -n 1)"
    else
      say "not on the command line: $key"
    fi
  done
  CHANGED=1
fi

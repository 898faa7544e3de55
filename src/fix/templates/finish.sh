# shellcheck shell=bash disable=SC2034
# The end of every fix script: what happened, how to undo it, what is left.
if [ "$DRY_RUN" -eq 1 ]; then
  say "dry run: nothing was changed ($FILES_CHANGED file(s) would change)"
elif [ "$CHANGED" -eq 0 ]; then
  say "nothing to change: this machine is already configured as above"
fi
if [ "${#UNDO[@]}" -gt 0 ] && [ "$DRY_RUN" -eq 0 ]; then
  say "to undo this run, as root and in this order:"
  for u in "${UNDO[@]}"; do say "  $u"; done
fi

# shellcheck shell=bash disable=SC2034
# The end of every fix script: what happened, how to undo it, what is left.
if [ "$DRY_RUN" -eq 1 ]; then
  say "dry run: nothing was changed ($FILES_CHANGED file(s) would change)"
  if [ "${#MISSING[@]}" -gt 0 ]; then
    say "not installed on this system: ${MISSING[*]}; a real run would stop (the commands above are what it would have run)"
    exit 3
  fi
elif [ "$CHANGED" -eq 0 ]; then
  say "nothing to change: this machine is already configured as above"
fi
if [ "${#UNDO[@]}" -gt 0 ] && [ "$DRY_RUN" -eq 0 ]; then
  say "to undo this run, as root and in this order:"
  for u in "${UNDO[@]}"; do say "  ${u#tool }"; done
  # halo-doctor fix --apply keeps the undo of its last run (HALO_FIX_UNDO_FILE) for fix --undo.
  if [ -n "${HALO_FIX_UNDO_FILE:-}" ]; then
    {
      printf '%s\n' '#!/bin/bash' '# Undoes the last halo-doctor fix --apply (run by halo-doctor fix --undo).' \
        'set -euo pipefail' "ROOT=$(printf '%q' "$ROOT")"
      # shellcheck disable=SC2016 # written as it is, for the undo file
      printf '%s\n' 'tool() { if [ -n "$ROOT" ]; then chroot "$ROOT" "$@"; else "$@"; fi; }'
      for u in "${UNDO[@]}"; do printf '%s\n' "$u"; done
    } >"$HALO_FIX_UNDO_FILE"
  fi
fi

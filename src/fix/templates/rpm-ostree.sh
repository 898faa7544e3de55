# shellcheck shell=bash disable=SC2034
# rpm-ostree (Fedora Atomic, Bazzite): rpm-ostree kargs prints the kernel arguments of the booted
# deployment's successor; all changes go into one new deployment ("Changes queued for next boot")
# (rpm-ostree-kargs(1)).
CURRENT=$(query rpm-ostree kargs)
if args_hold "$CURRENT"; then
  say "the deployment already has the arguments"
else
  OPS=()
  for kv in "${KARGS_SET[@]}"; do
    key=${kv%%=*}
    mapfile -t old < <(tokens_of "$CURRENT" "$key")
    if [ "${#old[@]}" -eq 1 ] && [ "${old[0]}" = "$kv" ]; then
      continue
    elif [ "${#old[@]}" -eq 1 ]; then
      OPS+=("--replace=$kv")
    else
      for t in "${old[@]}"; do OPS+=("--delete-if-present=$t"); done
      OPS+=("--append-if-missing=$kv")
    fi
  done
  for key in "${KARGS_REMOVE[@]}"; do
    mapfile -t old < <(tokens_of "$CURRENT" "$key")
    for t in "${old[@]}"; do OPS+=("--delete-if-present=$t"); done
  done
  tool rpm-ostree kargs "${OPS[@]}"
  undo_tool rpm-ostree rollback # the previous deployment keeps the old arguments
  CHANGED=1
fi

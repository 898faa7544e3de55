# shellcheck shell=bash disable=SC2034
# The machine this script was written for (set before: FOR_MEM_GIB, FOR_MACHINE_TAG, FOR_STACK,
# FOR_STACK_TOOL). The limits were sized from its RAM; on another machine they could exceed its
# RAM, so the script stops there unless --force-other-machine is given.
OTHER=()
if [ -n "$FOR_MEM_GIB" ] && [ -r "${ROOT}/proc/meminfo" ]; then
  mem_kib=$(awk '$1 == "MemTotal:" { print $2; exit }' "${ROOT}/proc/meminfo")
  if [ -n "$mem_kib" ] && [ "$((mem_kib / 1048576))" != "$FOR_MEM_GIB" ]; then
    OTHER+=("MemTotal is $((mem_kib / 1048576)) GiB here, $FOR_MEM_GIB GiB there (the limits were sized from it)")
  fi
fi
if [ -n "$FOR_MACHINE_TAG" ]; then
  tag=""
  if [ -r "${ROOT}/etc/machine-id" ]; then
    tag=$(printf 'halo-doctor fix:%s' "$(head -n 1 "${ROOT}/etc/machine-id")" | sha256sum | cut -c1-16)
  fi
  [ "$tag" = "$FOR_MACHINE_TAG" ] || OTHER+=("/etc/machine-id differs")
fi
if [ -n "$FOR_STACK_TOOL" ] && ! have "$FOR_STACK_TOOL"; then
  OTHER+=("the boot stack was $FOR_STACK, but $FOR_STACK_TOOL is not installed here")
  [ "$DRY_RUN" -eq 1 ] || FORCE_OTHER=0 # no flag makes a missing boot tool work
fi
if [ "${#OTHER[@]}" -gt 0 ]; then
  {
    echo "halo-doctor fix: this script was written for another machine:"
    printf '  %s\n' "${OTHER[@]}"
  } >&2
  if [ "$DRY_RUN" -eq 1 ]; then
    echo "  (dry run: showing what it would do there)" >&2
  elif [ "$FORCE_OTHER" -eq 1 ]; then
    echo "  going on: --force-other-machine" >&2
  else
    echo "  run halo-doctor fix on this machine for its own script, or pass --force-other-machine" >&2
    exit 3
  fi
fi

# shellcheck shell=bash disable=SC2034
# kernelstub (Pop!_OS) keeps the user's options in /etc/kernelstub/configuration ("user" ->
# "kernel_options"). Its -d removes with a set difference, which reorders the remaining options,
# and -a appends (kernelstub/application.py); -o sets the whole list in the order given. So the
# list is edited here in place (other options keep their order) and written back with -o.
KS_CONF="${ROOT}/etc/kernelstub/configuration"
if [ ! -f "$KS_CONF" ]; then
  echo "halo-doctor fix: $KS_CONF does not exist; is this machine booted by kernelstub? (see --stack)" >&2
  exit 1
fi
CURRENT=$(sed -n '/"user"/,$p' "$KS_CONF" | sed -n '/"kernel_options"/,/\]/p' |
  grep -o '"[^"]*"' | tr -d '"' | grep -v '^kernel_options$' | tr '\n' ' ' || true)
if args_hold "$CURRENT"; then
  say "kernelstub's options already have the arguments"
else
  NEW=$(edit_args "$CURRENT")
  tool kernelstub -o "$NEW"
  undo_tool kernelstub -o "${CURRENT% }"
  CHANGED=1
fi

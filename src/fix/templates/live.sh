# shellcheck shell=bash disable=SC2034
# live TOOL ARGS...: a change to the running kernel or a running daemon (sysctl -p, udevadm).
# With HALO_FIX_ROOT the root is not the running system: the setting applies when it boots.
# A failure is a note, not the end of the script (udevd is absent in containers and chroots).
live() {
  if [ -n "$ROOT" ]; then
    say "not applied to the running system (HALO_FIX_ROOT is set): $*"
    return 0
  fi
  if ! run "$@"; then say "note: '$*' failed; the setting applies at the next boot"; fi
}

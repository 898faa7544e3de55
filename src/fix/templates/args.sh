# shellcheck shell=bash disable=SC2034
# Kernel command-line helpers (set before: KARGS_SET, KARGS_REMOVE).

# tokens_of LINE KEY: prints the arguments in LINE named KEY (KEY or KEY=VALUE), one a line.
# read -a splits without pathname expansion, so an argument such as foo=* stays as it is.
tokens_of() {
  local -a words
  local w
  read -r -a words <<<"$1"
  for w in "${words[@]}"; do
    case $w in "$2" | "$2"=*) printf '%s\n' "$w" ;; esac
  done
}

# args_hold LINE: LINE carries every KARGS_SET argument with exactly the wanted value (once) and
# no argument named in KARGS_REMOVE.
args_hold() {
  local kv
  for kv in "${KARGS_SET[@]}"; do
    [ "$(tokens_of "$1" "${kv%%=*}")" = "$kv" ] || return 1
  done
  for kv in "${KARGS_REMOVE[@]}"; do
    [ -z "$(tokens_of "$1" "$kv")" ] || return 1
  done
  return 0
}

# shellcheck shell=bash disable=SC2034
# edit_args LINE: prints LINE with the KARGS_SET keys replaced in place (the first occurrence
# keeps its position, later ones are dropped), new ones appended, KARGS_REMOVE keys dropped, and
# every other argument left in its order.
edit_args() {
  local -a words out
  local w kv key done_keys=" " drop
  read -r -a words <<<"$1"
  out=()
  for w in "${words[@]}"; do
    drop=0
    for key in "${KARGS_REMOVE[@]}"; do
      case $w in "$key" | "$key"=*) drop=1 ;; esac
    done
    for kv in "${KARGS_SET[@]}"; do
      key=${kv%%=*}
      case $w in
        "$key" | "$key"=*)
          drop=1
          case $done_keys in *" $key "*) ;; *)
            out+=("$kv")
            done_keys="$done_keys$key "
            ;;
          esac
          ;;
      esac
    done
    [ "$drop" -eq 1 ] || out+=("$w")
  done
  for kv in "${KARGS_SET[@]}"; do
    case $done_keys in *" ${kv%%=*} "*) ;; *) out+=("$kv") ;; esac
  done
  printf '%s' "${out[*]}"
}

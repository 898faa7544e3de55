# bash completion for halo-doctor (installed as share/bash-completion/completions/halo-doctor)
_halo_doctor() {
  local cur prev words cword
  _init_completion || return
  local commands="check facts fix capture rules explain bench slurm plan fleet"
  local probe="--root --facts --bundle --add-facts --reserve --no-runtime --hsa-library --runtime-timeout --host-root --framework-deep --python --framework-timeout"
  local rule="--rules --only --skip"
  local run="--model --config --method --batch --seq --grad-accum --gradient-checkpointing --optim --lora-r --load-dtype"
  local cmd="" i
  for ((i = 1; i < cword; i++)); do
    case ${words[i]} in check | facts | fix | capture | rules | explain | bench | slurm | plan | fleet) cmd=${words[i]}; break ;; esac
  done
  case $prev in
    --root | --rules) _filedir -d; return ;;
    --model) _filedir; return ;;
    --config) _filedir '@(json|yaml|yml)'; return ;;
    --method) COMPREPLY=($(compgen -W "full lora qlora" -- "$cur")); return ;;
    --gradient-checkpointing) COMPREPLY=($(compgen -W "true false" -- "$cur")); return ;;
    --load-dtype) COMPREPLY=($(compgen -W "bfloat16 float16 float32 auto" -- "$cur")); return ;;
    --facts | --add-facts | --policy | --hsa-library) _filedir; return ;;
    --bundle) _filedir 'tar.gz'; return ;;
    --format)
      if [ "$cmd" = plan ]; then COMPREPLY=($(compgen -W "text json" -- "$cur"))
      elif [ "$cmd" = facts ]; then COMPREPLY=($(compgen -W "text json markdown" -- "$cur")); else COMPREPLY=($(compgen -W "text json junit prometheus npd markdown" -- "$cur")); fi
      return ;;
    --stack) COMPREPLY=($(compgen -W "auto grubby grub-debian grub-arch rpm-ostree kernelstub systemd-boot nixos" -- "$cur")); return ;;
    --user) COMPREPLY=($(compgen -u -- "$cur")); return ;;
    --fail-on) COMPREPLY=($(compgen -W "error warning info never" -- "$cur")); return ;;
    --color) COMPREPLY=($(compgen -W "auto always never" -- "$cur")); return ;;
    -o | --output)
      if [ "$cmd" = check ] && [[ $cur != *:* ]]; then
        COMPREPLY=($(compgen -W "text: json: junit: prometheus: npd: markdown:" -- "$cur")); compopt -o nospace
      else
        _filedir
      fi
      return ;;
    --only | --skip)
      COMPREPLY=($(compgen -W "$(halo-doctor rules 2>/dev/null | awk 'NR > 1 {print $1}')" -- "$cur")); return ;;
  esac
  case $cmd in
    "") COMPREPLY=($(compgen -W "$commands --version --debug --help" -- "$cur")) ;;
    check) COMPREPLY=($(compgen -W "$probe $rule $run --format --output --fail-on --color --policy --quiet --verbose --help" -- "$cur")) ;;
    plan) COMPREPLY=($(compgen -W "$probe $rule $run --format --output --fail-on --color --policy --measure --measure-timeout --verbose --help" -- "$cur")) ;;
    fix) COMPREPLY=($(compgen -W "$probe $rule --stack --ttm-limit --user --output --apply --undo --yes --help" -- "$cur")) ;;
    facts) COMPREPLY=($(compgen -W "$probe --declared --format --output --help" -- "$cur")) ;;
    capture) COMPREPLY=($(compgen -W "--output --root --no-redact --no-runtime --hsa-library --runtime-timeout --help" -- "$cur")) ;;
    slurm)
      if [[ " ${words[*]} " == *" health-check "* || " ${words[*]} " == *" prolog "* || " ${words[*]} " == *" epilog "* ]]; then
        COMPREPLY=($(compgen -W "$probe $rule --policy --fail-on --node --report-dir --scontrol --slurm-conf --timeout --scontrol-timeout --pending-reboot --drain-on-internal-error --reason-max --dry-run --no-syslog --help" -- "$cur"))
      else
        COMPREPLY=($(compgen -W "health-check prolog epilog --help" -- "$cur"))
      fi ;;
    rules) COMPREPLY=($(compgen -W "--rules --test --format --help" -- "$cur")) ;;
    fleet)
      if [[ " ${words[*]} " == *" compare "* ]]; then
        if [[ $cur == -* ]]; then COMPREPLY=($(compgen -W "--format --output --all --help" -- "$cur")); else _filedir '@(json|gz)'; fi
      else
        COMPREPLY=($(compgen -W "compare --help" -- "$cur"))
      fi ;;
    explain) COMPREPLY=($(compgen -W "$probe --rules --help $(halo-doctor rules 2>/dev/null | awk 'NR > 1 {print $1}')" -- "$cur")) ;;
    *) COMPREPLY=($(compgen -W "--help" -- "$cur")) ;;
  esac
}
complete -F _halo_doctor halo-doctor

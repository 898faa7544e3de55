#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The man page and the bash and zsh completions know every subcommand the binary has (its --help
# lists them), and the completions offer exactly the boot stacks `fix --stack` accepts (its --help
# lists them); the man page renders. Usage: docs_commands.sh HALO_DOCTOR SOURCE_DIR
set -u
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
bin=$(realpath "$1")
src=$(realpath "$2")
man=$src/docs/halo-doctor.1
bashc=$src/packaging/completions/halo-doctor.bash
zshc=$src/packaging/completions/_halo-doctor
fail=0
bad() { echo "FAIL $*"; fail=1; }
commands=$("$bin" --help | sed -n '/^Subcommands:/,$p' | sed -n 's/^  \([a-z][a-z-]*\) .*/\1/p')
[ "$(printf '%s\n' "$commands" | wc -l)" -ge 10 ] || bad "--help lists too few subcommands: $commands"
bash_list=$(sed -n 's/^ *local commands="\(.*\)"$/\1/p' "$bashc")
zsh_list=$(sed -n "s/.*'1:command:(\(.*\))'.*/\1/p" "$zshc")
for c in $commands; do
  grep -q "^\.B halo-doctor $c\b" "$man" || bad "man page SYNOPSIS lacks $c"
  grep -q "^\.B $c\b" "$man" || bad "man page COMMANDS lacks $c"
  [[ " $bash_list " == *" $c "* ]] || bad "bash completion's commands lack $c"
  [[ " $zsh_list " == *" $c "* ]] || bad "zsh completion's commands lack $c"
done
stacks=$("$bin" fix --help | sed -n 's/^ *--stack \([a-z|-]*\).*/\1/p' | tr '|' ' ')
[ -n "$stacks" ] || bad "fix --help names no --stack values"
# shellcheck disable=SC2016 # the pattern matches a literal $(
bash_stacks=$(sed -n 's/^ *--stack) COMPREPLY=(\$(compgen -W "\([^"]*\)".*/\1/p' "$bashc")
zsh_stacks=$(sed -n "s/.*'--stack\[[^]]*\]:stack:(\([^)]*\))'.*/\1/p" "$zshc")
[ "$bash_stacks" = "$stacks" ] || bad "bash --stack values '$bash_stacks', fix accepts '$stacks'"
[ "$zsh_stacks" = "$stacks" ] || bad "zsh --stack values '$zsh_stacks', fix accepts '$stacks'"
if command -v man >/dev/null; then
  out=$(MANWIDTH=100 man -l "$man" 2>&1) || bad "man page does not render"
  [[ $out == *"--stack"* ]] || bad "man page does not describe fix --stack"
fi
bash -n "$bashc" || bad "bash completion syntax"
if command -v zsh >/dev/null; then zsh -n "$zshc" || bad "zsh completion syntax"; fi
[ $fail = 0 ] && echo "ok: man page and completions cover $(printf '%s\n' "$commands" | wc -l) subcommands and the --stack values ($stacks)"
exit $fail

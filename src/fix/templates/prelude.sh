# shellcheck shell=bash disable=SC2034
# The helpers every step uses (docs/fix.md, "Script contract"). Each step checks the state the
# next boot uses, never what this run did: a rerun after a failed tool finishes the job, and a run
# on a configured machine changes nothing.
set -euo pipefail

ROOT=${HALO_FIX_ROOT:-}
ROOT=${ROOT%/}
DRY_RUN=0
FORCE_OTHER=0
for arg in "$@"; do
  case $arg in
    --dry-run) DRY_RUN=1 ;;
    --force-other-machine) FORCE_OTHER=1 ;;
    -h | --help)
      sed -n '2,/^set -euo pipefail$/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'
      exit 0
      ;;
    *)
      echo "halo-doctor fix: unknown argument '$arg' (use --dry-run, --force-other-machine or --help)" >&2
      exit 2
      ;;
  esac
done

if [ "$DRY_RUN" -eq 0 ] && [ "$(id -u)" -ne 0 ]; then
  if [ -z "$ROOT" ] || [ "${HALO_FIX_ALLOW_NON_ROOT:-0}" != 1 ]; then
    echo "halo-doctor fix: run this as root (sudo bash $0), or look first with --dry-run" >&2
    exit 1
  fi
fi

CHANGED=0
WROTE=0
FILES_CHANGED=0
UNDO=()
MISSING=()

say() { printf '%s\n' "$*"; }

# run COMMAND ARGS...: prints the command, and runs it unless --dry-run.
run() {
  printf '+'
  printf ' %q' "$@"
  printf '\n'
  if [ "$DRY_RUN" -eq 0 ]; then "$@"; fi
}

# have TOOL: TOOL is installed on the system being fixed (under HALO_FIX_ROOT when it is set).
have() {
  local d
  for d in /usr/local/sbin /usr/local/bin /usr/sbin /usr/bin /sbin /bin; do
    [ -x "${ROOT}$d/$1" ] && [ ! -d "${ROOT}$d/$1" ] && return 0
  done
  return 1
}

# missing TOOL: records and reports a tool this system lacks; with --dry-run the run goes on and
# shows what it would run, without it the script stops before changing anything more.
missing() {
  case " ${MISSING[*]} " in *" $1 "*) ;; *) MISSING+=("$1") ;; esac
  if [ "$DRY_RUN" -eq 1 ]; then
    echo "note: $1 is not installed on this system; a real run would stop here" >&2
  else
    echo "halo-doctor fix: $1 is not installed on this system (looked in /usr/local/sbin, /usr/local/bin, /usr/sbin, /usr/bin, /sbin, /bin${ROOT:+ under $ROOT}); this script was written for a machine whose boot stack uses it" >&2
    exit 1
  fi
}

# tool TOOL ARGS...: runs a boot tool (unless --dry-run) on the system being fixed; with
# HALO_FIX_ROOT inside that root (chroot(8)), never on the running host.
tool() {
  have "$1" || missing "$1"
  if [ -n "$ROOT" ]; then run chroot "$ROOT" "$@"; else run "$@"; fi
}

# query TOOL ARGS...: a tool call that only reads state (--dry-run runs it too); prints nothing
# when the tool is missing.
query() {
  if ! have "$1"; then
    missing "$1"
    return 0
  fi
  if [ -n "$ROOT" ]; then chroot "$ROOT" "$@"; else "$@"; fi
}

# undo_tool COMMAND...: records a tool call that undoes a change.
undo_tool() { UNDO+=("tool $(printf '%q ' "$@")"); }

# backup FILE: copies FILE to FILE.halo-doctor.bak before its first edit (the original is kept)
# and records how to undo the edit.
backup() {
  if [ -e "$1" ] && [ ! -e "$1.halo-doctor.bak" ]; then
    run cp -p -- "$1" "$1.halo-doctor.bak"
    UNDO+=("mv -f -- $(printf '%q' "$1.halo-doctor.bak") $(printf '%q' "$1")")
  elif [ ! -e "$1" ]; then
    UNDO+=("rm -f -- $(printf '%q' "$1")")
  fi
}

# put_file FILE CONTENT: makes FILE hold CONTENT and a final newline, showing the change as a
# diff; leaves it alone when it already does. WROTE=1 when it changed (or would change) the file.
# shellcheck disable=SC2034 # WROTE is read by the steps after put_file, not in every script.
put_file() {
  local file=$1 content=$2
  WROTE=0
  if [ -f "$file" ] && [ "$(cat -- "$file")" = "$content" ]; then
    say "unchanged: $file"
    return 0
  fi
  if [ -e "$file" ] && [ ! -f "$file" ]; then
    echo "halo-doctor fix: $file exists and is not a regular file; not touched" >&2
    exit 1
  fi
  WROTE=1
  CHANGED=1
  FILES_CHANGED=$((FILES_CHANGED + 1))
  if [ -f "$file" ]; then
    diff -u --label "$file" --label "$file (new)" -- "$file" - <<<"$content" || true
  else
    diff -u --label /dev/null --label "$file (new)" /dev/null - <<<"$content" || true
  fi
  if [ "$DRY_RUN" -eq 1 ]; then
    say "would write $file"
    return 0
  fi
  mkdir -p -- "$(dirname -- "$file")"
  backup "$file"
  printf '%s\n' "$content" >"$file.halo-doctor.tmp"
  mv -f -- "$file.halo-doctor.tmp" "$file"
  say "wrote $file"
}

#!/usr/bin/env bash
# `cmake --install` puts the binary, the rules, the man page, the bash/zsh completions and the
# systemd units in place, the installed binary reports its git revision, and CPack builds a .deb
# holding the same files (dpkg-deb is part of every Debian system).
set -u
build=$(realpath "$1")
fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
bad() { echo "FAIL $*"; fail=1; }

cmake --install "$build" --prefix "$tmp/usr" >"$tmp/install.log" 2>&1 || { bad "cmake --install"; cat "$tmp/install.log"; exit 1; }
for f in bin/halo-doctor share/man/man1/halo-doctor.1 share/bash-completion/completions/halo-doctor \
  share/zsh/vendor-completions/_halo-doctor share/halo-doctor/rules/memory.json \
  lib/systemd/system/halo-doctor.service lib/systemd/system/halo-doctor.timer \
  share/halo-doctor/examples/policy.json share/halo-doctor/examples/npd-halo-doctor.json \
  share/halo-doctor/examples/halo-doctor-alerts.yml; do
  [ -e "$tmp/usr/$f" ] || bad "not installed: $f"
done
version=$("$tmp/usr/bin/halo-doctor" --version)
[[ $version =~ ^halo-doctor\ [0-9]+\.[0-9]+\.[0-9]+\ \(git\ [0-9a-z]+\)$ ]] || bad "--version has no git revision: $version"
command -v man >/dev/null && { man -l "$tmp/usr/share/man/man1/halo-doctor.1" >/dev/null 2>&1 || bad "man page does not render"; }
bash -n "$tmp/usr/share/bash-completion/completions/halo-doctor" || bad "bash completion has a syntax error"

# The Debian package.
if command -v cpack >/dev/null && command -v dpkg-deb >/dev/null; then
  (cd "$build" && cpack -G DEB -B "$tmp/pkg") >"$tmp/cpack.log" 2>&1 || { bad "cpack -G DEB"; tail -20 "$tmp/cpack.log"; }
  deb=$(find "$tmp/pkg" -maxdepth 1 -name 'halo-doctor_*.deb' -print -quit 2>/dev/null)
  if [ -n "$deb" ]; then
    dpkg-deb -c "$deb" >"$tmp/contents"
    for f in ./usr/bin/halo-doctor ./usr/share/man/man1/halo-doctor.1 ./usr/share/bash-completion/completions/halo-doctor \
      ./usr/lib/systemd/system/halo-doctor.timer ./usr/share/halo-doctor/rules/memory.json; do
      grep -q " $f\$" "$tmp/contents" || bad ".deb lacks $f"
    done
    dpkg-deb -f "$deb" Depends | grep -q libc6 || bad ".deb has no shared-library dependencies"
    echo "built $(basename "$deb")"
  else
    bad "cpack wrote no .deb"
  fi
fi
[ $fail = 0 ] && echo "install and package ok"
exit $fail

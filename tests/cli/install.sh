#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# `cmake --install` puts the binary, the rules, the man page, the bash/zsh completions, the
# systemd units and the Slurm wrappers in place, the installed binary reports its git revision,
# and CPack builds a .deb holding the same files (dpkg-deb is part of every Debian system), which
# dpkg installs into an empty root where its wrapper runs its binary; where rpmbuild exists
# (Debian's `rpm`), CPack builds the RPM too, checked with rpm -qlp and rpm -qRp.
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
  share/halo-doctor/examples/halo-doctor-alerts.yml share/halo-doctor/examples/slurm.env \
  share/halo-doctor/plan_measure.py \
  libexec/halo-doctor/slurm-health-check libexec/halo-doctor/slurm-prolog libexec/halo-doctor/slurm-epilog \
  share/doc/halo-doctor/slurm.md; do
  [ -e "$tmp/usr/$f" ] || bad "not installed: $f"
done
version=$("$tmp/usr/bin/halo-doctor" --version)
[[ $version =~ ^halo-doctor\ [0-9]+\.[0-9]+\.[0-9]+\ \(git\ [0-9a-z]+\)$ ]] || bad "--version has no git revision: $version"
command -v man >/dev/null && { man -l "$tmp/usr/share/man/man1/halo-doctor.1" >/dev/null 2>&1 || bad "man page does not render"; }
bash -n "$tmp/usr/share/bash-completion/completions/halo-doctor" || bad "bash completion has a syntax error"
# zsh (installed by scripts/setup.sh): the completion parses, and only `check` takes --python twice.
zsh -n "$tmp/usr/share/zsh/vendor-completions/_halo-doctor" || bad "zsh completion has a syntax error"
grep -q "^            '\*--python" "$tmp/usr/share/zsh/vendor-completions/_halo-doctor" ||
  bad "zsh completion: check's --python is not repeatable"
grep -q "^    '\*--python" "$tmp/usr/share/zsh/vendor-completions/_halo-doctor" &&
  bad "zsh completion: --python is repeatable for every command (only check takes it twice)"

for w in slurm-health-check slurm-prolog slurm-epilog; do
  [ -x "$tmp/usr/libexec/halo-doctor/$w" ] || bad "$w is not executable"
done
command -v shellcheck >/dev/null && { shellcheck "$tmp/usr/libexec/halo-doctor/slurm-prolog" || bad "the Slurm wrapper is not shellcheck-clean"; }

# The installed wrapper runs the installed binary with the options of PREFIX/etc/halo-doctor/slurm.env
# (scontrol missing: the node cannot be read, nothing is changed, exit 70).
wrapper_runs() { # PREFIX
  mkdir -p "$1/etc/halo-doctor"
  printf 'HALO_DOCTOR_SLURM_OPTIONS="--no-syslog --report-dir %s --scontrol /nonexistent/scontrol --node n1"\nHALO_DOCTOR_SLURM_HEALTH_CHECK_OPTIONS="--root %s --no-runtime"\n' \
    "$tmp/reports" "$fixtures/strix-halo-default-ttm" >"$1/etc/halo-doctor/slurm.env"
  local out code
  out=$(env -i "$1/libexec/halo-doctor/slurm-health-check" 2>/dev/null)
  code=$?
  [ "$code" = 70 ] || bad "$1 wrapper: exit $code, expected 70 (no scontrol): $out"
  [[ $out == *"failed: ttm-limit-low; the node's state could not be read"* ]] || bad "$1 wrapper said: $out"
}
fixtures=$(realpath "$(dirname "$0")/../fixtures")
wrapper_runs "$tmp/usr"
[ -s "$tmp/reports/slurm-health-check.txt" ] || bad "the wrapper's run wrote no report"

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
    for f in ./usr/libexec/halo-doctor/slurm-health-check ./usr/libexec/halo-doctor/slurm-prolog \
      ./usr/libexec/halo-doctor/slurm-epilog ./usr/lib/systemd/system/halo-doctor.service; do
      grep -q " $f\$" "$tmp/contents" || bad ".deb lacks $f"
    done
    dpkg-deb -f "$deb" Depends | grep -q libc6 || bad ".deb has no shared-library dependencies"
    # Debian policy 12.5: the copyright file, machine-readable (DEP-5), naming the MIT license.
    dpkg-deb --fsys-tarfile "$deb" | tar -xOf - ./usr/share/doc/halo-doctor/copyright >"$tmp/copyright" 2>/dev/null
    grep -q '^License: MIT$' "$tmp/copyright" || bad ".deb has no /usr/share/doc/halo-doctor/copyright naming MIT"
    # Installed by dpkg into an empty root (its own database; the libraries it depends on are this
    # machine's), then its wrapper runs its binary.
    root="$tmp/root"
    mkdir -p "$root/var/lib/dpkg/info" "$root/var/lib/dpkg/updates"
    : >"$root/var/lib/dpkg/status"
    if dpkg --root="$root" --force-depends --force-not-root -i "$deb" >"$tmp/dpkg.log" 2>&1; then
      dpkg --root="$root" -L halo-doctor >"$tmp/dpkg-files"
      grep -qx /usr/libexec/halo-doctor/slurm-prolog "$tmp/dpkg-files" || bad "dpkg -L lacks the prolog wrapper"
      [ -x "$root/usr/bin/halo-doctor" ] || bad "dpkg did not install the binary"
      wrapper_runs "$root/usr"
    else
      bad "dpkg --root -i"
      tail -5 "$tmp/dpkg.log"
    fi
    echo "built $(basename "$deb")"
  else
    bad "cpack wrote no .deb"
  fi
fi
# The RPM (rpmbuild from Debian's rpm package): the same files, with the wrappers and the units.
if command -v cpack >/dev/null && command -v rpmbuild >/dev/null && command -v rpm >/dev/null; then
  (cd "$build" && cpack -G RPM -B "$tmp/rpm") >"$tmp/cpack-rpm.log" 2>&1 || { bad "cpack -G RPM"; tail -20 "$tmp/cpack-rpm.log"; }
  rpmfile=$(find "$tmp/rpm" -maxdepth 1 -name 'halo-doctor-*.rpm' -print -quit 2>/dev/null)
  if [ -n "$rpmfile" ]; then
    rpm -qlp "$rpmfile" >"$tmp/rpm-files" 2>/dev/null
    for f in /usr/bin/halo-doctor /usr/libexec/halo-doctor/slurm-health-check /usr/libexec/halo-doctor/slurm-prolog \
      /usr/libexec/halo-doctor/slurm-epilog /usr/lib/systemd/system/halo-doctor.service \
      /usr/lib/systemd/system/halo-doctor.timer /usr/share/halo-doctor/rules/memory.json \
      /usr/share/man/man1/halo-doctor.1 /usr/share/doc/halo-doctor/slurm.md; do
      grep -qx "$f" "$tmp/rpm-files" || bad "RPM lacks $f"
    done
    # Directories the system owns must not be claimed by the package (RPM file conflicts).
    for d in /usr /usr/bin /usr/lib/systemd /usr/lib/systemd/system /usr/libexec /usr/share/man; do
      grep -qx "$d" "$tmp/rpm-files" && bad "RPM claims the system directory $d"
    done
    [ "$(rpm -qp --qf '%{LICENSE}' "$rpmfile" 2>/dev/null)" = MIT ] || bad "RPM License is not MIT"
    grep -qx /usr/share/doc/halo-doctor/LICENSE "$tmp/rpm-files" || bad "RPM lacks the LICENSE file"
    rpm -qRp "$rpmfile" >"$tmp/rpm-requires" 2>/dev/null
    grep -q '^libc.so.6' "$tmp/rpm-requires" || bad "RPM has no shared-library requirements"
    grep -q '^/bin/sh' "$tmp/rpm-requires" || bad "RPM does not require /bin/sh for the wrappers"
    echo "built $(basename "$rpmfile"): $(wc -l <"$tmp/rpm-files") files, $(wc -l <"$tmp/rpm-requires") requirements"
  else
    bad "cpack wrote no .rpm"
  fi
fi
[ $fail = 0 ] && echo "install and package ok"
exit $fail

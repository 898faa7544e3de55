#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The release artifacts of scripts/release.sh (issue 35), each installed the way a user installs it
# and run from the installed files against a fixture root (`check --root` exits 1 with
# ttm-limit-low on the Strix Halo at the default TTM cap):
# - the binary: readelf -d NEEDED lists glibc's libraries only, objdump -T no GLIBC_ symbol version
#   above 2.34 (RHEL/Rocky 9's glibc), so it runs on every distribution the README names;
# - the tarball: binary, rules, man page, completions, docs, report.schema.json, docs/facts.md;
# - the .deb: Depends names libc6 only; dpkg installs it into a clean Debian 12 root (mmdebstrap
#   --variant=essential, cached as a tarball in $HALO_TOOLROOT_CACHE) without --force-depends, and
#   halo-doctor runs inside that root (chroot) with nothing but the root's own libraries;
# - the .rpm: every Requires is glibc's (libc.so.6, libm.so.6, ld-linux, rtld, /bin/sh, rpmlib),
#   so `rpm --root --nodeps` leaves nothing a glibc-only system lacks; installed that way into an
#   empty root, its binary runs;
# - the wheel (py3-none-manylinux_2_34_x86_64): pip installs it with --no-index into a fresh venv
#   of Debian's /usr/bin/python3; VENV/bin/halo-doctor and `python -m halo_doctor` run, and with
#   the venv active the framework probe judges that venv.
# Usage: release.sh DIST_DIR FIXTURES. Runs scripts/release.sh first when DIST_DIR has no .deb.
# Parts skip (exit 77 at the end if nothing failed) without root, mmdebstrap, rpm or python3-venv.
set -u
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
py=/usr/bin/python3
dist=$(realpath -m "$1")
fixtures=$(realpath "$2")
fixture=$fixtures/strix-halo-default-ttm
src=$(realpath "$(dirname "$0")/../..")
fail=0 skipped=0
bad() { echo "FAIL $*"; fail=1; }
ok() { echo "ok $*"; }
skip() { echo "SKIP $*"; skipped=1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

if ! compgen -G "$dist/*.deb" >/dev/null; then
  JOBS=${JOBS:-2} bash "$src/scripts/release.sh" "$dist" >"$tmp/release.log" 2>&1 || { tail -30 "$tmp/release.log"; bad "scripts/release.sh"; exit 1; }
fi
deb=$(compgen -G "$dist/halo-doctor_*_amd64.deb" | head -1)
tarball=$(compgen -G "$dist/halo-doctor-*-linux-x86_64.tar.gz" | head -1)
rpmfile=$(compgen -G "$dist/halo-doctor-*.x86_64.rpm" | head -1)
wheel=$(compgen -G "$dist/halo_doctor-*-py3-none-manylinux_2_34_x86_64.whl" | head -1)
[ -n "$deb" ] || bad "no .deb in $dist"
[ -n "$tarball" ] || bad "no tarball in $dist"
[ -n "$wheel" ] || bad "no manylinux_2_34 wheel in $dist"
# SHA256SUMS beside the packages names each of them and checks (issue 46).
if [ -s "$dist/SHA256SUMS" ] && (cd "$dist" && sha256sum --quiet -c SHA256SUMS); then
  for f in "$deb" "$tarball" "$wheel" $rpmfile; do
    grep -q "  $(basename "$f")\$" "$dist/SHA256SUMS" || bad "SHA256SUMS does not name $(basename "$f")"
  done
  ok "SHA256SUMS checks ($(wc -l <"$dist/SHA256SUMS") files)"
else
  bad "no SHA256SUMS in $dist, or it does not check"
fi

# check_runs LABEL CMD...: `CMD check --root FIXTURE` as the installed files run it (exit 1, the
# TTM finding named).
check_runs() {
  local label=$1 out code
  shift
  out=$("$@" 2>&1)
  code=$?
  if [ "$code" = 1 ] && [[ $out == *ttm-limit-low* ]]; then ok "$label: check --root exits 1 naming ttm-limit-low"; else
    bad "$label: check --root exited $code: $(printf '%s' "$out" | tail -3)"
  fi
}

# --- the tarball and the binary in it -------------------------------------------------------------
if [ -n "$tarball" ]; then
  mkdir "$tmp/tar"
  tar -C "$tmp/tar" -xzf "$tarball"
  top=$(find "$tmp/tar" -mindepth 1 -maxdepth 1 -type d | head -1)
  for f in bin/halo-doctor share/halo-doctor/rules/memory.json share/man/man1/halo-doctor.1 \
    share/bash-completion/completions/halo-doctor share/zsh/vendor-completions/_halo-doctor \
    share/doc/halo-doctor/report.schema.json share/doc/halo-doctor/facts.md share/doc/halo-doctor/README.md \
    share/doc/halo-doctor/LICENSE share/doc/halo-doctor/copyright; do
    [ -e "$top/$f" ] || bad "tarball lacks $f"
  done
  binary=$top/bin/halo-doctor
  if [ -x "$binary" ]; then
    # Only glibc's libraries: libc, libm, and the dynamic loader (libdl/libpthread/librt are libc
    # since glibc 2.34, but a link may still name them).
    readelf -d "$binary" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | sort >"$tmp/needed"
    others=$(grep -Ev '^(libc\.so\.6|libm\.so\.6|libdl\.so\.2|libpthread\.so\.0|librt\.so\.1|ld-linux-x86-64\.so\.2)$' "$tmp/needed")
    if [ -z "$others" ] && [ -s "$tmp/needed" ]; then ok "NEEDED: $(paste -sd' ' "$tmp/needed")"; else
      bad "NEEDED has non-glibc libraries: $others"
    fi
    newest=$(objdump -T "$binary" | grep -o 'GLIBC_[0-9.]*' | sort -u -V | tail -1)
    if [ -n "$newest" ] && [ "$(printf '%s\nGLIBC_2.34\n' "$newest" | sort -V | tail -1)" = GLIBC_2.34 ]; then
      ok "newest glibc symbol version: $newest (<= 2.34)"
    else
      bad "the binary needs $newest (> GLIBC_2.34): $(objdump -T "$binary" | grep -E 'GLIBC_2\.(3[5-9]|[4-9])' | head -5)"
    fi
    objdump -T "$binary" | grep -q 'GLIBCXX_\|CXXABI_' && bad "the binary imports libstdc++ symbols"
    # Issue 46: under 8 MB, with no libxml2, ICU or OpenSSL linked in (libarchive's writer table
    # brought the first two, 31 MB of ICU data; OpenSSL was one SHA-256). Their marks: ICU's data
    # symbol and version strings, libxml2's and OpenSSL's version strings and error texts.
    size=$(stat -c %s "$binary")
    if [ "$size" -lt 8000000 ]; then ok "the binary is $size bytes (< 8 MB)"; else bad "the binary is $size bytes (>= 8 MB)"; fi
    for mark in icudt icu_7 'ICU ' xmlTextWriter 'libxml2' 'OpenSSL 3' 'OPENSSL_'; do
      grep -a -q -F "$mark" "$binary" && bad "the binary holds '$mark' (libxml2, ICU or OpenSSL linked in)"
    done
    # The formats the doctor reads and writes, through the portable binary: the initramfs's cpio
    # under each compression the kernel reads, and capture bundles (tar.gz) written and replayed.
    for t in initramfs bundle; do
      if [ "$t" = bundle ]; then bash "$src/tests/cli/bundle.sh" "$binary" "$fixtures" >"$tmp/$t.log" 2>&1; else
        bash "$src/tests/cli/initramfs.sh" "$binary" >"$tmp/$t.log" 2>&1; fi
      case $? in
      0) ok "tests/cli/$t.sh with the portable binary" ;;
      77) skip "tests/cli/$t.sh: $(tail -1 "$tmp/$t.log")" ;;
      *) bad "tests/cli/$t.sh with the portable binary: $(grep FAIL "$tmp/$t.log" | head -3)" ;;
      esac
    done
    check_runs tarball "$binary" check --root "$fixture" --no-runtime --color never
    "$binary" --version | grep -q '^halo-doctor ' || bad "tarball binary --version"
  else
    bad "tarball binary is not executable"
  fi
fi

# --- the .deb, installed by dpkg into a clean Debian 12 root ---------------------------------------
if [ -n "$deb" ]; then
  depends=$(dpkg-deb -f "$deb" Depends)
  if [[ $depends =~ ^libc6\ \(\>=\ 2\.[0-9]+\)$ ]]; then ok ".deb Depends: $depends"; else
    bad ".deb Depends names more than libc6: $depends"
  fi
  [ -n "$(dpkg-deb -f "$deb" Maintainer)" ] || bad ".deb has no Maintainer"
  dpkg-deb -c "$deb" >"$tmp/deb-contents"
  grep -q ' ./usr/share/doc/halo-doctor/copyright$' "$tmp/deb-contents" || bad ".deb lacks the copyright file"
  grep -q ' ./usr/share/doc/halo-doctor/changelog.gz$' "$tmp/deb-contents" || bad ".deb lacks the changelog"
  grep -q ' ./usr/share/doc/halo-doctor/report.schema.json$' "$tmp/deb-contents" || bad ".deb lacks report.schema.json"
  cache=${HALO_TOOLROOT_CACHE:-/var/cache/halo-doctor}
  clean=$cache/cleanroot-bookworm-v1.tar
  if [ "$(id -u)" -ne 0 ]; then
    skip ".deb into a clean root: needs root (chroot)"
  elif [ ! -s "$clean" ] && ! command -v mmdebstrap >/dev/null; then
    skip ".deb into a clean root: mmdebstrap is not installed"
  else
    if [ ! -s "$clean" ]; then
      mkdir -p "$cache"
      echo "building the clean root with mmdebstrap --variant=essential (cached in $clean)"
      if timeout 900 mmdebstrap --variant=essential bookworm "$cache/cleanroot.partial.tar" >"$tmp/mmdebstrap.log" 2>&1; then
        mv -f "$cache/cleanroot.partial.tar" "$clean"
      else
        tail -3 "$tmp/mmdebstrap.log"
        rm -f "$cache/cleanroot.partial.tar"
      fi
    fi
    if [ -s "$clean" ]; then
      root=$tmp/debroot
      mkdir "$root"
      tar -C "$root" -xf "$clean"
      cp "$deb" "$root/tmp/"
      mkdir -p "$root/fixture"
      cp -a "$fixture/." "$root/fixture/"
      if chroot "$root" dpkg -i "/tmp/$(basename "$deb")" >"$tmp/dpkg.log" 2>&1; then
        ok "dpkg -i into a clean Debian 12 root (no --force-depends)"
        check_runs ".deb (chroot)" chroot "$root" /usr/bin/halo-doctor check --root /fixture --no-runtime --color never
        chroot "$root" dpkg -r halo-doctor >/dev/null 2>&1 || bad "dpkg -r"
        [ -e "$root/usr/bin/halo-doctor" ] && bad "dpkg -r left the binary"
      else
        bad "dpkg -i into a clean root: $(tail -3 "$tmp/dpkg.log")"
      fi
    else
      skip ".deb into a clean root: mmdebstrap could not build one (no mirror reachable?)"
    fi
  fi
fi

# --- the .rpm ----------------------------------------------------------------------------------------
if [ -z "$rpmfile" ]; then
  if command -v rpmbuild >/dev/null; then bad "no .rpm in $dist"; else skip ".rpm: rpmbuild is not installed"; fi
elif command -v rpm >/dev/null; then
  [ "$(rpm -qp --qf '%{LICENSE}' "$rpmfile" 2>/dev/null)" = MIT ] || bad "RPM License is not MIT"
  # The %changelog made from packaging/debian/changelog (cmake/RpmChangelog.cmake, tests/cli/changelog.sh).
  rpm -qp --changelog "$rpmfile" 2>/dev/null | grep -q "^\* .* - $(dpkg-parsechangelog -l "$src/packaging/debian/changelog" -S Version 2>/dev/null)-1$" ||
    bad "the .rpm lacks the changelog entry of packaging/debian/changelog"
  rpm -qRp "$rpmfile" 2>/dev/null >"$tmp/requires"
  foreign=$(grep -Ev '^(libc\.so\.6|libm\.so\.6|libdl\.so\.2|libpthread\.so\.0|librt\.so\.1|ld-linux-x86-64\.so\.2)(\(.*\))?(\(64bit\))?$|^rtld\(GNU_HASH\)$|^/bin/sh$|^rpmlib\(' "$tmp/requires")
  if [ -z "$foreign" ] && [ -s "$tmp/requires" ]; then ok "RPM Requires are glibc's and /bin/sh only ($(wc -l <"$tmp/requires") lines)"; else
    bad "RPM requires what a glibc-only system lacks: $foreign"
  fi
  rroot=$tmp/rpmroot
  mkdir -p "$rroot"
  rpm --root "$rroot" --initdb 2>/dev/null
  if rpm --root "$rroot" -i --nodeps --nosignature "$rpmfile" >"$tmp/rpm.log" 2>&1; then
    rpm --root "$rroot" -q halo-doctor >/dev/null 2>&1 || bad "rpm -q after rpm -i"
    check_runs ".rpm (rpm --root)" "$rroot/usr/bin/halo-doctor" check --root "$fixture" --no-runtime --color never
  else
    bad "rpm --root -i: $(tail -3 "$tmp/rpm.log")"
  fi
fi

# --- the wheel, into a fresh venv with --no-index -------------------------------------------------
if [ -n "$wheel" ]; then
  if "$py" -m venv "$tmp/venv" >"$tmp/venv.log" 2>&1; then
    venv=$tmp/venv
    if "$venv/bin/python" -m pip install --no-index --no-cache-dir -q "$wheel" >"$tmp/pip.log" 2>&1; then
      ok "pip install --no-index $(basename "$wheel")"
      [ -x "$venv/bin/halo-doctor" ] || bad "the wheel did not install VENV/bin/halo-doctor"
      check_runs "wheel (VENV/bin/halo-doctor)" "$venv/bin/halo-doctor" check --root "$fixture" --no-runtime --color never
      "$venv/bin/python" -m halo_doctor --version | grep -q '^halo-doctor ' || bad "python -m halo_doctor --version"
      # Inside the venv (activated: VIRTUAL_ENV and its bin/ first on PATH) the framework probe
      # judges that venv.
      VIRTUAL_ENV=$venv PATH=$venv/bin:$PATH halo-doctor facts --no-runtime --format json -o "$tmp/venv-facts.json"
      "$py" - "$tmp/venv-facts.json" "$venv" <<'PY' || bad "the framework probe did not judge the venv"
import json, sys
# The fresh venv has no torch: the fact is missing, and says it looked in this venv (not in the
# system site directories).
f = json.load(open(sys.argv[1]))["facts"]["framework.python_env"]
venv = sys.argv[2]
if f["status"] == "ok":
    assert f["value"].startswith(venv), f
else:
    assert f["status"] == "missing" and f"VIRTUAL_ENV={venv}" in f["reason"], f
    assert f"{venv}/lib/python3.*/site-packages" in f["reason"], f
print("ok: inside the venv the framework probe judges it:", f.get("value") or f["reason"][:100])
PY
    else
      bad "pip install --no-index: $(tail -3 "$tmp/pip.log")"
    fi
  else
    skip "the wheel: $py -m venv failed (python3-venv): $(tail -1 "$tmp/venv.log")"
  fi
fi
[ $fail = 0 ] || exit 1
[ $skipped = 0 ] || exit 77
echo "PASS: release artifacts install and run"

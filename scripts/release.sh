#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The release build: one portable binary (cmake/Portable.cmake: libstdc++, libgcc and every library
# with a Debian static archive linked in; libdrm, ROCr and libkmod dlopen()ed; glibc >= 2.34 its
# only run-time requirement) and, from it, what users install (README.md, "Install"):
#   halo-doctor_VERSION_amd64.deb        Debian 12, Ubuntu 22.04 and 24.04
#   halo-doctor-VERSION-1.x86_64.rpm     RHEL/Rocky 9, Fedora (Requires: glibc's sonames only)
#   halo-doctor-VERSION-linux-x86_64.tar.gz   the binary, rules, man page, completions and docs
#   halo_doctor-VERSION-py3-none-manylinux_2_34_x86_64.whl   `pip install` into a venv
#   SHA256SUMS                           `sha256sum -c SHA256SUMS` checks the four above
# Reproducible (issue 46; tests/cli/reproducible.sh builds twice in two directories and compares):
# every timestamp is SOURCE_DATE_EPOCH (the environment's, else the last commit's time), the
# compiler maps the source directory away (-ffile-prefix-map, cmake/Portable.cmake), the tarball is
# written sorted with fixed owners and times, the RPM's build host and time are fixed
# (CMakeLists.txt), and the wheel's zip times come from SOURCE_DATE_EPOCH (wheel's bdist_wheel).
# Usage: scripts/release.sh [OUTDIR]   (default: build-release/dist). Builds in build-release.
# Needs the build set (scripts/setup.sh --build-only) plus liblz4-dev and libacl1-dev (their static
# archives), rpm (rpmbuild) for the .rpm and python3-build, python3-wheel, python3-setuptools for
# the wheel (scripts/setup.sh installs them); the wheel is built offline (--no-isolation) by Debian's
# /usr/bin/python3, whatever python3 is first on PATH.
set -euo pipefail
cd "$(dirname "$0")/.."
src=$PWD
umask 022
export LC_ALL=C TZ=UTC
if [ -z "${SOURCE_DATE_EPOCH:-}" ]; then
  SOURCE_DATE_EPOCH=$(git -C "$src" log -1 --format=%ct 2>/dev/null || true)
  if [ -z "$SOURCE_DATE_EPOCH" ]; then
    echo "release.sh: no SOURCE_DATE_EPOCH and no git history to take it from" >&2
    exit 1
  fi
fi
export SOURCE_DATE_EPOCH
out=$(realpath -m "${1:-build-release/dist}")
build=$src/build-release
jobs=${JOBS:-$(nproc)}
# The configure log stays inside the (ignored) build directory.
mkdir -p "$build"
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DHALO_PORTABLE=ON -DHALO_BUILD_TESTS=OFF -DHALO_BENCH=off \
  -DHALO_WERROR=OFF >"$build/configure.log" 2>&1 || { cat "$build/configure.log"; exit 1; }
cmake --build "$build" -j"$jobs" --target halo-doctor
rm -rf "$out"
mkdir -p "$out"
generators=DEB
command -v rpmbuild >/dev/null && generators+=\;RPM
(cd "$build" && cpack -G "$generators" -B "$out/cpack") >"$out/cpack.log" 2>&1 || { tail -30 "$out/cpack.log"; exit 1; }
find "$out/cpack" -maxdepth 1 -type f \( -name '*.deb' -o -name '*.rpm' \) -exec mv -t "$out" {} +
rm -rf "$out/cpack"

version=$(sed -n 's/^project(halo-doctor VERSION \([0-9.]*\).*/\1/p' CMakeLists.txt)
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT

# The tarball: halo-doctor-VERSION-linux-ARCH/{bin,share,lib,libexec}, what `cmake --install`
# puts under a prefix (the layout CPack's TGZ made), written by GNU tar in name order with owner
# 0:0, SOURCE_DATE_EPOCH as every mtime and gzip -n (no name or time in the gzip header), so two
# builds of one commit give the same bytes.
top=halo-doctor-$version-linux-$(uname -m)
cmake --install "$build" --prefix "$stage/tar/$top" --strip >"$stage/install.log" 2>&1 ||
  { cat "$stage/install.log"; exit 1; }
tar -C "$stage/tar" --format=gnu --sort=name --mtime="@$SOURCE_DATE_EPOCH" --owner=0 --group=0 --numeric-owner \
  --mode=u+rw,go+r,go-w -cf - "$top" | gzip -9 -n >"$out/$top.tar.gz"

# The wheel: the binary as a script of the distribution (pip puts it in the venv's bin/, as ruff's
# and uv's wheels do), tagged py3-none-manylinux_2_34_x86_64 (PEP 600: glibc 2.34 on x86_64, what
# tests/cli/release.sh checks the binary needs).
wheel=$stage/wheel
mkdir -p "$wheel"
cp -r packaging/python/. "$wheel/"
mkdir -p "$wheel/halo_doctor"
install -m 0755 "$build/halo-doctor" "$wheel/halo-doctor"
strip "$wheel/halo-doctor"
cp LICENSE "$wheel/LICENSE"
sed "s/@VERSION@/$version/" packaging/python/pyproject.toml >"$wheel/pyproject.toml"
(cd "$wheel" && /usr/bin/python3 -m build --wheel --no-isolation --outdir "$out" .) >"$out/wheel.log" 2>&1 ||
  { tail -30 "$out/wheel.log"; exit 1; }
rm -f "$out"/*.log "$build.configure.log"
# The checksums beside the packages, in sha256sum's format (`sha256sum -c SHA256SUMS` in the folder).
(
  cd "$out" || exit 1
  mapfile -t rpms < <(compgen -G '*.rpm' || true)
  sha256sum -- *.deb *.tar.gz *.whl "${rpms[@]}" >SHA256SUMS
)
ls -l "$out"

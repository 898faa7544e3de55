#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The release build: one portable binary (cmake/Portable.cmake: libstdc++, libgcc and every library
# with a Debian static archive linked in; libdrm, ROCr and libkmod dlopen()ed; glibc >= 2.34 its
# only run-time requirement) and, from it, what users install (README.md, "Install"):
#   halo-doctor_VERSION_amd64.deb        Debian 12, Ubuntu 22.04 and 24.04
#   halo-doctor-VERSION-1.x86_64.rpm     RHEL/Rocky 9, Fedora (Requires: glibc's sonames only)
#   halo-doctor-VERSION-linux-x86_64.tar.gz   the binary, rules, man page, completions and docs
#   halo_doctor-VERSION-py3-none-manylinux_2_34_x86_64.whl   `pip install` into a venv
# Usage: scripts/release.sh [OUTDIR]   (default: build-release/dist). Builds in build-release.
# Needs the build set (scripts/setup.sh --build-only) plus liblz4-dev and libacl1-dev (their static
# archives), rpm (rpmbuild) for the .rpm and python3-build, python3-wheel, python3-setuptools for
# the wheel (scripts/setup.sh installs them); the wheel is built offline (--no-isolation) by Debian's
# /usr/bin/python3, whatever python3 is first on PATH.
set -euo pipefail
cd "$(dirname "$0")/.."
src=$PWD
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
generators=DEB\;TGZ
command -v rpmbuild >/dev/null && generators+=\;RPM
(cd "$build" && cpack -G "$generators" -B "$out/cpack") >"$out/cpack.log" 2>&1 || { tail -30 "$out/cpack.log"; exit 1; }
find "$out/cpack" -maxdepth 1 -type f \( -name '*.deb' -o -name '*.rpm' -o -name '*.tar.gz' \) -exec mv -t "$out" {} +
rm -rf "$out/cpack"

# The wheel: the binary as a script of the distribution (pip puts it in the venv's bin/, as ruff's
# and uv's wheels do), tagged py3-none-manylinux_2_34_x86_64 (PEP 600: glibc 2.34 on x86_64, what
# tests/cli/release.sh checks the binary needs).
version=$(sed -n 's/^project(halo-doctor VERSION \([0-9.]*\).*/\1/p' CMakeLists.txt)
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
cp -r packaging/python/. "$stage/"
mkdir -p "$stage/halo_doctor"
install -m 0755 "$build/halo-doctor" "$stage/halo-doctor"
strip "$stage/halo-doctor"
cp LICENSE "$stage/LICENSE"
sed "s/@VERSION@/$version/" packaging/python/pyproject.toml >"$stage/pyproject.toml"
(cd "$stage" && /usr/bin/python3 -m build --wheel --no-isolation --outdir "$out" .) >"$out/wheel.log" 2>&1 ||
  { tail -30 "$out/wheel.log"; exit 1; }
rm -f "$out"/*.log "$build.configure.log"
ls -l "$out"

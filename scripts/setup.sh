#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Installs what halo-doctor needs on Debian 12 (bookworm), as root.
#   setup.sh --build-only   what building and running halo-doctor needs (scripts/check.sh)
#   setup.sh                that, and what the whole test suite needs (scripts/test.sh)
# Safe to run again: only missing packages are installed. README.md gives the sizes of both sets.
set -euo pipefail
build_only=0 list=0
for arg in "$@"; do
  case "$arg" in
  --build-only) build_only=1 ;;
  --list) list=1 ;; # print the package names, install nothing (README.md's numbers)
  *) echo "usage: setup.sh [--build-only] [--list]" >&2; exit 2 ;;
  esac
done
# Building and running: the compiler, CMake, and the libraries' development packages (README.md,
# "Building by hand", says what each is for). libdrm-dev and libhsa-runtime-dev are headers only:
# libdrm and ROCr are dlopen()ed at run time.
# libvalijson-dev (header-only) is not in this list: its Depends name the library of every adapter
# it ships (Qt 5, Poco, jsoncpp, RapidJSON, picojson: 200 packages, 350 MB installed) while the
# doctor uses only the nlohmann adapter, so the build set unpacks that Debian package's headers into
# .deps/valijson (CMakeLists.txt looks there) and the test set installs it. git is not needed to
# build (a clone has it; the version then says "git unknown").
build_packages=(
  build-essential cmake pkg-config
  libcli11-dev nlohmann-json3-dev libfmt-dev libspdlog-dev
  # nettle's SHA-256 for the rule set's digest (libnettle.a in the release binary, the library
  # libarchive itself links; issue 46)
  nettle-dev
  libdrm-dev libhsa-runtime-dev libpugixml-dev libarchive-dev libre2-dev
  libyaml-cpp-dev libkmod-dev
  # src/fleet/read.cpp: `fleet compare` reads the nodes' facts files with simdjson's On Demand API
  # (issue 42; the portable release build, without a static archive of it, goes without)
  libsimdjson-dev
  # checks/framework/offload_bundle.cpp: the ELF section and compressed offload bundles of libtorch_hip.so
  libelf-dev libzstd-dev zlib1g-dev
)
# The test suite (scripts/test.sh, .ci/run): every real tool a test compares the doctor with.
test_packages=(
  catch2 libvalijson-dev git
  # tests/fuzz: libFuzzer targets (clang; libFuzzer itself is in libclang-rt-14-dev)
  clang libclang-rt-14-dev
  # .ci/lint.sh: the repo's .clang-format and curated .clang-tidy (run-clang-tidy is in clang-tidy)
  clang-format clang-tidy
  # .ci/run: compiler cache for its five builds (a re-run on the same machine rebuilds from it)
  ccache
  python3 python3-jsonschema shellcheck strace hyperfine prometheus libxml2-utils dpkg-dev util-linux zsh
  # tests/cli/framework_torch.sh: a real torch tree (Debian's CPU build) for the framework probe,
  # with Debian's torchvision and torchaudio beside it (torch-companion-mismatch)
  python3-torch python3-torchvision python3-torchaudio
  # tests/cli/offload_bundle.sh: HIP objects from the real clang-19 and clang-offload-bundler-19
  # (compressed offload bundles), linked by clang-19 into a shared library with lld-19 (clang
  # links amdgcn code objects with ld.lld only), the targets the doctor reads from libtorch_hip.so
  clang-19 clang-tools-19 lld-19 binutils
  # tests/cli/slurm.sh (a real single-node Slurm) and the RPM built by CPack in tests/cli/install.sh
  slurm-wlm munge rpm
  # tests/cli/fix_real_tools.sh (a Debian root with the real boot tools), the .deb installed into a
  # clean root (tests/cli/release.sh) and the NixOS snippet check
  mmdebstrap nix-bin
  # tests/cli/release.sh (scripts/release.sh): the static archives of libarchive's lz4 and acl
  # (cmake/Portable.cmake), and the wheel built offline and installed into a fresh venv
  liblz4-dev libacl1-dev python3-build python3-wheel python3-setuptools python3-venv
  # tests/cli/kmod_diff.py: the parsers against real kmod (modprobe -c);
  # tests/cli/module_signature.sh: modules built with gcc, signed with openssl as the kernel's
  # sign-file does, compressed with zstd and xz, indexed by depmod, compared with modinfo
  kmod gcc openssl zstd xz-utils
  # tests/cli/virt.sh: where the doctor runs, against the real systemd-detect-virt
  # and tests/cli/systemd_unit.sh: systemd-analyze security --offline=yes rates the unit
  systemd
  # tests/cli/initramfs.sh: a real multi-segment initramfs (cpio; its main archive compressed by
  # each compressor the kernel unpacks and the doctor reads) and the real lsinitramfs
  cpio zstd gzip bzip2 xz-utils lz4 initramfs-tools-core
)
packages=("${build_packages[@]}")
[ $build_only = 1 ] || packages+=("${test_packages[@]}")
if [ $list = 1 ]; then
  printf '%s\n' "${packages[@]}"
  exit 0
fi
# The valijson headers without libvalijson-dev's Depends (see above): apt-get download fetches the
# Debian package (no root needed), dpkg-deb -x unpacks it under .deps/valijson.
valijson_headers() {
  local deps=$PWD/.deps/valijson tmp
  [ -f /usr/include/valijson/validator.hpp ] || [ -f "$deps/usr/include/valijson/validator.hpp" ] && return 0
  tmp=$(mktemp -d)
  if ! (cd "$tmp" && apt-get download -q libvalijson-dev >/dev/null 2>&1); then
    [ "$(id -u)" -eq 0 ] && apt-get update -q >/dev/null
    (cd "$tmp" && apt-get download -q libvalijson-dev >/dev/null)
  fi
  rm -rf "$deps"
  mkdir -p "$deps"
  dpkg-deb -x "$tmp"/libvalijson-dev_*.deb "$deps"
  rm -rf "$tmp"
  echo "setup: unpacked libvalijson-dev's headers into $deps"
}
cd "$(dirname "$0")/.."
what="build and test"
[ $build_only = 1 ] && what="build"
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all $what dependencies are installed"
  [ $build_only = 0 ] || valijson_headers
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "setup: run as root (or with sudo) to install: ${missing[*]}" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q --no-install-recommends "${missing[@]}"
echo "setup: installed ${missing[*]}"
[ $build_only = 0 ] || valijson_headers

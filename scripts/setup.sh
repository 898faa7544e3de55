#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Installs what halo-doctor needs to build and test on Debian 12 (bookworm), as root.
# Safe to run again: apt-get skips what is already installed.
set -euo pipefail
packages=(
  build-essential cmake pkg-config git
  libcli11-dev nlohmann-json3-dev libfmt-dev libspdlog-dev libssl-dev
  libdrm-dev libhsa-runtime-dev libpugixml-dev libarchive-dev libre2-dev libvalijson-dev
  libyaml-cpp-dev libkmod-dev
  # checks/offload_bundle.cpp: the ELF section and compressed offload bundles of libtorch_hip.so
  libelf-dev libzstd-dev zlib1g-dev
  catch2
  # tests/fuzz: libFuzzer targets (clang; libFuzzer itself is in libclang-rt-14-dev)
  clang libclang-rt-14-dev
  # .ci/lint.sh: the repo's .clang-format and curated .clang-tidy (run-clang-tidy is in clang-tidy)
  clang-format clang-tidy
  python3 python3-jsonschema shellcheck strace hyperfine prometheus libxml2-utils dpkg-dev util-linux zsh
  # tests/cli/framework_torch.sh: a real torch tree (Debian's CPU build) for the framework probe,
  # with Debian's torchvision and torchaudio beside it (torch-companion-mismatch)
  python3-torch python3-torchvision python3-torchaudio
  # tests/cli/offload_bundle.sh: HIP objects from the real clang-19 and clang-offload-bundler-19
  # (compressed offload bundles), the targets the doctor reads from libtorch_hip.so
  clang-19 clang-tools-19 binutils
  # tests/cli/slurm.sh (a real single-node Slurm) and the RPM built by CPack in tests/cli/install.sh
  slurm-wlm munge rpm
  # tests/cli/fix_real_tools.sh (a Debian root with the real boot tools) and the NixOS snippet check
  mmdebstrap nix-bin
  # tests/cli/kmod_diff.py: the parsers against real kmod (modprobe -c);
  # tests/cli/module_signature.sh: modules built with gcc, signed with openssl as the kernel's
  # sign-file does, compressed with zstd and xz, indexed by depmod, compared with modinfo
  kmod gcc openssl zstd xz-utils
  # tests/cli/virt.sh: where the doctor runs, against the real systemd-detect-virt
  systemd
  # tests/cli/initramfs.sh: a real multi-segment initramfs (cpio, zstd) and the real lsinitramfs
  cpio zstd initramfs-tools-core
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all build and test dependencies are installed"
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

# halo-doctor fix for strix-halo (NixOS 25.05 (Warbler))
# Written by halo-doctor <version>. On NixOS /etc is built from the
# configuration, so this is a snippet, not a script: merge it into
# /etc/nixos/configuration.nix (or a module it imports), then run
#   sudo nixos-rebuild boot && sudo reboot
# (nixos-rebuild rebuilds the initrd with the modprobe options), then: halo-doctor check
# Rules covered: ttm-limit-low, amdgpu-gttsize-deprecated
# Needs a person [gfx1151-cwsr-hang]: add amdgpu.cwsr_enable=0 to the kernel command line and reboot (halo-doctor fix leaves this to you: it is a workaround, and without CWSR the GPU cannot preempt running compute waves)
# Needs a person [gfx1151-cwsr-hang]: or install a 6.18 or later kernel, where the driver's default handles it
# Needs a person [gfx1151-kernel-min]: install kernel 6.18.4 or later (Fedora 43, Ubuntu 26.04, Arch 2026.02.01 and later ship it), or on Ubuntu 24.04 the HWE kernel 6.17.0-19 or the OEM kernel 6.14.0-1018 or later
# Needs a person [gfx1151-kernel-min]: reboot into it
# Needs a person [amdgpu-gttsize-deprecated]: delete gttsize= from 'options amdgpu' lines in /etc/modprobe.d if present, then rebuild the initramfs
{ config, lib, pkgs, ... }:
{
  # Delete these definitions from your configuration (this snippet replaces them):
  #   /etc/nixos/amd-gpu.nix:5:     "ttm.pages_limit=16393924" # half of RAM, the default
  #   /etc/nixos/amd-gpu.nix:6:     "amdgpu.gttsize=122880"
  # ttm-limit-low, amdgpu-gttsize-deprecated
  boot.kernelParams = lib.mkAfter [ "ttm.page_pool_size=31719424" "ttm.pages_limit=31719424" ];
  # Remove from boot.kernelParams wherever your configuration sets them: amdgpu.gttsize
  # ttm-limit-low (pages are 4 KiB: GiB x 262144)
  boot.extraModprobeConfig = ''
    options ttm page_pool_size=31719424 pages_limit=31719424
  '';
}

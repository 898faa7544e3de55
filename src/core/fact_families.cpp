// SPDX-License-Identifier: MIT
// The one map from fact family (a key's first segment) to the folder of checks/ that holds every
// probe and derivation providing it (include/halo/probe.hpp fact_families()).
#include <halo/probe.hpp>

#include <algorithm>
#include <array>

namespace halo {

namespace {
// Sorted by prefix. tests/source/families.py reads this table and checks every probe's file
// against it; docs/architecture.md draws the folders.
constexpr auto kFamilies = std::to_array<FactFamily>({
    {"access", "host"},           // /dev/kfd and render-node permissions (device_access)
    {"amd", "gpus"},              // AMD GPUs present, unbound, passed through
    {"amdgpu", "kernel_args"},    // the amdgpu module: state, parameters, module file, blockers
    {"apu", "gpus"},              // the APU wherever KFD lists it
    {"boot", "boot"},             // boot loader, Secure Boot, lockdown
    {"drm", "gpus"},              // /sys/class/drm cards
    {"env", "framework"},         // the environment training will see
    {"firmware", "firmware"},     // the firmware package
    {"framework", "framework"},   // PyTorch and its companions
    {"fw", "gpus"},               // each card's firmware versions
    {"gpu", "gpus"},              // the GPU list gpu.N.*
    {"gpu_metrics", "gpus"},      // each card's gpu_metrics table
    {"group", "host"},            // the render/video groups
    {"host", "host"},             // host name, container, virtualization, tuning
    {"hsa", "runtime"},           // ROCr, in a child process
    {"initramfs", "boot"},        // the boot image's firmware and options
    {"kernel", "kernel_args"},    // release and command line
    {"kernel_log", "kernel_log"}, // amdgpu, firmware and hang lines of the kernel log
    {"kfd", "gpus"},              // KFD topology
    {"libdrm", "gpus"},           // libdrm_amdgpu queries
    {"mem", "host"},              // /proc/meminfo
    {"modparam", "kernel_args"},  // module options the kernel rejects
    {"modprobe", "kernel_args"},  // modprobe.d
    {"numa", "host"},             // NUMA nodes
    {"os", "host"},               // os-release
    {"pci", "gpus"},              // AMD PCI GPUs
    {"plan", "plan"},             // the training run given
    {"ras", "gpus"},              // RAS counters per card
    {"rocm", "runtime"},          // the ROCm release: installations on disk, the one judged
    {"runenv", "host"},           // container markers, DMI
    {"ttm", "ttm"},               // the TTM module and its limits
    {"user", "host"},             // the user, groups and limits
    {"wsl", "host"},              // WSL2: /dev/dxg, librocdxg, DXCore
    {"xgmi", "gpus"},             // XGMI hives
});
} // namespace

std::span<const FactFamily> fact_families() {
  return kFamilies;
}

std::string_view family_folder(std::string_view key_or_pattern) {
  const std::string_view prefix = key_or_pattern.substr(0, key_or_pattern.find('.'));
  const auto* it = std::find_if(kFamilies.begin(), kFamilies.end(),
                                [&](const FactFamily& f) { return f.prefix == prefix; });
  return it == kFamilies.end() ? std::string_view() : it->folder;
}

} // namespace halo

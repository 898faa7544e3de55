// SPDX-License-Identifier: MIT
// Where the doctor runs (`host.container`, `host.runs_in`) and whether the machine is a virtual
// machine (`host.virtualization`), from the runenv probe's markers: a derivation (no files).
#include "derivation.hpp"
#include "probes.hpp"

#include <halo/fact_keys.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace halo::probes {
namespace {

namespace host = fact_keys::host;
namespace runenv = fact_keys::runenv;

/// Where the doctor runs (checks/host/runenv.cpp lists the markers and their sources). A container
/// also shows when PCI lists no AMD GPU while /dev/kfd exists (the device was passed in).
/// Whether the machine is a virtual machine, as systemd-detect-virt decides it from DMI (systemd
/// src/basic/virt.c detect_vm_dmi_vendor(): the first of product_name, sys_vendor, board_vendor,
/// bios_vendor, product_version that starts with a known vendor), else from the CPU's hypervisor
/// flag ("vm-other"); "none" when neither says so; not probed when nothing could be read.
void derive_virtualization(FactSet& facts) {
  static constexpr auto kVendors = std::to_array<std::pair<std::string_view, std::string_view>>(
      {{"KVM", "kvm"},
       {"OpenStack", "kvm"},
       {"KubeVirt", "kvm"},
       {"Amazon EC2", "amazon"},
       {"QEMU", "qemu"},
       {"VMware", "vmware"},
       {"VMW", "vmware"},
       {"innotek GmbH", "oracle"},
       {"VirtualBox", "oracle"},
       {"Xen", "xen"},
       {"Bochs", "bochs"},
       {"Parallels", "parallels"},
       {"BHYVE", "bhyve"},
       {"Hyper-V", "microsoft"},
       {"Apple Virtualization", "apple"}});
  bool any = false;
  for (const std::string_view key :
       {runenv::dmi_product_name, runenv::dmi_sys_vendor, runenv::dmi_board_vendor,
        runenv::dmi_bios_vendor, runenv::dmi_product_version}) {
    const auto v = facts.get<std::string>(key);
    if (!v) continue;
    any = true;
    for (const auto& [prefix, kind] : kVendors) {
      if (v->rfind(prefix, 0) != 0) continue;
      facts.put_ok(std::string(host::virtualization), std::string(kind),
                   fmt::format("derived: {} is \"{}\" (systemd-detect-virt's DMI table)", key, *v));
      return;
    }
  }
  if (const auto hv = facts.get<bool>(runenv::cpu_hypervisor_flag)) {
    facts.put_ok(std::string(host::virtualization), std::string(*hv ? "vm-other" : "none"),
                 *hv ? "derived: the CPU's hypervisor flag (/proc/cpuinfo)"
                     : "derived: no VM vendor in DMI, no hypervisor flag");
    return;
  }
  if (any)
    facts.put_ok(std::string(host::virtualization), std::string("none"),
                 "derived: no VM vendor in DMI (no CPU flags to read)");
  else
    facts.put_status(std::string(host::virtualization), Status::missing, "derived",
                     "neither /sys/class/dmi/id nor /proc/cpuinfo could be read");
}

void derive_runenv(FactSet& facts) {
  std::string kind;
  std::vector<std::string> evidence;
  auto yes = [&](std::string_view k) { return facts.get<bool>(k) == true; };
  if (yes(runenv::toolboxenv)) {
    kind = "toolbox";
    evidence.emplace_back("/run/.toolboxenv");
  } else if (facts.get<std::string>(fact_keys::env::key("container_id"))) {
    kind = "distrobox";
    evidence.emplace_back("CONTAINER_ID in the environment");
  } else if (yes(runenv::kubernetes)) {
    kind = "kubernetes";
    evidence.emplace_back("/var/run/secrets/kubernetes.io/serviceaccount");
  } else if (yes(runenv::containerenv)) {
    kind = "podman";
    evidence.emplace_back("/run/.containerenv");
  } else if (yes(runenv::dockerenv)) {
    kind = "docker";
    evidence.emplace_back("/.dockerenv");
  } else if (auto c = facts.get<std::string>(runenv::systemd_container)) {
    kind = *c;
    evidence.push_back("/run/systemd/container: " + *c);
  } else if (auto e = facts.get<std::string>(runenv::cgroup_engine); e && !e->empty()) {
    kind = *e == "kubepods" ? "kubernetes" : *e == "libpod" ? "podman" : *e;
    evidence.push_back("/proc/1/cgroup names " + *e);
  } else if (facts.get_int(fact_keys::pci::amd_gpu_count) == std::int64_t{0} &&
             facts.get<bool>(fact_keys::access::kfd_exists) == true) {
    kind = "container";
    evidence.emplace_back("/dev/kfd exists but /sys/bus/pci lists no AMD GPU");
  }
  facts.put_ok(std::string(host::container), !kind.empty(), "derived: container markers");
  // The two halves of the kernel/ROCm matrix: /proc, /sys and /dev show the running kernel, the
  // host's, while ROCm and PyTorch are the image's (issue 19; ROCm's Docker how-to: "Docker
  // containers share the kernel with the host OS"). Appended to the matrix rules' messages.
  facts.put_ok(std::string(host::stack_origin),
               kind.empty() ? std::string()
                            : fmt::format(" (ROCm user space from this {} container's image; the "
                                          "kernel, amdgpu and KFD are the host's)",
                                          kind),
               fmt::format("derived: {}", host::runs_in));
  // WSL2 (checks/host/wsl.cpp) is its own place, not a container: the distro runs on Microsoft's
  // kernel with the Windows driver's GPU. A container inside WSL2 stays that container.
  const bool wsl2 = kind.empty() && facts.get<bool>(fact_keys::wsl::wsl2) == true;
  if (wsl2) evidence.emplace_back(fact_keys::wsl::wsl2);
  facts.put_ok(std::string(host::runs_in),
               wsl2           ? std::string("wsl2")
               : kind.empty() ? std::string("host")
                              : kind,
               evidence.empty() ? std::string("derived: no container marker")
                                : fmt::format("derived: {}", fmt::join(evidence, ", ")));
}

} // namespace

std::unique_ptr<Probe> make_host_derivation() {
  return std::make_unique<BasicDerivation>("host",
                                           [](const DeriveContext& /*ctx*/, FactSet& facts) {
                                             derive_runenv(facts);
                                             derive_virtualization(facts);
                                           });
}

} // namespace halo::probes

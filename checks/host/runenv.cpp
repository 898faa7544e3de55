// SPDX-License-Identifier: MIT
// Probe: where the doctor runs: bare metal (or a VM), or a container, with the evidence.
// Markers, each from its engine's documentation or source:
//   /.dockerenv                 Docker creates it in every container (moby daemon/initlayer).
//   /run/.containerenv          podman writes it (podman-run(1): engine=, name=, image=,
//   rootless=). /run/.toolboxenv            toolbox adds it (containers/toolbox,
//   src/cmd/create.go). CONTAINER_ID in the env     distrobox sets it (distrobox-enter).
//   /run/systemd/container      systemd's container interface (systemd.io/CONTAINER_INTERFACE):
//                               "lxc", "systemd-nspawn", "docker", "podman", ...
//   /var/run/secrets/kubernetes.io/serviceaccount  a Kubernetes pod (kubelet's token mount).
//   /proc/1/cgroup              cgroup v1 paths naming docker, kubepods or libpod.
// And what the process may do there, from /proc/self/status (proc(5)):
//   Seccomp:  0 disabled, 1 strict, 2 filter (since Linux 3.8). Docker's default profile
//             (moby profiles/seccomp/default.json) allows get_mempolicy, mbind and set_mempolicy
//             only with CAP_SYS_NICE; libhsakmt's bind_mem_to_numa() (ROCT-Thunk-Interface
//             src/fmm.c) then logs "mbind is blocked by seccomp" and goes on without the NUMA
//             placement. ROCm's Docker how-to recommends --security-opt seccomp=unconfined.
//   CapEff:   the effective capability mask in hex; CAP_SYS_NICE is bit 23
//             (include/uapi/linux/capability.h).
// And whether the machine is a virtual machine, with systemd-detect-virt's evidence (systemd
// src/basic/virt.c detect_vm_dmi_vendor(): the DMI strings below, read in this order) and the
// CPU's hypervisor bit (CPUID leaf 1 ECX bit 31, shown by Linux as the "hypervisor" flag in
// /proc/cpuinfo: arch/x86/include/asm/cpufeatures.h X86_FEATURE_HYPERVISOR).
#include "probe_util.hpp"
#include "probes.hpp"

#include <halo/fact_keys.hpp>

#include <fmt/format.h>

#include <array>
#include <charconv>
#include <optional>
#include <string_view>

namespace halo::probes {
namespace {

/// The DMI strings systemd-detect-virt compares (virt.c detect_vm_dmi_vendor), and only those:
/// /sys/class/dmi/id also holds product_serial, board_serial, chassis_serial and product_uuid,
/// which identify the machine and are never read, so a capture bundle never holds them.
constexpr std::array<const char*, 5> kDmiFiles = {"product_name", "sys_vendor", "board_vendor",
                                                  "bios_vendor", "product_version"};
/// The fact of each of kDmiFiles, in its order (runenv.dmi.<file>).
constexpr std::array<std::string_view, kDmiFiles.size()> kDmiKeys = {
    fact_keys::runenv::dmi_product_name, fact_keys::runenv::dmi_sys_vendor,
    fact_keys::runenv::dmi_board_vendor, fact_keys::runenv::dmi_bios_vendor,
    fact_keys::runenv::dmi_product_version};

/// The DMI files it reads, from the table collect() reads (kDmiFiles), after the reads of its
/// checks/host/facts.json entry.
std::vector<std::string> dmi_reads() {
  std::vector<std::string> out;
  out.reserve(kDmiFiles.size());
  for (const char* f : kDmiFiles)
    out.push_back(std::string("/sys/class/dmi/id/") + f);
  return out;
}

void collect(const ProbeContext& ctx, FactSet& facts) {
  const Root& root = ctx.root;
  if (ctx.host_config_root() != nullptr)
    facts.put_ok(std::string(fact_keys::runenv::host_root), ctx.host_basis(),
                 "host root detection");
  else
    facts.put_status(std::string(fact_keys::runenv::host_root), Status::missing,
                     "host root detection", ctx.host_basis());
  facts.put_ok(std::string(fact_keys::runenv::dockerenv), root.exists("/.dockerenv"),
               "/.dockerenv");
  facts.put_ok(std::string(fact_keys::runenv::toolboxenv), root.exists("/run/.toolboxenv"),
               "/run/.toolboxenv");
  if (ReadResult r = root.read("/run/.containerenv", std::size_t{64} * 1024); r.ok()) {
    // key="value" lines; only the engine and name are kept.
    for (const auto& line : split_lines(r.text)) {
      for (const char* k : {"engine", "name", "rootless"}) {
        const std::string pre = std::string(k) + "=";
        if (line.rfind(pre, 0) != 0) continue;
        std::string v = line.substr(pre.size());
        if (v.size() >= 2 && v.front() == '"' && v.back() == '"') v = v.substr(1, v.size() - 2);
        facts.put_ok(fact_keys::runenv::containerenv_of(k), v, r.path);
      }
    }
    facts.put_ok(std::string(fact_keys::runenv::containerenv), true, r.path);
  } else {
    facts.put_ok(std::string(fact_keys::runenv::containerenv), root.exists("/run/.containerenv"),
                 r.path);
  }
  if (ReadResult r = root.read_trimmed("/run/systemd/container"); r.ok())
    facts.put_ok(std::string(fact_keys::runenv::systemd_container), r.text, r.path);
  else
    facts.put_status(std::string(fact_keys::runenv::systemd_container), r.status, r.path, r.reason);
  facts.put_ok(std::string(fact_keys::runenv::kubernetes),
               root.exists("/var/run/secrets/kubernetes.io/serviceaccount") ||
                   root.exists("/run/secrets/kubernetes.io/serviceaccount"),
               "/var/run/secrets/kubernetes.io/serviceaccount");
  if (ReadResult r = root.read("/proc/self/status", std::size_t{64} * 1024); r.ok()) {
    bool seccomp = false;
    bool caps = false;
    for (const auto& line : split_lines(r.text)) {
      if (line.rfind("Seccomp:", 0) == 0) {
        if (auto v = parse_int(std::string_view(line).substr(8)); v && *v >= 0 && *v <= 2) {
          facts.put_ok(std::string(fact_keys::runenv::seccomp_mode), *v, r.path + " (Seccomp:)");
          seccomp = true;
        }
      } else if (line.rfind("CapEff:", 0) == 0) {
        std::string_view hex = std::string_view(line).substr(7);
        while (!hex.empty() && (hex.front() == ' ' || hex.front() == '\t'))
          hex.remove_prefix(1);
        std::uint64_t mask = 0;
        const auto [end, ec] = std::from_chars(hex.data(), hex.data() + hex.size(), mask, 16);
        if (ec == std::errc() && end == hex.data() + hex.size() && !hex.empty()) {
          constexpr unsigned kCapSysNice = 23; // include/uapi/linux/capability.h
          facts.put_ok(std::string(fact_keys::runenv::cap_sys_nice),
                       ((mask >> kCapSysNice) & 1U) != 0,
                       r.path + " (CapEff: bit 23, CAP_SYS_NICE)");
          caps = true;
        }
      }
    }
    if (!seccomp)
      facts.put_status(
          std::string(fact_keys::runenv::seccomp_mode), Status::error, r.path,
          "no valid \"Seccomp:\" line (kernel without CONFIG_SECCOMP, or not a status file)");
    if (!caps)
      facts.put_status(std::string(fact_keys::runenv::cap_sys_nice), Status::error, r.path,
                       "no valid \"CapEff:\" line");
  } else {
    facts.put_status(std::string(fact_keys::runenv::seccomp_mode), r.status, r.path, r.reason);
    facts.put_status(std::string(fact_keys::runenv::cap_sys_nice), r.status, r.path, r.reason);
  }
  for (std::size_t i = 0; i < kDmiFiles.size(); ++i) {
    const std::string path = std::string("/sys/class/dmi/id/") + kDmiFiles.at(i);
    const std::string key(kDmiKeys.at(i));
    if (ReadResult r = root.read_trimmed(path); r.ok())
      facts.put_ok(key, r.text.substr(0, 128), r.path);
    else
      facts.put_status(key, r.status, r.path, r.reason);
  }
  // The first "flags" line is enough: every CPU of an x86 machine has the same hypervisor bit.
  if (ReadResult r = root.read("/proc/cpuinfo", std::size_t{256} * 1024); r.ok()) {
    std::optional<bool> hv;
    for (const auto& line : split_lines(r.text)) {
      if (line.rfind("flags", 0) != 0) continue;
      const auto colon = line.find(':');
      if (colon == std::string::npos) continue;
      const std::string flags = " " + line.substr(colon + 1) + " ";
      hv = flags.find(" hypervisor ") != std::string::npos;
      break;
    }
    if (hv)
      facts.put_ok(std::string(fact_keys::runenv::cpu_hypervisor_flag), *hv, r.path + " (flags)");
    else
      facts.put_status(std::string(fact_keys::runenv::cpu_hypervisor_flag), Status::missing, r.path,
                       "no \"flags\" line (not an x86 CPU)");
  } else {
    facts.put_status(std::string(fact_keys::runenv::cpu_hypervisor_flag), r.status, r.path,
                     r.reason);
  }
  std::string engine;
  if (ReadResult r = root.read("/proc/1/cgroup", std::size_t{64} * 1024); r.ok()) {
    for (const char* word : {"kubepods", "docker", "libpod", "lxc"})
      if (engine.empty() && r.text.find(word) != std::string::npos) engine = word;
    facts.put_ok(std::string(fact_keys::runenv::cgroup_engine), engine, r.path);
  } else {
    facts.put_status(std::string(fact_keys::runenv::cgroup_engine), r.status, r.path, r.reason);
  }
}

} // namespace

std::unique_ptr<Probe> make_runenv_probe() {
  auto probe = std::make_unique<BasicProbe>("runenv", collect);
  probe->add_reads(dmi_reads());
  return probe;
}

} // namespace halo::probes

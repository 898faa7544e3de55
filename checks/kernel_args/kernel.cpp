// SPDX-License-Identifier: MIT
// Probe: the running kernel's release and command line.
// Reads /proc/sys/kernel/osrelease (uname -r) and /proc/cmdline.
#include "cmdline.hpp"
#include "probes.hpp"

#include <halo/fact_keys.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <map>

namespace halo::probes {
namespace {

void collect(const ProbeContext& ctx, FactSet& facts) {
  ReadResult rel = ctx.root.read_trimmed("/proc/sys/kernel/osrelease");
  if (!rel.ok()) {
    for (const std::string_view k : {fact_keys::kernel::release, fact_keys::kernel::version})
      facts.put_status(std::string(k), rel.status, rel.path, rel.reason);
  } else {
    facts.put_ok(std::string(fact_keys::kernel::release), rel.text, rel.path);
    if (auto kr = parse_kernel_release(rel.text)) {
      facts.put_ok(std::string(fact_keys::kernel::version), kr->version, rel.path);
      if (kr->ubuntu_abi) {
        facts.put_ok(std::string(fact_keys::kernel::ubuntu_abi),
                     static_cast<std::int64_t>(*kr->ubuntu_abi), rel.path);
        facts.put_ok(std::string(fact_keys::kernel::ubuntu_flavor), kr->ubuntu_flavor, rel.path);
      } else {
        for (const std::string_view k :
             {fact_keys::kernel::ubuntu_abi, fact_keys::kernel::ubuntu_flavor})
          facts.put_status(std::string(k), Status::missing, rel.path,
                           "not an Ubuntu-style release (X.Y.Z-ABI-flavor)");
      }
    } else {
      facts.put_status(std::string(fact_keys::kernel::version), Status::error, rel.path,
                       fmt::format("not a kernel release: '{}'", rel.text.substr(0, 60)));
    }
  }

  ReadResult cmd = ctx.root.read_trimmed("/proc/cmdline");
  if (!cmd.ok()) {
    for (const std::string_view k :
         {fact_keys::kernel::cmdline, fact_keys::kernel::cmdline_names,
          fact_keys::kernel::cmdline_duplicates, fact_keys::kernel::cmdline_init_args,
          fact_keys::kernel::cmdline_modprobe_blacklist, fact_keys::kernel::cmdline_kmod_truncated})
      facts.put_status(std::string(k), cmd.status, cmd.path, cmd.reason);
    return;
  }
  facts.put_ok(std::string(fact_keys::kernel::cmdline), cmd.text, cmd.path);
  std::vector<std::string> names;
  std::vector<std::string> duplicates;
  for (const KernelArg& a : parse_cmdline(cmd.text)) {
    if (std::find(names.begin(), names.end(), a.name) != names.end()) {
      if (std::find(duplicates.begin(), duplicates.end(), a.name) == duplicates.end())
        duplicates.push_back(a.name);
    } else {
      names.push_back(a.name);
    }
    // The last occurrence wins: parse_args() assigns parameters in order.
    facts.put_ok(fact_keys::kernel::cmdline_param(a.name), a.value.value_or(""), cmd.path);
  }
  facts.put_ok(std::string(fact_keys::kernel::cmdline_names), names, cmd.path);
  facts.put_ok(std::string(fact_keys::kernel::cmdline_duplicates), duplicates, cmd.path);
  facts.put_ok(std::string(fact_keys::kernel::cmdline_init_args), cmdline_init_args(cmd.text),
               cmd.path);

  // What kmod takes from the same line for loadable modules (it reads past `--`).
  const KmodCmdline kmod = parse_kmod_cmdline(cmd.text);
  std::map<std::string, std::vector<std::string>> per_module;
  for (const auto& o : kmod.options)
    per_module[o.module].push_back(o.option);
  for (const auto& [m, opts] : per_module)
    facts.put_ok(fact_keys::kernel::cmdline_module_options(m), opts, cmd.path);
  facts.put_ok(std::string(fact_keys::kernel::cmdline_modprobe_blacklist), kmod.blacklist,
               cmd.path + " (modprobe.blacklist=, every occurrence)");
  facts.put_ok(std::string(fact_keys::kernel::cmdline_kmod_truncated), kmod.truncated,
               cmd.path + " (kmod reads 4095 bytes: KCMD_LINE_SIZE)");
}

} // namespace

std::unique_ptr<Probe> make_kernel_probe() {
  return std::make_unique<BasicProbe>("kernel", collect);
}

} // namespace halo::probes

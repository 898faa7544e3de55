// SPDX-License-Identifier: MIT
// The kernel_args family's derivations about amdgpu (no files): module options the kernel will
// reject (`modparam.*`), whether amdgpu is live and what stops it at the next boot
// (`amdgpu.live`, `amdgpu.blocked_by`, `modprobe.install_*`), and `amdgpu.gttsize`.
#include "derivation.hpp"
#include "gpus/gpus.hpp"
#include "kernel_args/cmdline.hpp"
#include "kernel_args/module_options.hpp"
#include "probes.hpp"
#include "ttm/ttm_modules.hpp"

#include <halo/fact_keys.hpp>
#include <halo/units.hpp>

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

/// Values the kernel will reject when the module loads. For a loadable module the load fails
/// (load_module returns -EINVAL: "ttm: `abc' invalid for parameter `pages_limit'"), and
/// amdgpu, which needs ttm, fails with it.
void derive_invalid_options(FactSet& facts) {
  std::vector<std::string> invalid;
  std::vector<std::string> modules;
  for (const char* m : {kTtmModules[0], kTtmModules[1], kTtmModules[2], "amdgpu"}) {
    for (const auto& [name, opt] : module_options(facts, m)) {
      const IntParam* ip = int_param(m, name);
      if (ip == nullptr || kernel_int(*ip, opt.value)) continue;
      invalid.push_back(fmt::format("{}.{}{} ({}): not a valid {} for the kernel ({})", m, name,
                                    opt.value ? "=" + *opt.value : std::string(" without a value"),
                                    opt.source, ip->is_unsigned ? "unsigned integer" : "integer",
                                    ip->is_unsigned ? "kstrtoul" : "kstrtoint"));
      if (std::find(modules.begin(), modules.end(), m) == modules.end()) modules.emplace_back(m);
    }
  }
  if (const Fact* hidden = hidden_host_config(facts); hidden != nullptr && invalid.empty()) {
    put_hidden(facts, std::string(fact_keys::modparam::invalid), *hidden);
    put_hidden(facts, std::string(fact_keys::modparam::invalid_modules), *hidden);
    return;
  }
  facts.put_ok(std::string(fact_keys::modparam::invalid), invalid,
               "derived: modprobe.d and /proc/cmdline as kmod and kernel/params.c read them");
  facts.put_ok(std::string(fact_keys::modparam::invalid_modules), modules,
               "derived: modprobe.d and /proc/cmdline as kmod and kernel/params.c read them");
}

/// modprobe.d install lines as they act on amdgpu when kmod loads it (udev's coldplug by PCI
/// alias and `modprobe amdgpu` both call kmod_module_probe_insert_module, libkmod-module.c):
/// kmod runs amdgpu's own line instead of inserting it, and, for each dependency on the probe
/// list (the TTM module), that module's line too; the dependency's list is built by
/// __kmod_module_fill_softdep(), which ignores install lines only for modules with softdeps, so
/// even `modprobe --ignore-install amdgpu` runs ttm's. A dependency's command that fails stops
/// kmod before amdgpu ("else if (err < 0) break" for a required module); one that exits 0 without
/// loading it leaves amdgpu's symbols unresolved and its insertion fails. Built into the kernel,
/// amdgpu and its dependencies need no kmod at all (kmod_module_get_initstate: builtin).
/// Checked against kmod 30's `modprobe -n -v` by tests/cli/kmod_diff.py.
void derive_install_lines(FactSet& facts, std::vector<std::string>& blocked) {
  static constexpr std::array<std::string_view, 3> kStops = {
      fact_keys::modprobe::install_stops_amdgpu, fact_keys::modprobe::install_unjudged,
      fact_keys::modprobe::install_no_effect};
  if (const Fact* hidden = hidden_host_config(facts)) {
    for (const std::string_view k : kStops)
      put_hidden(facts, std::string(k), *hidden);
    return;
  }
  std::vector<std::string> stops;
  std::vector<std::string> unjudged;
  std::vector<std::string> no_effect;
  auto line = [&](const std::string& m) {
    const Fact* f = facts.find(fact_keys::modprobe::install(m));
    const auto pattern =
        facts.get<std::string>(fact_keys::modprobe::install_pattern(m)).value_or(m);
    return fmt::format("install {} {} ({}{})", pattern,
                       *facts.get<std::string>(fact_keys::modprobe::install(m)), f->source,
                       pattern == m ? std::string() : ", which matches " + m);
  };
  auto why = [&](const std::string& m) {
    return facts.get<std::string>(fact_keys::modprobe::install_why(m)).value_or("");
  };
  const bool builtin = facts.get<bool>(fact_keys::amdgpu::builtin) == true;
  if (!builtin && facts.find(fact_keys::modprobe::install("amdgpu")) != nullptr) {
    const auto e =
        facts.get<std::string>(fact_keys::modprobe::install_effect("amdgpu")).value_or("");
    if (e == "blocks")
      stops.push_back(fmt::format("{}: kmod runs it instead of loading amdgpu, and {}",
                                  line("amdgpu"), why("amdgpu")));
    else if (e == "unknown")
      unjudged.push_back(fmt::format("{}: kmod runs it instead of loading amdgpu ({})",
                                     line("amdgpu"), why("amdgpu")));
  }
  // The TTM module amdgpu needs: the one it holds now, else the in-kernel driver's ttm or a DKMS
  // build's amdttm/amd_ttm (ttm.cpp), else any of them.
  // The next load's amdgpu is the module file modprobe would pick (amdgpu.module.origin, read
  // when amdgpu is not live); a live one tells by its version file.
  std::vector<std::string> ttms;
  if (auto used = facts.get<std::string>(fact_keys::ttm::module)) {
    ttms.push_back(*used);
  } else if (auto origin = facts.get<std::string>(fact_keys::amdgpu::module_origin)) {
    if (*origin == "dkms")
      ttms = {kTtmModules[1], kTtmModules[2]};
    else if (*origin != "builtin")
      ttms = {kTtmModules[0]};
  } else if (facts.get<bool>(fact_keys::amdgpu::loaded) == true) {
    if (facts.get<bool>(fact_keys::amdgpu::dkms) == true)
      ttms = {kTtmModules[1], kTtmModules[2]};
    else
      ttms = {kTtmModules[0]};
  } else {
    ttms = {kTtmModules.begin(), kTtmModules.end()};
  }
  for (const auto& m : ttms) {
    if (builtin || facts.find(fact_keys::modprobe::install(m)) == nullptr) continue;
    const auto e =
        facts.get<std::string>(fact_keys::modprobe::install_effect_as_dependency(m)).value_or("");
    if (e == "blocks")
      stops.push_back(fmt::format(
          "{}: amdgpu needs {}, and kmod runs this line instead of loading it whenever it loads "
          "amdgpu (--ignore-install amdgpu included): {}",
          line(m), m, why(m)));
    else if (e == "unknown")
      unjudged.push_back(fmt::format(
          "{}: kmod runs it instead of loading {}, which amdgpu needs ({})", line(m), m, why(m)));
  }
  // amdkfd has been part of amdgpu.ko since Linux 4.20 (drivers/gpu/drm/amd/amdkfd is built by
  // amdgpu's Makefile): nothing loads a module of that name, so its install line does nothing.
  if (facts.find(fact_keys::modprobe::install("amdkfd")) != nullptr)
    no_effect.push_back(fmt::format("{}: amdkfd is part of amdgpu since Linux 4.20, so no module "
                                    "of that name is ever loaded and this line never runs",
                                    line("amdkfd")));
  for (const auto& s : stops)
    blocked.push_back(s);
  facts.put_ok(std::string(fact_keys::modprobe::install_stops_amdgpu), stops,
               "derived: modprobe.d install lines");
  facts.put_ok(std::string(fact_keys::modprobe::install_unjudged), unjudged,
               "derived: modprobe.d install lines");
  facts.put_ok(std::string(fact_keys::modprobe::install_no_effect), no_effect,
               "derived: modprobe.d install lines");
}

void derive_driver(FactSet& facts) {
  // amdgpu is live when its initstate says so, or when it is built in and bound to a card.
  bool live = facts.get<std::string>(fact_keys::amdgpu::initstate) == std::string("live");
  if (!live && facts.get<bool>(fact_keys::amdgpu::builtin) == true) {
    for_each_amd_card(facts, [&](const std::string& c) {
      if (facts.get<std::string>(fact_keys::drm::driver(c)) == std::string("amdgpu")) live = true;
    });
  }
  facts.put_ok(std::string(fact_keys::amdgpu::live), live,
               "derived: /sys/module/amdgpu/initstate, DRM driver links");

  std::vector<std::string> blocked;
  // amdgpu_init() (amdgpu_drv.c): `nomodeset` stops amdgpu only while amdgpu.modeset is the
  // default -1 (drm_firmware_drivers_only()); amdgpu.modeset=0 stops it on any command line;
  // nomodeset amdgpu.modeset=1 loads it. modeset reaches amdgpu from modprobe.d or the command
  // line.
  const auto amdgpu_opts = module_options(facts, "amdgpu");
  std::optional<std::int64_t> modeset = -1;
  std::string modeset_src;
  if (auto it = amdgpu_opts.find("modeset"); it != amdgpu_opts.end()) {
    modeset = kernel_int(kIntParams[7], it->second.value);
    modeset_src = it->second.source;
  }
  if (modeset == std::int64_t{0})
    blocked.push_back(fmt::format("amdgpu.modeset=0 ({})", modeset_src));
  // With amdgpu live, nomodeset did not stop it on this kernel (amdgpu.modeset=1, or a kernel that
  // applies nomodeset to display-class devices only): it is not a blocker then.
  if (!live && facts.find(fact_keys::kernel::cmdline_param("nomodeset")) != nullptr &&
      modeset == std::int64_t{-1})
    blocked.emplace_back("nomodeset (kernel command line)");
  // modprobe.blacklist= (kmod, every occurrence, comma-separated whole names) and the kernel's
  // own module_blacklist= (kernel/module/main.c: one string parameter, comma-separated, the last
  // occurrence wins).
  const auto mp_bl =
      facts.get<std::vector<std::string>>(fact_keys::kernel::cmdline_modprobe_blacklist)
          .value_or(std::vector<std::string>{});
  if (std::find(mp_bl.begin(), mp_bl.end(), "amdgpu") != mp_bl.end())
    blocked.emplace_back("modprobe.blacklist=...amdgpu... (kernel command line)");
  if (auto v = facts.get<std::string>(fact_keys::kernel::cmdline_param("module_blacklist"))) {
    std::string_view list = *v;
    while (true) {
      const auto comma = list.find(',');
      if (list.substr(0, comma) == "amdgpu") {
        blocked.push_back(fmt::format("module_blacklist={} (kernel command line)", *v));
        break;
      }
      if (comma == std::string_view::npos) break;
      list.remove_prefix(comma + 1);
    }
  }
  if (facts.find(fact_keys::modprobe::blacklist_source("amdgpu")) != nullptr)
    blocked.push_back("blacklist amdgpu (" +
                      *facts.get<std::string>(fact_keys::modprobe::blacklist_source("amdgpu")) +
                      ")");
  derive_install_lines(facts, blocked);
  for (const auto& m : facts.get<std::vector<std::string>>(fact_keys::modparam::invalid_modules)
                           .value_or(std::vector<std::string>{}))
    blocked.push_back(fmt::format("an invalid {} option makes the module fail to load", m));
  facts.put_ok(std::string(fact_keys::amdgpu::blocked_by), blocked,
               "derived: /proc/cmdline, modprobe.d");
}

void derive_gttsize(FactSet& facts) {
  // amdgpu.gttsize (MiB, -1 = auto) is deprecated; the configured value is what the user wrote,
  // the active one what the module took (0600: root only).
  std::optional<std::int64_t> v;
  std::string src;
  const auto opts = module_options(facts, "amdgpu");
  if (auto it = opts.find("gttsize"); it != opts.end()) {
    v = kernel_int(kIntParams[6], it->second.value);
    src = it->second.source;
  } else if (auto active = facts.get<std::int64_t>(fact_keys::amdgpu::param_gttsize)) {
    // An int parameter: the probe reads it as the decimal param_get_int prints.
    v = *active;
    src = facts.find(fact_keys::amdgpu::param_gttsize)->source;
  }
  const bool set = v && *v != -1;
  facts.put_ok(std::string(fact_keys::amdgpu::gttsize_set), set,
               src.empty() ? "derived: not configured" : src);
  if (set) {
    facts.put_ok(std::string(fact_keys::amdgpu::gttsize_mib), *v, src);
    // kstrtoint: at most 2^31 MiB, which fits; checked like every byte product.
    if (const auto bytes = units::checked_bytes(*v, units::kMiB))
      facts.put_ok(std::string(fact_keys::amdgpu::gttsize_bytes), *bytes, src);
    else
      facts.put_status(std::string(fact_keys::amdgpu::gttsize_bytes), Status::error, src,
                       units::overflow_reason(*v, "MiB", units::kMiB));
  } else {
    facts.put_status(std::string(fact_keys::amdgpu::gttsize_mib), Status::missing, kDerived,
                     "amdgpu.gttsize is not set");
    facts.put_status(std::string(fact_keys::amdgpu::gttsize_bytes), Status::missing, kDerived,
                     "amdgpu.gttsize is not set");
  }
}

} // namespace

std::unique_ptr<Probe> make_modparam_derivation() {
  return std::make_unique<BasicDerivation>(
      "modparam",
      [](const DeriveContext& /*ctx*/, FactSet& facts) { derive_invalid_options(facts); });
}

std::unique_ptr<Probe> make_amdgpu_driver_derivation() {
  return std::make_unique<BasicDerivation>(
      "amdgpu_driver", [](const DeriveContext& /*ctx*/, FactSet& facts) { derive_driver(facts); });
}

std::unique_ptr<Probe> make_gttsize_derivation() {
  return std::make_unique<BasicDerivation>(
      "amdgpu_gttsize",
      [](const DeriveContext& /*ctx*/, FactSet& facts) { derive_gttsize(facts); });
}

} // namespace halo::probes

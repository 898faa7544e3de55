// SPDX-License-Identifier: MIT
// Kernel command-line and modprobe.d arguments that do nothing: known misspellings, parameters the
// loaded module does not have, `amd_iommu=` words the kernel ignores: a derivation (no files).
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

/// Known misspellings seen in the field; the kernel ignores them ("unknown parameter ignored").
struct Typo {
  const char* name;
  const char* hint;
};
constexpr std::array<Typo, 8> kTypos = {{
    {"amdgpu.gtt_size",
     "did you mean amdgpu.gttsize? It is deprecated anyway: use ttm.pages_limit (ROCm/ROCm#5595)"},
    {"ttm.pages_pool_size", "did you mean ttm.page_pool_size?"},
    {"amdttm.pages_pool_size", "did you mean amdttm.page_pool_size?"},
    {"amd_ttm.pages_pool_size", "did you mean amd_ttm.page_pool_size?"},
    {"ttm.page_limit", "did you mean ttm.pages_limit?"},
    {"amdttm.page_limit", "did you mean amdttm.pages_limit?"},
    {"ttm.pool_size", "did you mean ttm.page_pool_size?"},
    {"amdgpu.gtt", "did you mean amdgpu.gttsize? Use ttm.pages_limit instead"},
}};

/// True when the loaded module `m` lists its parameters in /sys/module/m/parameters and `p` is
/// not among them. Parameters with permission 0 are absent from sysfs, so only amdgpu and the TTM
/// modules, whose lists the probes hold, are judged; other modules give false.
bool lacks_param(const FactSet& facts, const std::string& m, const std::string& p) {
  std::optional<std::vector<std::string>> known;
  if (m == "amdgpu")
    known = facts.get<std::vector<std::string>>(fact_keys::amdgpu::param_names);
  else if (is_ttm_module(m))
    known = facts.get<std::vector<std::string>>(fact_keys::ttm::module_param_names(m));
  return known && std::find(known->begin(), known->end(), p) == known->end();
}

void derive_suspects(FactSet& facts) {
  std::vector<std::string> names;
  std::vector<std::string> hints;
  auto flag = [&](const std::string& name, const std::string& hint) {
    if (std::find(names.begin(), names.end(), name) != names.end()) return;
    names.push_back(name);
    hints.push_back(fmt::format("{}: {}", name, hint));
  };
  const auto cmd_names = facts.get<std::vector<std::string>>(fact_keys::kernel::cmdline_names);
  if (!cmd_names) {
    facts.put_status(std::string(fact_keys::kernel::cmdline_suspect_names), Status::missing,
                     kDerived, "no kernel command line");
    facts.put_status(std::string(fact_keys::kernel::cmdline_suspect_hints), Status::missing,
                     kDerived, "no kernel command line");
    return;
  }
  for (const auto& n : *cmd_names) {
    for (const auto& t : kTypos)
      if (n == t.name) flag(n, std::string("no such parameter, ") + t.hint);
    // A module parameter the loaded module does not have is ignored by the kernel.
    auto dot = n.find('.');
    if (dot != std::string::npos) {
      const std::string m = n.substr(0, dot);
      const std::string p = n.substr(dot + 1);
      if (lacks_param(facts, m, p))
        flag(n, fmt::format(
                    "the loaded {} module has no parameter '{}' (see /sys/module/{}/parameters)", m,
                    p, m));
    }
  }
  // parse_amd_iommu_options() (drivers/iommu/amd/init.c): comma-separated words, each matched by
  // prefix (strncmp) against this list; anything else is logged as "AMD-Vi: Unknown option - 'x'"
  // and ignored, so `amd_iommu=pt` and `amd_iommu=on` do nothing
  // (kyuz0/amd-strix-halo-toolboxes#66).
  if (auto v = facts.get<std::string>(fact_keys::kernel::cmdline_param("amd_iommu"))) {
    static constexpr std::array<std::string_view, 9> kAmdIommuWords = {
        "fullflush", "force_enable", "off",         "force_isolation", "pgtbl_v1",
        "pgtbl_v2",  "irtcachedis",  "nohugepages", "v2_pgsizes_only"};
    std::string_view rest = *v;
    std::vector<std::string> unknown_words;
    while (!rest.empty()) {
      const auto comma = rest.find(',');
      const std::string_view word = rest.substr(0, comma);
      const bool known =
          std::any_of(kAmdIommuWords.begin(), kAmdIommuWords.end(),
                      [&](std::string_view k) { return word.substr(0, k.size()) == k; });
      if (!known) unknown_words.emplace_back(word);
      if (comma == std::string_view::npos) break;
      rest.remove_prefix(comma + 1);
      while (!rest.empty() && rest.front() == ',')
        rest.remove_prefix(1);
    }
    if (v->empty()) unknown_words.emplace_back("");
    if (!unknown_words.empty())
      flag("amd_iommu",
           fmt::format("amd_iommu={} has no effect: the kernel knows only fullflush, force_enable, "
                       "off, force_isolation, pgtbl_v1/v2, irtcachedis, nohugepages and "
                       "v2_pgsizes_only, and logs \"AMD-Vi: Unknown option - '{}'\" for the rest "
                       "(drivers/iommu/amd/init.c). For passthrough write iommu=pt; to disable the "
                       "IOMMU, amd_iommu=off (faster memory on Strix Halo, but no NPU and no VFIO; "
                       "kyuz0/amd-strix-halo-toolboxes#66)",
                       *v, unknown_words.front()));
  }
  for (const auto& n : *cmd_names) {
    if (n == "Modprobe.blacklist" || n == "Module_blacklist")
      flag(n, "kernel parameter names are case-sensitive: write modprobe.blacklist");
  }
  const std::string src = facts.find(fact_keys::kernel::cmdline_names)->source;
  facts.put_ok(std::string(fact_keys::kernel::cmdline_suspect_names), names, src);
  facts.put_ok(std::string(fact_keys::kernel::cmdline_suspect_hints), hints, src);

  // modprobe.d options for parameters the module does not have.
  std::vector<std::string> mp_hints;
  // modprobe.options.MODULE.PARAM, PARAM as modprobe.d wrote it (any number of segments).
  const std::string head = fact_keys::modprobe::prefix::options() + ".";
  for (const Fact* opt : facts.match(head + "**")) {
    const Fact& f = *opt;
    const std::string& key = f.key;
    if (!f.ok()) continue;
    const std::string rest = key.substr(head.size());
    const auto dot = rest.find('.');
    const std::string m = rest.substr(0, dot);
    const std::string p = rest.substr(dot + 1);
    const auto notes = facts.get<std::vector<std::string>>(fact_keys::modprobe::note_words(m))
                           .value_or(std::vector<std::string>{});
    const bool after_hash = std::find(notes.begin(), notes.end(), p) != notes.end();
    if (after_hash && !lacks_param(facts, m, p) &&
        facts.get<std::vector<std::string>>(m == "amdgpu"
                                                ? std::string(fact_keys::amdgpu::param_names)
                                                : fact_keys::ttm::module_param_names(m)))
      mp_hints.push_back(fmt::format(
          "options {} ... {}={} ({}): this follows a '#' but is applied: kmod starts a comment "
          "only at the beginning of a line (libkmod-config.c)",
          m, p, *facts.get<std::string>(key), f.source));
    else if (!after_hash && lacks_param(facts, m, p))
      mp_hints.push_back(
          fmt::format("options {} {} ({}): the module has no parameter '{}'", m, p, f.source, p));
  }
  if (const Fact* hidden = hidden_host_config(facts))
    put_hidden(facts, std::string(fact_keys::modprobe::suspect_hints), *hidden);
  else
    facts.put_ok(std::string(fact_keys::modprobe::suspect_hints), mp_hints,
                 "derived: modprobe.d, /sys/module/*/parameters");
}

} // namespace

std::unique_ptr<Probe> make_cmdline_suspects_derivation() {
  return std::make_unique<BasicDerivation>(
      "cmdline_suspects",
      [](const DeriveContext& /*ctx*/, FactSet& facts) { derive_suspects(facts); });
}

} // namespace halo::probes

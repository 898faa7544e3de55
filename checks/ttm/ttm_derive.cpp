// SPDX-License-Identifier: MIT
// The TTM limits configured for the module amdgpu uses (command line and modprobe.d), those aimed
// at modules it does not use, and the recommended limit for `--reserve`: a derivation (no files).
#include "derivation.hpp"
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

/// The value of a TTM parameter as configured for module `m`: kernel command line first (kmod
/// appends it after modprobe.d's options, so it wins), then modprobe.d. A value the kernel
/// rejects is `invalid` (see modparam.invalid), not a number.
struct Configured {
  std::optional<std::int64_t> cmdline;
  std::optional<std::int64_t> modprobe;
  std::string cmdline_src;
  std::string modprobe_src;
};

namespace ttm_keys = fact_keys::ttm;

/// A fact given in pages and in bytes (`..._pages`, `..._bytes`).
struct PagesBytes {
  std::string_view pages;
  std::string_view bytes;
};

/// A TTM parameter configured for the module amdgpu uses: its facts from the kernel command line,
/// from modprobe.d, and the value that wins (ttm.configured.*).
struct ConfiguredKeys {
  const char* param = nullptr;
  PagesBytes cmdline;
  PagesBytes modprobe;
  PagesBytes configured;
};

constexpr std::array<ConfiguredKeys, 2> kConfiguredKeys = {{
    {"pages_limit",
     {ttm_keys::cmdline_pages_limit_pages, ttm_keys::cmdline_pages_limit_bytes},
     {ttm_keys::modprobe_pages_limit_pages, ttm_keys::modprobe_pages_limit_bytes},
     {ttm_keys::configured_pages_limit_pages, ttm_keys::configured_pages_limit_bytes}},
    {"page_pool_size",
     {ttm_keys::cmdline_page_pool_size_pages, ttm_keys::cmdline_page_pool_size_bytes},
     {ttm_keys::modprobe_page_pool_size_pages, ttm_keys::modprobe_page_pool_size_bytes},
     {ttm_keys::configured_page_pool_size_pages, ttm_keys::configured_page_pool_size_bytes}},
}};

Configured configured(const FactSet& facts, const std::string& m, const std::string& p) {
  Configured c;
  const IntParam* ip = int_param(m, p);
  // The command line alone, as kmod reads it (it includes options after `--`).
  const auto from_cmd = module_options(facts, m, true);
  if (auto it = from_cmd.find(p); it != from_cmd.end()) {
    c.cmdline = ip != nullptr ? kernel_int(*ip, it->second.value) : std::nullopt;
    c.cmdline_src = it->second.source;
  }
  const std::string mk = fact_keys::modprobe::options(m, p);
  if (auto v = facts.get<std::string>(mk)) {
    c.modprobe = ip != nullptr ? kernel_int(*ip, std::optional<std::string>(*v)) : std::nullopt;
    c.modprobe_src = facts.find(mk)->source;
  }
  return c;
}

/// The recommended TTM limit in GiB, pages and bytes.
constexpr std::array<std::string_view, 3> kRecommended = {
    ttm_keys::recommended_gib, ttm_keys::recommended_pages, ttm_keys::recommended_bytes};

void derive_ttm(FactSet& facts, const ProbeOptions& opt) {
  const std::array<std::string, 3> modules = {kTtmModules[0], kTtmModules[1], kTtmModules[2]};
  auto used = facts.get<std::string>(ttm_keys::module);

  std::vector<std::string> elsewhere;
  for (const auto& m : modules) {
    if (used && m == *used) continue;
    for (const ConfiguredKeys& k : kConfiguredKeys) {
      const std::string p = k.param;
      const Configured c = configured(facts, m, p);
      if (!c.cmdline_src.empty())
        elsewhere.push_back(fmt::format("{}.{} (kernel command line)", m, p));
      if (!c.modprobe_src.empty())
        elsewhere.push_back(fmt::format("{}.{} ({})", m, p, c.modprobe_src));
    }
  }
  const Fact* hidden = hidden_host_config(facts);
  if (used && hidden != nullptr)
    put_hidden(facts, std::string(ttm_keys::configured_elsewhere), *hidden);
  else if (used)
    facts.put_ok(std::string(ttm_keys::configured_elsewhere), elsewhere,
                 "derived: /proc/cmdline, modprobe.d");
  else
    facts.put_status(std::string(ttm_keys::configured_elsewhere), Status::missing, kDerived,
                     "the TTM module amdgpu uses is unknown");

  bool on_used = false;
  for (const ConfiguredKeys& k : kConfiguredKeys) {
    if (!used) {
      for (const PagesBytes& pb : {k.configured, k.cmdline, k.modprobe})
        for (const std::string_view key : {pb.pages, pb.bytes})
          facts.put_status(std::string(key), Status::missing, kDerived,
                           "the TTM module amdgpu uses is unknown");
      continue;
    }
    Configured c = configured(facts, *used, k.param);
    auto put = [&](const PagesBytes& key, std::optional<std::int64_t> v, const std::string& src) {
      if (v) {
        facts.put_ok(std::string(key.pages), *v, src);
        // The kernel accepts any unsigned long (ttm_tt.c: module_param_named(pages_limit, ...,
        // ulong)), far beyond RAM: pages x 4096 in checked arithmetic, and a product beyond 64
        // bits is an error naming where it was set, never a wrapped value. ttm-limit-overcommit
        // then cannot pass (the _pages fact exists, the _bytes comparison is unknown).
        if (const auto bytes = units::checked_bytes(*v, units::kTtmPageBytes))
          facts.put_ok(std::string(key.bytes), *bytes, src);
        else
          facts.put_status(std::string(key.bytes), Status::error, src,
                           units::overflow_reason(*v, "pages", units::kTtmPageBytes));
      } else if (!src.empty()) {
        for (const std::string_view each : {key.pages, key.bytes})
          facts.put_status(std::string(each), Status::error, src,
                           "set to a value the kernel rejects: the module fails to load (see "
                           "modparam.invalid)");
      } else {
        facts.put_status(std::string(key.pages), Status::missing, kDerived, "not configured");
        facts.put_status(std::string(key.bytes), Status::missing, kDerived, "not configured");
      }
    };
    put(k.cmdline, c.cmdline, c.cmdline_src);
    const bool cmd_given = !c.cmdline_src.empty();
    if (hidden != nullptr) {
      for (const auto& [mp, conf] : {std::pair{k.modprobe.pages, k.configured.pages},
                                     std::pair{k.modprobe.bytes, k.configured.bytes}}) {
        put_hidden(facts, std::string(mp), *hidden);
        if (!cmd_given) put_hidden(facts, std::string(conf), *hidden);
      }
      if (cmd_given) put(k.configured, c.cmdline, c.cmdline_src);
      on_used = on_used || c.cmdline;
      continue;
    }
    put(k.modprobe, c.modprobe, c.modprobe_src);
    put(k.configured, cmd_given ? c.cmdline : c.modprobe,
        cmd_given ? c.cmdline_src : c.modprobe_src);
    on_used = on_used || c.cmdline || c.modprobe;
  }
  if (used && hidden != nullptr && !on_used)
    put_hidden(facts, std::string(ttm_keys::configured_on_used), *hidden);
  else if (used)
    facts.put_ok(std::string(ttm_keys::configured_on_used), on_used,
                 "derived: /proc/cmdline, modprobe.d");
  else
    facts.put_status(std::string(ttm_keys::configured_on_used), Status::missing, kDerived,
                     "the TTM module amdgpu uses is unknown");

  // Recommended limit: MemTotal minus --reserve, in whole GiB, as 4 KiB pages. The largest limit
  // that leaves the OS its headroom is one fact, read by ttm-limit-overcommit and fix --ttm-limit.
  if (auto total = facts.get_int(fact_keys::mem::total_bytes)) {
    facts.put_ok(std::string(ttm_keys::max_limit_bytes), *total - units::kTtmOsHeadroomBytes,
                 "derived: MemTotal - 2 GiB (units::kTtmOsHeadroomBytes)");
    const std::int64_t gib = *total / units::kGiB - opt.reserve_gib;
    const std::string src =
        fmt::format("derived: floor(MemTotal in GiB) - reserve {} GiB", opt.reserve_gib);
    // gib <= MemTotal / 2^30, so neither product can overflow; checked all the same.
    const auto pages = units::checked_bytes(gib, units::kPagesPerGiB);
    const auto bytes = units::checked_bytes(gib, units::kGiB);
    if (gib > 0 && pages && bytes) {
      facts.put_ok(std::string(ttm_keys::recommended_gib), gib, src);
      facts.put_ok(std::string(ttm_keys::recommended_pages), *pages, src);
      facts.put_ok(std::string(ttm_keys::recommended_bytes), *bytes, src);
    } else if (gib > 0) {
      for (const std::string_view k : kRecommended)
        facts.put_status(std::string(k), Status::error,
                         facts.find(fact_keys::mem::total_bytes)->source,
                         units::overflow_reason(gib, "GiB", units::kGiB));
    } else {
      for (const std::string_view k : kRecommended)
        facts.put_status(std::string(k), Status::error, src,
                         "--reserve leaves no memory for the GPU");
    }
  } else {
    for (const std::string_view k :
         {kRecommended[0], kRecommended[1], kRecommended[2], ttm_keys::max_limit_bytes})
      facts.put_status(std::string(k), Status::missing, kDerived, "MemTotal unknown");
  }
}

} // namespace

std::unique_ptr<Probe> make_ttm_configured_derivation() {
  return std::make_unique<BasicDerivation>(
      "ttm_configured",
      [](const DeriveContext& ctx, FactSet& facts) { derive_ttm(facts, ctx.options); });
}

} // namespace halo::probes

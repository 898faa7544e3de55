// SPDX-License-Identifier: MIT
// The TTM limits configured for the module amdgpu uses (command line and modprobe.d), those aimed
// at modules it does not use, and the recommended limit for `--reserve`: a derivation (no files).
#include "derivation.hpp"
#include "kernel_args/module_options.hpp"
#include "probes.hpp"
#include "ttm/ttm_modules.hpp"

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

Configured configured(const FactSet& facts, const std::string& m, const std::string& p) {
  Configured c;
  const IntParam* ip = int_param(m, p);
  // The command line alone, as kmod reads it (it includes options after `--`).
  const auto from_cmd = module_options(facts, m, true);
  if (auto it = from_cmd.find(p); it != from_cmd.end()) {
    c.cmdline = ip != nullptr ? kernel_int(*ip, it->second.value) : std::nullopt;
    c.cmdline_src = it->second.source;
  }
  const std::string mk = "modprobe.options." + m + "." + p;
  if (auto v = facts.get<std::string>(mk)) {
    c.modprobe = ip != nullptr ? kernel_int(*ip, std::optional<std::string>(*v)) : std::nullopt;
    c.modprobe_src = facts.find(mk)->source;
  }
  return c;
}

void derive_ttm(FactSet& facts, const ProbeOptions& opt) {
  const std::array<std::string, 3> modules = {kTtmModules[0], kTtmModules[1], kTtmModules[2]};
  const std::array<std::string, 2> params = {"pages_limit", "page_pool_size"};
  auto used = facts.get<std::string>("ttm.module");

  std::vector<std::string> elsewhere;
  for (const auto& m : modules) {
    if (used && m == *used) continue;
    for (const auto& p : params) {
      const Configured c = configured(facts, m, p);
      if (!c.cmdline_src.empty())
        elsewhere.push_back(fmt::format("{}.{} (kernel command line)", m, p));
      if (!c.modprobe_src.empty())
        elsewhere.push_back(fmt::format("{}.{} ({})", m, p, c.modprobe_src));
    }
  }
  const Fact* hidden = hidden_host_config(facts);
  if (used && hidden != nullptr)
    put_hidden(facts, "ttm.configured_elsewhere", *hidden);
  else if (used)
    facts.put_ok("ttm.configured_elsewhere", elsewhere, "derived: /proc/cmdline, modprobe.d");
  else
    facts.put_status("ttm.configured_elsewhere", Status::missing, kDerived,
                     "the TTM module amdgpu uses is unknown");

  bool on_used = false;
  for (const auto& p : params) {
    const std::string base = "ttm.configured." + p;
    const std::string cmd_key = "ttm.cmdline." + p;
    const std::string mp_key = "ttm.modprobe." + p;
    if (!used) {
      for (const auto& k : {base, cmd_key, mp_key})
        for (const char* u : {"_pages", "_bytes"})
          facts.put_status(k + u, Status::missing, kDerived,
                           "the TTM module amdgpu uses is unknown");
      continue;
    }
    Configured c = configured(facts, *used, p);
    auto put = [&](const std::string& key, std::optional<std::int64_t> v, const std::string& src) {
      if (v) {
        facts.put_ok(key + "_pages", *v, src);
        // The kernel accepts any unsigned long (ttm_tt.c: module_param_named(pages_limit, ...,
        // ulong)), far beyond RAM: pages x 4096 in checked arithmetic, and a product beyond 64
        // bits is an error naming where it was set, never a wrapped value. ttm-limit-overcommit
        // then cannot pass (the _pages fact exists, the _bytes comparison is unknown).
        if (const auto bytes = units::checked_bytes(*v, units::kTtmPageBytes))
          facts.put_ok(key + "_bytes", *bytes, src);
        else
          facts.put_status(key + "_bytes", Status::error, src,
                           units::overflow_reason(*v, "pages", units::kTtmPageBytes));
      } else if (!src.empty()) {
        for (const char* u : {"_pages", "_bytes"})
          facts.put_status(key + u, Status::error, src,
                           "set to a value the kernel rejects: the module fails to load (see "
                           "modparam.invalid)");
      } else {
        facts.put_status(key + "_pages", Status::missing, kDerived, "not configured");
        facts.put_status(key + "_bytes", Status::missing, kDerived, "not configured");
      }
    };
    put(cmd_key, c.cmdline, c.cmdline_src);
    const bool cmd_given = !c.cmdline_src.empty();
    if (hidden != nullptr) {
      for (const char* u : {"_pages", "_bytes"}) {
        put_hidden(facts, mp_key + u, *hidden);
        if (!cmd_given) put_hidden(facts, base + u, *hidden);
      }
      if (cmd_given) put(base, c.cmdline, c.cmdline_src);
      on_used = on_used || c.cmdline;
      continue;
    }
    put(mp_key, c.modprobe, c.modprobe_src);
    put(base, cmd_given ? c.cmdline : c.modprobe, cmd_given ? c.cmdline_src : c.modprobe_src);
    on_used = on_used || c.cmdline || c.modprobe;
  }
  if (used && hidden != nullptr && !on_used)
    put_hidden(facts, "ttm.configured_on_used", *hidden);
  else if (used)
    facts.put_ok("ttm.configured_on_used", on_used, "derived: /proc/cmdline, modprobe.d");
  else
    facts.put_status("ttm.configured_on_used", Status::missing, kDerived,
                     "the TTM module amdgpu uses is unknown");

  // Recommended limit: MemTotal minus --reserve, in whole GiB, as 4 KiB pages. The largest limit
  // that leaves the OS its headroom is one fact, read by ttm-limit-overcommit and fix --ttm-limit.
  if (auto total = facts.get_int("mem.total_bytes")) {
    facts.put_ok("ttm.max_limit_bytes", *total - units::kTtmOsHeadroomBytes,
                 "derived: MemTotal - 2 GiB (units::kTtmOsHeadroomBytes)");
    const std::int64_t gib = *total / units::kGiB - opt.reserve_gib;
    const std::string src =
        fmt::format("derived: floor(MemTotal in GiB) - reserve {} GiB", opt.reserve_gib);
    // gib <= MemTotal / 2^30, so neither product can overflow; checked all the same.
    const auto pages = units::checked_bytes(gib, units::kPagesPerGiB);
    const auto bytes = units::checked_bytes(gib, units::kGiB);
    if (gib > 0 && pages && bytes) {
      facts.put_ok("ttm.recommended_gib", gib, src);
      facts.put_ok("ttm.recommended_pages", *pages, src);
      facts.put_ok("ttm.recommended_bytes", *bytes, src);
    } else if (gib > 0) {
      for (const char* k :
           {"ttm.recommended_gib", "ttm.recommended_pages", "ttm.recommended_bytes"})
        facts.put_status(k, Status::error, facts.find("mem.total_bytes")->source,
                         units::overflow_reason(gib, "GiB", units::kGiB));
    } else {
      for (const char* k :
           {"ttm.recommended_gib", "ttm.recommended_pages", "ttm.recommended_bytes"})
        facts.put_status(k, Status::error, src, "--reserve leaves no memory for the GPU");
    }
  } else {
    for (const char* k : {"ttm.recommended_gib", "ttm.recommended_pages", "ttm.recommended_bytes",
                          "ttm.max_limit_bytes"})
      facts.put_status(k, Status::missing, kDerived, "MemTotal unknown");
  }
}

} // namespace

std::unique_ptr<Probe> make_ttm_configured_derivation() {
  return std::make_unique<BasicDerivation>(
      "ttm_configured",
      std::vector<std::string>{"ttm.module", "mem.total_bytes", std::string(kModuleOptionInputs[0]),
                               std::string(kModuleOptionInputs[1]),
                               std::string(kModuleOptionInputs[2]),
                               std::string(kModuleOptionInputs[3])},
      [](const DeriveContext& ctx, FactSet& facts) { derive_ttm(facts, ctx.options); });
}

} // namespace halo::probes

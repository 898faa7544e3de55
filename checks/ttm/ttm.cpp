// SPDX-License-Identifier: MIT
// Probe: the TTM memory manager's limits, for each TTM module present, and which one amdgpu
// uses. The in-kernel driver uses `ttm`; the ROCm amdgpu-dkms package ships `amdttm` (newer
// packages `amd_ttm`). Setting the limit on a module amdgpu does not use does nothing
// (ROCm/ROCm#5562, #5595).
//
// Reads /sys/module/{ttm,amdttm,amd_ttm}/parameters/{pages_limit,page_pool_size,
// dma32_pages_limit} (4 KiB pages; ttm_tt.c / ttm_pool.c set them to half of RAM at init when
// not given, so sysfs always shows the effective value) and /sys/module/*/holders/amdgpu.
#include "probe_util.hpp"
#include "probes.hpp"
#include "ttm_modules.hpp"

#include <halo/fact_keys.hpp>
#include <halo/units.hpp>

#include <array>

namespace halo::probes {
namespace {

/// A TTM module parameter (ttm_tt.c / ttm_pool.c module_param) and the facts it gives: per module,
/// ttm.module.<m>.<param>_pages/_bytes, and for the module amdgpu uses, ttm.<param>_pages/_bytes.
struct TtmParam {
  const char* name;
  std::string_view pages;
  std::string_view bytes;
  std::string (*module_pages)(std::string_view module);
  std::string (*module_bytes)(std::string_view module);
};

namespace ttm_keys = fact_keys::ttm;

constexpr std::array<TtmParam, 3> kParams = {{
    {"pages_limit", ttm_keys::pages_limit_pages, ttm_keys::pages_limit_bytes,
     [](std::string_view m) { return ttm_keys::module_pages_limit_pages(m); },
     [](std::string_view m) { return ttm_keys::module_pages_limit_bytes(m); }},
    {"page_pool_size", ttm_keys::page_pool_size_pages, ttm_keys::page_pool_size_bytes,
     [](std::string_view m) { return ttm_keys::module_page_pool_size_pages(m); },
     [](std::string_view m) { return ttm_keys::module_page_pool_size_bytes(m); }},
    {"dma32_pages_limit", ttm_keys::dma32_pages_limit_pages, ttm_keys::dma32_pages_limit_bytes,
     [](std::string_view m) { return ttm_keys::module_dma32_pages_limit_pages(m); },
     [](std::string_view m) { return ttm_keys::module_dma32_pages_limit_bytes(m); }},
}};

void collect(const ProbeContext& ctx, FactSet& facts) {
  const Root& root = ctx.root;
  std::vector<std::string> loaded;
  std::vector<std::string> holders;
  for (const char* m : kTtmModules) {
    const std::string dir = std::string("/sys/module/") + m;
    const bool present = root.is_dir(dir);
    facts.put_ok(ttm_keys::module_loaded(m), present, dir);
    if (!present) continue;
    loaded.emplace_back(m);
    const bool holds = root.exists(dir + "/holders/amdgpu");
    facts.put_ok(ttm_keys::module_used_by_amdgpu(m), holds, dir + "/holders/amdgpu");
    if (holds) holders.emplace_back(m);
    if (auto names = root.list(dir + "/parameters"))
      facts.put_ok(ttm_keys::module_param_names(m), *names, dir + "/parameters");
    for (const TtmParam& p : kParams) {
      const std::string pages = p.module_pages(m);
      const std::string bytes_key = p.module_bytes(m);
      auto v = put_int(facts, root, pages, dir + "/parameters/" + p.name);
      const Fact* f = facts.find(pages);
      // pages x 4096 in checked arithmetic: the kernel takes any unsigned long (module_param
      // ulong in ttm_tt.c / ttm_pool.c), so a sysfs value can be far beyond 2^63 bytes; that is
      // an error naming the file, never a wrapped (or negative) byte count.
      const auto bytes = v ? units::checked_bytes(*v, units::kTtmPageBytes) : std::nullopt;
      if (bytes)
        facts.put_ok(bytes_key, *bytes, f->source);
      else if (v)
        facts.put_status(bytes_key, Status::error, f->source,
                         units::overflow_reason(*v, "pages", units::kTtmPageBytes));
      else
        facts.put_status(bytes_key, f->status, f->source, f->reason);
    }
  }
  facts.put_ok(std::string(ttm_keys::modules_loaded), loaded, "/sys/module");

  // Which TTM does amdgpu use? The holders link is authoritative. Without it (ttm built in,
  // no holders directory) a DKMS amdgpu means amdttm/amd_ttm, an in-kernel one means ttm.
  std::string used;
  std::string basis;
  if (holders.size() == 1) {
    used = holders[0];
    basis = "/sys/module/" + used + "/holders/amdgpu";
  } else if (facts.get<bool>(fact_keys::amdgpu::loaded) == true && holders.empty()) {
    const bool dkms = facts.get<bool>(fact_keys::amdgpu::dkms) == true;
    for (const auto& m : loaded) {
      if ((m == "ttm") != dkms) {
        used = m;
        basis = dkms ? "derived: DKMS amdgpu (/sys/module/amdgpu/version) uses " + m
                     : "derived: in-kernel amdgpu uses ttm";
        break;
      }
    }
  }
  if (used.empty()) {
    const bool amdgpu = facts.get<bool>(fact_keys::amdgpu::loaded) == true;
    facts.put_status(
        std::string(ttm_keys::module), amdgpu ? Status::error : Status::missing, "/sys/module",
        amdgpu ? "amdgpu is loaded but no TTM module it uses was found" : "amdgpu is not loaded");
    for (const TtmParam& p : kParams) {
      facts.put_status(std::string(p.pages), Status::missing, "/sys/module",
                       "no TTM module in use by amdgpu");
      facts.put_status(std::string(p.bytes), Status::missing, "/sys/module",
                       "no TTM module in use by amdgpu");
    }
    return;
  }
  facts.put_ok(std::string(ttm_keys::module), used, basis);
  for (const TtmParam& p : kParams) {
    for (const auto& [from, to] :
         {std::pair{p.module_pages(used), p.pages}, std::pair{p.module_bytes(used), p.bytes}}) {
      Fact copy = *facts.find(from);
      copy.key = std::string(to);
      facts.put(std::move(copy));
    }
  }
}

} // namespace

std::unique_ptr<Probe> make_ttm_probe() {
  return std::make_unique<BasicProbe>("ttm", collect);
}

} // namespace halo::probes

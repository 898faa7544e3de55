// SPDX-License-Identifier: MIT
// Probe: the amdgpu kernel module. Reads /sys/module/amdgpu/{initstate,version,parameters/*}.
// A module built into the kernel has /sys/module/amdgpu (for its parameters) but no
// initstate file; rocminfo treats that case the same way (rocminfo.cc, CheckInitialState).
#include "probe_util.hpp"
#include "probes.hpp"

#include <halo/fact_keys.hpp>

#include <algorithm>
#include <array>
#include <string_view>

namespace halo::probes {
namespace {

/// The amdgpu parameters declared `int` in drivers/gpu/drm/amd/amdgpu/amdgpu_drv.c
/// (`module_param_named(NAME, VAR, int, PERM)`): kernel/params.c param_get_int prints them with
/// "%i\n", so /sys/module/amdgpu/parameters/NAME is a decimal integer and the fact is an int
/// (checks/kernel_args/facts.json declares each). Every other parameter stays text: `bool` ones
/// print `Y`/`N` (param_get_bool), `charp`/string ones (lockup_timeout, virtual_display) free text,
/// `hexint` ones (ppfeaturemask) `0x...`. Sorted for binary search.
constexpr std::array<std::string_view, 13> kIntParams = {
    "cwsr_enable", "gpu_recovery", "gttsize", "hws_max_conc_proc", "mcbp",
    "mes",         "modeset",      "noretry", "ras_enable",        "reset_method",
    "runpm",       "sched_policy", "uni_mes"};
static_assert(std::ranges::is_sorted(kIntParams));

void collect(const ProbeContext& ctx, FactSet& facts) {
  const Root& root = ctx.root;
  const bool loaded = root.is_dir("/sys/module/amdgpu");
  facts.put_ok(std::string(fact_keys::amdgpu::loaded), loaded, "/sys/module/amdgpu");
  if (!loaded) {
    for (const std::string_view k :
         {fact_keys::amdgpu::initstate, fact_keys::amdgpu::version, fact_keys::amdgpu::param_names})
      facts.put_status(std::string(k), Status::missing, "/sys/module/amdgpu",
                       "amdgpu is not loaded");
    return;
  }
  ReadResult init = root.read_trimmed("/sys/module/amdgpu/initstate");
  if (init.ok())
    facts.put_ok(std::string(fact_keys::amdgpu::initstate), init.text, init.path);
  else
    facts.put_status(std::string(fact_keys::amdgpu::initstate), init.status, init.path,
                     init.reason);
  facts.put_ok(std::string(fact_keys::amdgpu::builtin), init.status == Status::missing, init.path);
  // /sys/module/amdgpu/version exists for out-of-tree (DKMS) builds, which set MODULE_VERSION.
  ReadResult ver = root.read_trimmed("/sys/module/amdgpu/version");
  if (ver.ok())
    facts.put_ok(std::string(fact_keys::amdgpu::version), ver.text, ver.path);
  else
    facts.put_status(std::string(fact_keys::amdgpu::version), ver.status, ver.path,
                     ver.status == Status::missing ? "no version file: the in-kernel driver"
                                                   : ver.reason);
  facts.put_ok(std::string(fact_keys::amdgpu::dkms), ver.ok(), "/sys/module/amdgpu/version");

  Status st = Status::ok;
  auto names = root.list("/sys/module/amdgpu/parameters", &st);
  if (!names) {
    facts.put_status(std::string(fact_keys::amdgpu::param_names), st,
                     "/sys/module/amdgpu/parameters", "cannot list");
    return;
  }
  facts.put_ok(std::string(fact_keys::amdgpu::param_names), *names,
               "/sys/module/amdgpu/parameters");
  for (const auto& n : *names) {
    const std::string key = fact_keys::amdgpu::param(n);
    const std::string path = "/sys/module/amdgpu/parameters/" + n;
    // A value an int parameter cannot print (another kernel's type) is an error fact quoting it.
    if (std::ranges::binary_search(kIntParams, std::string_view(n)))
      put_int(facts, root, key, path);
    else
      put_text(facts, root, key, path);
  }
}

} // namespace

std::unique_ptr<Probe> make_amdgpu_module_probe() {
  return std::make_unique<BasicProbe>("amdgpu_module", collect);
}

} // namespace halo::probes

// SPDX-License-Identifier: MIT
// The options a loadable module receives when it loads (modprobe.d, then the kernel command line),
// and the kernel's conversion of the integer parameters the doctor judges: shared by the
// kernel_args and ttm derivations.
#pragma once

#include "ttm/ttm_modules.hpp"

#include <halo/fact.hpp>
#include <halo/fact_keys.hpp>

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace halo::probes {

/// The facts module_options() and hidden_host_config() read (patterns): a derivation that calls
/// them declares these among its inputs.
inline const std::array<std::string, 4> kModuleOptionInputs = {
    fact_keys::modprobe::options_text("*"), fact_keys::kernel::cmdline_module_options("*"),
    fact_keys::modprobe::options("*", "*"), std::string(fact_keys::modprobe::files)};

/// The modprobe.d facts when no host root was reachable (inside a container without the host's
/// / mounted): facts derived from modprobe.d copy its "not probed" status, so rules that need
/// the host's configuration are skipped with the reason, never judged as "not configured".
const Fact* hidden_host_config(const FactSet& facts);

/// Copies the "not probed" status of `why` (hidden_host_config()) to `key`.
void put_hidden(FactSet& facts, const std::string& key, const Fact& why);

/// One parameter as a loadable module receives it when it loads.
struct ModuleOption {
  std::optional<std::string> value; ///< std::nullopt: given without '=' (a flag)
  std::string source;
};

/// The options a loadable module receives: modprobe.d's options lines (files are parsed before
/// the command line, kmod_config_new), then those kmod takes from /proc/cmdline, joined with ' '
/// (kmod_module_get_options) and split by the kernel's next_arg() when the module loads
/// (parse_args in kernel/params.c): the last value of a parameter wins, names compare with '-'
/// equal to '_' (parameq), and a bare `--` ends the list. With `cmdline_only`, the command
/// line's options alone.
std::map<std::string, ModuleOption> module_options(const FactSet& facts, const std::string& m,
                                                   bool cmdline_only = false);

/// The integer parameters the doctor judges, with the kernel's conversion for their type
/// (module_param type ulong: kstrtoul; int: kstrtoint). Sources: drivers/gpu/drm/ttm/ttm_device.c
/// and ttm_pool.c (pages_limit, page_pool_size: ulong), amdgpu_drv.c (gttsize, modeset: int).
struct IntParam {
  const char* module;
  const char* param;
  bool is_unsigned;
};
/// The TTM modules' pages_limit and page_pool_size (kTtmModules), then amdgpu's gttsize and
/// modeset (kIntParams[6], kIntParams[7]).
inline constexpr std::array<IntParam, 8> kIntParams = {{{kTtmModules[0], "pages_limit", true},
                                                        {kTtmModules[0], "page_pool_size", true},
                                                        {kTtmModules[1], "pages_limit", true},
                                                        {kTtmModules[1], "page_pool_size", true},
                                                        {kTtmModules[2], "pages_limit", true},
                                                        {kTtmModules[2], "page_pool_size", true},
                                                        {"amdgpu", "gttsize", false},
                                                        {"amdgpu", "modeset", false}}};

/// The value as the kernel converts it; std::nullopt when the kernel rejects it.
std::optional<std::int64_t> kernel_int(const IntParam& p, const std::optional<std::string>& v);

/// The judged parameter `p` of module `m`; nullptr for another.
const IntParam* int_param(const std::string& m, const std::string& p);

} // namespace halo::probes

// SPDX-License-Identifier: MIT
// The fact key of an environment variable: the environment probe
// (checks/framework/environment.cpp) records each variable it reads from /proc/self/environ as
// env.<name lower-cased> (checks/framework/facts.json's `env.*`), and code that reads one names it
// by the variable, so the spelling is made here once.
#pragma once

#include <halo/fact_keys.hpp>

#include <algorithm>
#include <cctype>
#include <string>
#include <string_view>

namespace halo::probes {

/// The key `env.<variable>` with ASCII letters lower-cased (HSA_OVERRIDE_GFX_VERSION ->
/// env.hsa_override_gfx_version); other bytes are kept as they are.
inline std::string env_key(std::string_view variable) {
  std::string name(variable);
  std::transform(name.begin(), name.end(), name.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return fact_keys::env::key(name);
}

} // namespace halo::probes

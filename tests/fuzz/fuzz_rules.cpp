// SPDX-License-Identifier: MIT
// The rules loader (`--rules DIR`), with the built-in probes' fact names.
#include "fuzz_common.hpp"
#include "probes.hpp"

#include <halo/checks.hpp>
#include <halo/error.hpp>
#include <halo/probe.hpp>
#include <halo/rules.hpp>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace halo;
  static const ProbeRegistry reg = builtin_probes();
  try {
    (void)parse_rules_file(fuzz::text(data, size), "fuzz.json", &reg);
  } catch (const InputError&) {
  }
  return 0;
}

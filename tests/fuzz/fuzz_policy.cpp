// SPDX-License-Identifier: MIT
// The site policy (`--policy FILE`): parse and apply to a failing result.
#include "fuzz_common.hpp"

#include <halo/error.hpp>
#include <halo/policy.hpp>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace halo;
  try {
    const Policy p = parse_policy(fuzz::text(data, size), "fuzz.json");
    std::vector<Result> results(1);
    results[0].id = "ttm-limit-low";
    results[0].status = Outcome::fail;
    apply_policy(p, results, "2026-01-01");
    Params params;
    add_policy_params(p, params);
  } catch (const InputError&) {
  }
  return 0;
}

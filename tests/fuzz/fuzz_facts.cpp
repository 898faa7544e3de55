// SPDX-License-Identifier: MIT
// The facts file (`check --facts`): parse, then write it back and render it for people.
#include "fuzz_common.hpp"

#include <halo/error.hpp>
#include <halo/fact.hpp>
#include <halo/report.hpp>
#include <halo/sanitize.hpp>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace halo;
  try {
    const FactSet facts = facts_from_json_text(fuzz::text(data, size), "fuzz.json");
    (void)dump_json(facts_to_json(facts, "halo-doctor", "fuzz"), 2);
    (void)text_facts(facts);
  } catch (const InputError&) {
    // a clear error (exit 2) is the expected answer to bad input
  }
  return 0;
}

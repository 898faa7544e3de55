// SPDX-License-Identifier: MIT
// fleet compare's fast facts reader (issue 42 item 6; src/fleet/read.cpp), against the reader
// `check --facts` uses: a text the fast reader accepts must be one facts_from_json_text accepts,
// with the same facts where the plan reads them, and after the planned derivations the same
// compared values and gpu.count as after every derivation. A disagreement is a finding (abort).
#include "fuzz_common.hpp"

#include <halo/checks.hpp>
#include <halo/error.hpp>
#include <halo/fact.hpp>
#include <halo/fleet.hpp>
#include <halo/probe.hpp>
#include <halo/rederive.hpp>
#include <halo/rules.hpp>

#include <cstdlib>
#include <string>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace halo;
  static const ProbeRegistry reg = builtin_probes();
  static const fleet::Reader reader(reg, load_builtin_rules(nullptr, false).fleet_compare);
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto fast = fleet::read_facts_subset(text, reader.plan());
  FactSet full;
  try {
    full = facts_from_json_text(text, "fuzz.json");
  } catch (const InputError&) {
    if (fast) std::abort(); // accepted what the full reader refuses
    return 0;
  }
  if (!fast) return 0;
  std::size_t kept = 0;
  for (const auto& [k, f] : full.all()) {
    if (!reader.plan().reads_key(k)) continue;
    ++kept;
    const Fact* g = fast->find(k);
    if (g == nullptr || g->value != f.value || g->status != f.status || g->source != f.source ||
        g->reason != f.reason || g->probe != f.probe)
      std::abort();
  }
  if (kept != fast->size()) std::abort();
  ProbeOptions opt;
  opt.no_runtime = true;
  rederive(reg, opt, *fast, reader.plan());
  reg.rederive(opt, full);
  if (fleet::values_of(*fast, reader.quantities()) != fleet::values_of(full, reader.quantities()))
    std::abort();
  const Fact* a = fast->find(keys::gpu_count);
  const Fact* b = full.find(keys::gpu_count);
  if ((a == nullptr) != (b == nullptr) ||
      (a != nullptr && (a->status != b->status || a->reason != b->reason)))
    std::abort();
  return 0;
}

// SPDX-License-Identifier: MIT
// What the derivations (include/halo/probe.hpp Derivation; one per fact family folder of checks/)
// share: the source of a fact they cannot compute, and aliases of one probe's facts under another
// family's keys (`gpu.N.ras.*` from `ras.<card>.*`), each key named by <halo/fact_keys.hpp>.
#pragma once

#include <halo/fact.hpp>

#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace halo::probes {

/// The source a derivation gives a fact it could not compute ("derived"), as reports show it.
inline constexpr const char* kDerived = "derived";

/// Copies fact `from` under the key `to`, keeping its status, source and reason; `from` empty or
/// absent: `to` is missing with reason `why`.
void alias(FactSet& facts, const std::string& to, const std::string& from, const std::string& why);

/// alias() for each pair {to, from} (keys named by <halo/fact_keys.hpp>: {gpu::ras_ue_count(i),
/// ras::ue_count(card)}); with `known` false (no member to copy from: no card), each `to` is
/// missing with `why`.
void alias_each(FactSet& facts, bool known,
                std::initializer_list<std::pair<std::string, std::string>> to_from,
                const std::string& why);

/// The member of a fact family whose fact `pattern` (one `*`, the member: "access.render.*.path")
/// has the string value `value`: the segment the `*` matched ("1" for access.render.1.path), to
/// name its other facts by the family's generated functions (fact_keys::access::render_rw("1"));
/// std::nullopt when no member has it. Joins a family another probe indexed its own way to gpu.N.
std::optional<std::string> member_with(const FactSet& facts, std::string_view pattern,
                                       std::string_view value);

} // namespace halo::probes

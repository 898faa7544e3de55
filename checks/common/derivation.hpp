// SPDX-License-Identifier: MIT
// What the derivations (include/halo/probe.hpp Derivation; one per fact family folder of checks/)
// share: the source of a fact they cannot compute, and aliases of one probe's facts under another
// family's keys (`gpu.N.ras.*` from `ras.<card>.*`).
#pragma once

#include <halo/fact.hpp>

#include <initializer_list>
#include <string>
#include <string_view>

namespace halo::probes {

/// The source a derivation gives a fact it could not compute ("derived"), as reports show it.
inline constexpr const char* kDerived = "derived";

/// Copies fact `from` under the key `to`, keeping its status, source and reason; `from` empty or
/// absent: `to` is missing with reason `why`.
void alias(FactSet& facts, const std::string& to, const std::string& from, const std::string& why);

/// Copies `from.<field>` to `to.<field>` for each field (alias()); with `from` empty, each is
/// missing with `why`.
void alias_fields(FactSet& facts, const std::string& to, const std::string& from,
                  std::initializer_list<const char*> fields, const std::string& why);

/// The key prefix ("access.render.1") of the member of a fact family (pattern
/// "access.render.*.path") whose string value is `value`; empty when none is. Joins a family
/// another probe indexed its own way to gpu.N.
std::string member_with(const FactSet& facts, std::string_view pattern, std::string_view value);

} // namespace halo::probes

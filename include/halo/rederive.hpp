// SPDX-License-Identifier: MIT
// Re-running only the derivations a reader needs (issue 42 item 6): `fleet compare` reads two dozen
// quantities of each node's facts file, and ProbeRegistry::rederive runs every derivation on all
// of its 2,000 facts. A RederivePlan names the derivations whose facts those quantities can depend
// on and every fact pattern they read, so a reader keeps only those facts and runs only those
// derivations, with the same result for the wanted facts.
#pragma once

#include <halo/fact.hpp>
#include <halo/probe.hpp>

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace halo {

/// The derivations that produce, on replayed facts, the facts matching a set of wanted patterns.
struct RederivePlan {
  /// Indices into ProbeRegistry::probes() (run order) of the derivations to run.
  std::vector<std::size_t> derivations;
  /// Per entry of `derivations`: the patterns its read audit allows (its inputs, then the
  /// patterns it provides), as ProbeRegistry::rederive audits it.
  std::vector<std::vector<std::string>> allowed;
  /// Every fact pattern a full rederive's value of a wanted fact can depend on: the wanted
  /// patterns, and each planned derivation's inputs, provided patterns and `probe.<id>.status`.
  /// A fact set holding exactly the replayed facts whose keys match one of these (key_matches),
  /// after rederive(plan), has the same facts matching a wanted pattern as the whole replayed set
  /// after ProbeRegistry::rederive.
  std::vector<std::string> reads;
  /// True when `key` (a replayed fact's key) matches one of `reads` (key_matches), through a tree
  /// of their segments: a lookup per segment, not a match per pattern (issue 42: a facts file has
  /// 2,000 keys and `fleet compare`'s plan a hundred patterns).
  [[nodiscard]] bool reads_key(std::string_view key) const;
  /// The tree of `reads`, built by plan_rederive (reads_key() scans `reads` without it).
  struct Index;
  std::shared_ptr<const Index> index;
  /// Per entry of `allowed`: its tree, for the read audit (one lookup per key read).
  std::vector<std::shared_ptr<const Index>> allowed_index;
};

/// The plan for `wanted` (fact key patterns, `*` = one segment). The closure: a derivation is
/// planned when a pattern it provides, or its `probe.<id>.status`, overlaps (patterns_overlap) a
/// pattern read so far; its inputs and provided patterns are then read too, until nothing changes.
/// Sound because a derivation reads only what Probe::inputs() and its own declarations name (the
/// read audit, FactSet::ReadGuard) and a fact is written only by the probe declaring it.
/// `registry` must be resolved (ProbeRegistry::resolve()): the plan keeps its run order.
RederivePlan plan_rederive(const ProbeRegistry& registry, const std::vector<std::string>& wanted);

/// Runs the plan's derivations in run order on `facts`, each under the read audit and recording
/// its `probe.<id>.status`, exactly as ProbeRegistry::rederive runs them.
void rederive(const ProbeRegistry& registry, const ProbeOptions& options, FactSet& facts,
              const RederivePlan& plan);

} // namespace halo

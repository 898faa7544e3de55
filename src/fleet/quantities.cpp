// SPDX-License-Identifier: MIT
// The fleet comparison's quantities as a rules file declares them (its `compare` list,
// rules/fleet.json); include/halo/fleet_quantity.hpp.
#include <halo/error.hpp>
#include <halo/fleet_quantity.hpp>
#include <halo/probe.hpp>
#include <halo/schema.hpp>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace halo::fleet {

std::vector<FleetQuantity> parse_fleet_compare(const nlohmann::json& list, std::string_view text,
                                               std::string_view file,
                                               const ProbeRegistry* registry) {
  auto fail = [&](const std::string& ptr, const std::string& what) {
    const JsonPositions pos(text); // only on an error: it scans the text
    throw InputError(fmt::format("{}:{}: {}: {}", file, pos.line(ptr), ptr.substr(1), what));
  };
  if (!list.is_array()) fail("/compare", "must be a list of {fact, label, severity}");
  std::vector<FleetQuantity> out;
  for (std::size_t i = 0; i < list.size(); ++i) {
    const auto& q = list[i];
    const std::string ptr = fmt::format("/compare/{}", i);
    if (!q.is_object() || q.size() != 3 || !q.contains("fact") || !q.contains("label") ||
        !q.contains("severity"))
      fail(ptr, R"(needs exactly {"fact", "label", "severity"})");
    if (!q["fact"].is_string() || q["fact"].get<std::string>().empty())
      fail(ptr + "/fact", "must be a fact key");
    if (!q["label"].is_string() || q["label"].get<std::string>().empty())
      fail(ptr + "/label", "must be a non-empty string");
    const auto sev =
        q["severity"].is_string() ? parse_severity(q["severity"].get<std::string>()) : std::nullopt;
    if (!sev || *sev == Severity::info) fail(ptr + "/severity", "must be error or warning");
    FleetQuantity fq{q["fact"].get<std::string>(), q["label"].get<std::string>(), *sev};
    if (registry != nullptr && !registry->provides(fq.pattern))
      fail(ptr + "/fact", fmt::format("no probe provides the fact '{}'", fq.pattern));
    for (const auto& before : out)
      if (before.pattern == fq.pattern)
        fail(ptr + "/fact", fmt::format("'{}' is compared twice", fq.pattern));
    out.push_back(std::move(fq));
  }
  return out;
}

} // namespace halo::fleet

// SPDX-License-Identifier: MIT
// Probe: system memory from /proc/meminfo (MemTotal, MemAvailable; kB there, bytes here).
#include "probe_util.hpp"
#include "probes.hpp"

#include <halo/fact_keys.hpp>
#include <halo/units.hpp>

#include <fmt/format.h>

namespace halo::probes {
namespace {

void collect(const ProbeContext& ctx, FactSet& facts) {
  ReadResult r = ctx.root.read("/proc/meminfo");
  const std::vector<std::pair<std::string, std::string>> wanted = {
      {"MemTotal", std::string(fact_keys::mem::total_bytes)},
      {"MemAvailable", std::string(fact_keys::mem::available_bytes)}};
  if (!r.ok()) {
    for (const auto& [field, key] : wanted)
      facts.put_status(key, r.status, r.path, r.reason);
    return;
  }
  for (const auto& [field, key] : wanted) {
    bool found = false;
    for (const auto& line : split_lines(r.text)) {
      if (line.rfind(field + ":", 0) != 0) continue;
      found = true;
      std::string rest = line.substr(field.size() + 1);
      auto kb = rest.find("kB");
      auto v = parse_int(rest.substr(0, kb));
      const auto bytes = v ? units::checked_bytes(*v, units::kKiB) : std::nullopt;
      if (v && kb != std::string::npos && *v > 0 && bytes)
        facts.put_ok(key, *bytes, r.path);
      else if (v && kb != std::string::npos && *v > 0)
        facts.put_status(
            key, Status::error, r.path,
            fmt::format("{}: {}", field, units::overflow_reason(*v, "KiB", units::kKiB)));
      else
        facts.put_status(key, Status::error, r.path, fmt::format("malformed line '{}'", line));
    }
    if (!found) facts.put_status(key, Status::missing, r.path, field + " not in the file");
  }
}

} // namespace

std::unique_ptr<Probe> make_memory_probe() {
  return std::make_unique<BasicProbe>("memory", collect);
}

} // namespace halo::probes

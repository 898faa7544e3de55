// SPDX-License-Identifier: MIT
// Probe: automatic NUMA balancing, /proc/sys/kernel/numa_balancing (0 off, 1 on, 2 memory
// tiering; AMD's MI300X tuning guide recommends 0), and the number of online NUMA nodes,
// /sys/devices/system/node/online (Documentation/ABI/stable/sysfs-devices-node: a node list
// such as "0-1" or "0,2-3", the bitmap_parselist format).
#include "probe_util.hpp"
#include "probes.hpp"

#include <halo/fact_keys.hpp>

#include <optional>

namespace halo::probes {
namespace {

/// Counts the entries of a kernel node list ("0", "0-3", "0,2-3"); nullopt when malformed.
/// Bounded by the kernel's MAX_NUMNODES (at most 1 << 10 with CONFIG_NODES_SHIFT 10).
std::optional<std::int64_t> count_node_list(std::string_view text) {
  constexpr std::int64_t kMaxNodes = 1024;
  std::int64_t count = 0;
  std::size_t pos = 0;
  while (pos <= text.size()) {
    const std::size_t comma = text.find(',', pos);
    const std::string_view item =
        text.substr(pos, comma == std::string_view::npos ? std::string_view::npos : comma - pos);
    const std::size_t dash = item.find('-');
    const auto lo = parse_int(item.substr(0, dash));
    const auto hi = dash == std::string_view::npos ? lo : parse_int(item.substr(dash + 1));
    if (!lo || !hi || *lo < 0 || *hi < *lo || *hi >= kMaxNodes) return std::nullopt;
    count += *hi - *lo + 1;
    if (comma == std::string_view::npos) break;
    pos = comma + 1;
  }
  if (count > kMaxNodes) return std::nullopt;
  return count;
}

void collect(const ProbeContext& ctx, FactSet& facts) {
  put_int(facts, ctx.root, std::string(fact_keys::numa::balancing),
          "/proc/sys/kernel/numa_balancing");
  if (ReadResult r = ctx.root.read_trimmed("/sys/devices/system/node/online"); !r.ok())
    facts.put_status(std::string(fact_keys::numa::nodes_online), r.status, r.path, r.reason);
  else if (auto n = count_node_list(r.text))
    facts.put_ok(std::string(fact_keys::numa::nodes_online), *n, r.path);
  else
    facts.put_status(std::string(fact_keys::numa::nodes_online), Status::error, r.path,
                     "not a node list: \"" + r.text.substr(0, 64) + "\"");
}
} // namespace

std::unique_ptr<Probe> make_numa_probe() {
  return std::make_unique<BasicProbe>("numa", collect);
}

} // namespace halo::probes

// SPDX-License-Identifier: MIT
// Probe: the KFD topology, what ROCm enumerates. Reads /sys/class/kfd/kfd/topology/nodes/N/
// properties ("name value" lines, decimal) and nodes/N/mem_banks/M/properties (heap_type:
// 0 system, 1 frame buffer public, 2 private; size_in_bytes). CPU nodes have
// gfx_target_version 0.
#include "gfx.hpp"
#include "probe_util.hpp"
#include "probes.hpp"

#include <halo/fact_keys.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <optional>

namespace halo::probes {
namespace {

void collect(const ProbeContext& ctx, FactSet& facts) {
  const std::string base = "/sys/class/kfd/kfd/topology/nodes";
  Status st = Status::ok;
  auto nodes = ctx.root.list(base, &st);
  facts.put_ok(std::string(fact_keys::kfd::topology_present), nodes.has_value(), base);
  if (!nodes) {
    facts.put_status(std::string(fact_keys::kfd::gpu_nodes), st, base,
                     st == Status::missing ? "no KFD topology: amdgpu/amdkfd not loaded"
                                           : "cannot list");
    return;
  }
  // Node ids are numbers: ROCr (hsaKmtAcquireSystemProperties) enumerates nodes 0..N-1 in
  // numeric order, so node 10 comes after node 2. Names that are not numbers go last.
  std::vector<std::string> ordered = *nodes;
  auto num = [](const std::string& s) {
    std::uint64_t v = 0;
    const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    return (ec == std::errc() && p == s.data() + s.size()) ? std::optional<std::uint64_t>(v)
                                                           : std::nullopt;
  };
  std::stable_sort(ordered.begin(), ordered.end(), [&](const std::string& a, const std::string& b) {
    const auto na = num(a);
    const auto nb = num(b);
    if (na && nb) return *na < *nb;
    if (na != nb) return na.has_value();
    return a < b;
  });
  std::vector<std::string> gpus;
  for (const auto& n : ordered) {
    const std::string dir = fmt::format("{}/{}", base, n);
    ReadResult r = ctx.root.read(dir + "/properties");
    if (!r.ok()) {
      facts.put_status(fact_keys::kfd::node_gfx_target_version(n), r.status, r.path, r.reason);
      continue;
    }
    auto kv = parse_key_value_lines(r.text);
    // The properties file's names (kfd_topology.c, node_show) and the fact each becomes.
    for (const auto& [k, key] :
         {std::pair{"gfx_target_version", fact_keys::kfd::node_gfx_target_version(n)},
          std::pair{"device_id", fact_keys::kfd::node_device_id(n)},
          std::pair{"vendor_id", fact_keys::kfd::node_vendor_id(n)},
          std::pair{"simd_count", fact_keys::kfd::node_simd_count(n)},
          std::pair{"drm_render_minor", fact_keys::kfd::node_drm_render_minor(n)},
          std::pair{"location_id", fact_keys::kfd::node_location_id(n)},
          std::pair{"domain", fact_keys::kfd::node_domain(n)},
          std::pair{"cpu_cores_count", fact_keys::kfd::node_cpu_cores_count(n)},
          std::pair{"num_xcc", fact_keys::kfd::node_num_xcc(n)}}) {
      auto it = kv.find(k);
      if (it == kv.end()) {
        facts.put_status(key, Status::missing, r.path, std::string(k) + " not listed");
        continue;
      }
      if (auto v = parse_int(it->second))
        facts.put_ok(key, *v, r.path);
      else
        facts.put_status(key, Status::error, r.path,
                         fmt::format("{} is not an integer: '{}'", k, it->second));
    }
    auto gtv = facts.get_int(fact_keys::kfd::node_gfx_target_version(n));
    if (gtv && *gtv != 0) {
      gpus.push_back(n);
      if (auto name = decode_gfx_target_version(*gtv))
        facts.put_ok(fact_keys::kfd::node_gfx_target(n), *name, r.path);
      else
        facts.put_status(fact_keys::kfd::node_gfx_target(n), Status::error, r.path,
                         fmt::format("cannot decode gfx_target_version {}", *gtv));
    }
    if (auto banks = ctx.root.list(dir + "/mem_banks")) {
      for (const auto& b : *banks) {
        ReadResult br = ctx.root.read(fmt::format("{}/mem_banks/{}/properties", dir, b));
        if (!br.ok()) {
          facts.put_status(fact_keys::kfd::node_mem_bank_size_bytes(n, b), br.status, br.path,
                           br.reason);
          continue;
        }
        auto bkv = parse_key_value_lines(br.text);
        for (const auto& [k, key] :
             {std::pair{"heap_type", fact_keys::kfd::node_mem_bank_heap_type(n, b)},
              std::pair{"size_in_bytes", fact_keys::kfd::node_mem_bank_size_bytes(n, b)}}) {
          auto it = bkv.find(k);
          auto v = it == bkv.end() ? std::nullopt : parse_int(it->second);
          if (v)
            facts.put_ok(key, *v, br.path);
          else
            facts.put_status(key, it == bkv.end() ? Status::missing : Status::error, br.path,
                             std::string(k) + " not readable");
        }
      }
    }
  }
  facts.put_ok(std::string(fact_keys::kfd::gpu_nodes), gpus, base);
}

} // namespace

std::unique_ptr<Probe> make_kfd_topology_probe() {
  return std::make_unique<BasicProbe>("kfd_topology", collect);
}

} // namespace halo::probes

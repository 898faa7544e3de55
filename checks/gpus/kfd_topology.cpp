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
    const std::string pre = "kfd.node." + n;
    ReadResult r = ctx.root.read(dir + "/properties");
    if (!r.ok()) {
      facts.put_status(pre + ".gfx_target_version", r.status, r.path, r.reason);
      continue;
    }
    auto kv = parse_key_value_lines(r.text);
    for (const char* k :
         {"gfx_target_version", "device_id", "vendor_id", "simd_count", "drm_render_minor",
          "location_id", "domain", "cpu_cores_count", "num_xcc"}) {
      auto it = kv.find(k);
      if (it == kv.end()) {
        facts.put_status(pre + "." + k, Status::missing, r.path, std::string(k) + " not listed");
        continue;
      }
      if (auto v = parse_int(it->second))
        facts.put_ok(pre + "." + k, *v, r.path);
      else
        facts.put_status(pre + "." + k, Status::error, r.path,
                         fmt::format("{} is not an integer: '{}'", k, it->second));
    }
    auto gtv = facts.get_int(pre + ".gfx_target_version");
    if (gtv && *gtv != 0) {
      gpus.push_back(n);
      if (auto name = decode_gfx_target_version(*gtv))
        facts.put_ok(pre + ".gfx_target", *name, r.path);
      else
        facts.put_status(pre + ".gfx_target", Status::error, r.path,
                         fmt::format("cannot decode gfx_target_version {}", *gtv));
    }
    if (auto banks = ctx.root.list(dir + "/mem_banks")) {
      for (const auto& b : *banks) {
        const std::string bpre = fmt::format("{}.mem_bank.{}", pre, b);
        ReadResult br = ctx.root.read(fmt::format("{}/mem_banks/{}/properties", dir, b));
        if (!br.ok()) {
          facts.put_status(bpre + ".size_bytes", br.status, br.path, br.reason);
          continue;
        }
        auto bkv = parse_key_value_lines(br.text);
        for (const auto& [k, key] : {std::pair<const char*, const char*>{"heap_type", "heap_type"},
                                     {"size_in_bytes", "size_bytes"}}) {
          auto it = bkv.find(k);
          auto v = it == bkv.end() ? std::nullopt : parse_int(it->second);
          if (v)
            facts.put_ok(bpre + "." + key, *v, br.path);
          else
            facts.put_status(bpre + "." + key, it == bkv.end() ? Status::missing : Status::error,
                             br.path, std::string(k) + " not readable");
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

// SPDX-License-Identifier: MIT
// Probe: XGMI hive membership of each AMD GPU, from amdgpu's sysfs
// (drivers/gpu/drm/amd/amdgpu/amdgpu_xgmi.c, amdgpu_xgmi_sysfs_add_dev_info; all 0444):
//   /sys/class/drm/<card>/device/xgmi_device_id              "%llu\n", the PSP node id
//   /sys/class/drm/<card>/device/xgmi_physical_id            "%u\n", the GPU's place in the hive
//   /sys/class/drm/<card>/device/xgmi_hive_info/xgmi_hive_id "%llu\n" (the hive's kobject sits
//       under its first GPU; every other member has a link xgmi_hive_info to it, and the hive
//       directory links node1..nodeN back to each member)
//   /sys/class/drm/<card>/device/xgmi_num_hops               one "%02x " per hive node, from the
//       PSP topology table (bits 2:0 the hop count, bits 7:6 the link type); the table lists every
//       device of the hive, this one included (amdgpu_xgmi_add_device fills nodes[] from the
//       hive's device list)
//   /sys/class/drm/<card>/device/xgmi_num_links              the same shape: links per peer
// The files exist only after amdgpu added the GPU to its hive ("XGMI: Add node N, hive 0x...");
// a GPU whose add failed ("XGMI: Failed to add node") has none of them. xgmi_error is not read:
// reading it clears the hardware's PCIe-interface error counter (amdgpu_xgmi_show_error).
#include "gpus.hpp"
#include "probe_util.hpp"
#include "probes.hpp"

#include <fmt/format.h>

#include <re2/re2.h>

namespace halo::probes {
namespace {

constexpr std::size_t kMaxHiveNodes =
    64; // the PSP topology table holds AMDGPU_XGMI_MAX_CONNECTED_NODES (64)

/// A token without the trailing newline the last one carries.
std::string_view trim_token(std::string_view t) {
  while (!t.empty() && (t.back() == '\n' || t.back() == '\r'))
    t.remove_suffix(1);
  return t;
}

/// Parses "%02x " per node. std::nullopt for anything else.
std::optional<std::vector<std::int64_t>> parse_node_bytes(std::string_view text) {
  static const RE2 byte_re("[0-9a-fA-F]{2}");
  std::vector<std::int64_t> out;
  for (const auto& token : split_list(text, ' ', kMaxHiveNodes + 1)) {
    const std::string_view t = trim_token(token);
    if (t.empty()) continue;
    if (out.size() >= kMaxHiveNodes || !RE2::FullMatch(t, byte_re)) return std::nullopt;
    auto v = parse_hex(t);
    if (!v) return std::nullopt;
    out.push_back(*v);
  }
  return out;
}

void collect_card(const ProbeContext& ctx, FactSet& facts, const std::string& card) {
  const std::string dev = "/sys/class/drm/" + card + "/device";
  const std::string device_id = fact_keys::xgmi::device_id(card);
  const std::string physical_id = fact_keys::xgmi::physical_id(card);
  const std::string hive_id = fact_keys::xgmi::hive_id(card);
  const std::string hive_size = fact_keys::xgmi::hive_size(card);
  const std::string far_peers = fact_keys::xgmi::far_peers(card);
  const std::string id_path = dev + "/xgmi_device_id";
  if (!ctx.root.exists(id_path)) {
    facts.put_ok(fact_keys::xgmi::member(card), false,
                 id_path + " (absent: not added to an XGMI hive)");
    for (const std::string* k : {&device_id, &physical_id, &hive_id, &hive_size, &far_peers})
      facts.put_status(*k, Status::missing, id_path,
                       "amdgpu did not add this GPU to an XGMI hive (no xgmi_device_id)");
    return;
  }
  facts.put_ok(fact_keys::xgmi::member(card), true, id_path);
  // 64-bit ids ("%llu") are kept as text: they may not fit a signed 64-bit integer.
  put_text(facts, ctx.root, device_id, id_path);
  put_int(facts, ctx.root, physical_id, dev + "/xgmi_physical_id");
  put_text(facts, ctx.root, hive_id, dev + "/xgmi_hive_info/xgmi_hive_id");
  const ReadResult hops = ctx.root.read(dev + "/xgmi_num_hops");
  if (!hops.ok()) {
    facts.put_status(hive_size, hops.status, hops.path, hops.reason);
    facts.put_status(far_peers, hops.status, hops.path, hops.reason);
    return;
  }
  const auto bytes = parse_node_bytes(hops.text);
  if (!bytes) {
    const std::string why =
        fmt::format("not one '%02x ' per hive node: '{}'",
                    hops.text.substr(0, std::min<std::size_t>(64, hops.text.size())));
    facts.put_status(hive_size, Status::error, hops.path, why);
    facts.put_status(far_peers, Status::error, hops.path, why);
    return;
  }
  std::int64_t far = 0;
  for (const auto b : *bytes)
    if ((b & 0x7) > 1) ++far; // bits 2:0: the hop count to that node
  facts.put_ok(hive_size, static_cast<std::int64_t>(bytes->size()), hops.path);
  facts.put_ok(far_peers, far, hops.path);
}

void collect(const ProbeContext& ctx, FactSet& facts) {
  // The AMD DRM cards the drm probe found (an input: it runs after the drm probe).
  for_each_amd_card(facts, [&](const std::string& card) { collect_card(ctx, facts, card); });
}

} // namespace

std::unique_ptr<Probe> make_xgmi_probe() {
  // Its reads (checks/gpus/facts.json) name the files one by one: xgmi_error must never be read
  // (nor captured), reading clears it.
  return std::make_unique<BasicProbe>("xgmi", collect);
}

} // namespace halo::probes

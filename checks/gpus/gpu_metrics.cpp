// SPDX-License-Identifier: MIT
// Probe: amdgpu's gpu_metrics table of each AMD GPU (/sys/class/drm/<card>/device/gpu_metrics,
// 0444, binary, little-endian; drivers/gpu/drm/amd/include/kgd_pp_interface.h). Every version
// starts with struct metrics_table_header {u16 structure_size; u8 format_revision;
// u8 content_revision}; format 1 is a discrete GPU's table, 2 and 3 an APU's. Decoded here, each
// from the kernel's struct layout (natural alignment, x86-64):
//   v1.3 (RDNA2/3/4, MI200; 120 bytes): temperature_edge @4, temperature_hotspot @6,
//        temperature_mem @8 (degrees C), average_socket_power @22 (W), indep_throttle_status
//        @112 (u64, ASIC-independent throttler bits)
//   v1.4, v1.5, v1.6 (MI300-class; the same prefix): temperature_hotspot @4, temperature_mem @6
//        (degrees C), curr_socket_power @10 (W); no ASIC-independent throttle status
//   v2.2, v2.3, v2.4 (APUs): indep_throttle_status @120
// Other versions (v1.0-1.2, v2.0-2.1, v3.0) give their version only. 0xFFFF in a 16-bit field is
// the firmware's "not supported". The throttler bits are those of the SMU's
// SMU_THROTTLER_*_BIT (drivers/gpu/drm/amd/pm/swsmu/inc/amdgpu_smu.h): power 0-7, current 16-23,
// temperature 32-47, other 56-57.
#include "gpus.hpp"
#include "probe_util.hpp"
#include "probes.hpp"

#include <fmt/format.h>

#include <array>
#include <cstring>

namespace halo::probes {
namespace {

constexpr std::size_t kMaxMetricsBytes = 4096; // the largest table (v1.6) is under 1 KiB

std::uint64_t le(const std::string& b, std::size_t off, std::size_t width) {
  std::uint64_t v = 0;
  for (std::size_t i = 0; i < width; ++i)
    v |= static_cast<std::uint64_t>(static_cast<unsigned char>(b[off + i])) << (8 * i);
  return v;
}

struct Bit {
  int bit;
  const char* name;
};
// SMU_THROTTLER_*_BIT, amdgpu_smu.h.
constexpr std::array<Bit, 8> kPowerBits = {{{0, "PPT0"},
                                            {1, "PPT1"},
                                            {2, "PPT2"},
                                            {3, "PPT3"},
                                            {4, "SPL"},
                                            {5, "FPPT"},
                                            {6, "SPPT"},
                                            {7, "SPPT_APU"}}};
constexpr std::array<Bit, 8> kCurrentBits = {{{16, "TDC_GFX"},
                                              {17, "TDC_SOC"},
                                              {18, "TDC_MEM"},
                                              {19, "TDC_VDD"},
                                              {20, "TDC_CVIP"},
                                              {21, "EDC_CPU"},
                                              {22, "EDC_GFX"},
                                              {23, "APCC"}}};
constexpr std::array<Bit, 16> kTemperatureBits = {{{32, "TEMP_GPU"},
                                                   {33, "TEMP_CORE"},
                                                   {34, "TEMP_MEM"},
                                                   {35, "TEMP_EDGE"},
                                                   {36, "TEMP_HOTSPOT"},
                                                   {37, "TEMP_SOC"},
                                                   {38, "TEMP_VR_GFX"},
                                                   {39, "TEMP_VR_SOC"},
                                                   {40, "TEMP_VR_MEM0"},
                                                   {41, "TEMP_VR_MEM1"},
                                                   {42, "TEMP_LIQUID0"},
                                                   {43, "TEMP_LIQUID1"},
                                                   {44, "VRHOT0"},
                                                   {45, "VRHOT1"},
                                                   {46, "PROCHOT_CPU"},
                                                   {47, "PROCHOT_GFX"}}};

template <std::size_t N>
std::vector<std::string> active(std::uint64_t status, const std::array<Bit, N>& bits) {
  std::vector<std::string> out;
  for (const auto& b : bits)
    if ((status >> b.bit) & 1U) out.emplace_back(b.name);
  return out;
}

void put_u16(FactSet& facts, const std::string& key, const std::string& b, std::size_t off,
             const std::string& src) {
  const auto v = le(b, off, 2);
  if (v == 0xFFFF)
    facts.put_status(key, Status::missing, src, "the firmware does not report it (0xFFFF)");
  else
    facts.put_ok(key, static_cast<std::int64_t>(v), src);
}

/// The keys of one card's facts (gpu_metrics.CARD.*).
struct MetricKeys {
  explicit MetricKeys(const std::string& card)
      : version(fact_keys::gpu_metrics::version(card)),
        temperature_edge_c(fact_keys::gpu_metrics::temperature_edge_c(card)),
        temperature_hotspot_c(fact_keys::gpu_metrics::temperature_hotspot_c(card)),
        temperature_mem_c(fact_keys::gpu_metrics::temperature_mem_c(card)),
        socket_power_w(fact_keys::gpu_metrics::socket_power_w(card)),
        throttle_power(fact_keys::gpu_metrics::throttle_power(card)),
        throttle_current(fact_keys::gpu_metrics::throttle_current(card)),
        throttle_thermal(fact_keys::gpu_metrics::throttle_thermal(card)) {}
  std::string version;
  std::string temperature_edge_c;
  std::string temperature_hotspot_c;
  std::string temperature_mem_c;
  std::string socket_power_w;
  std::string throttle_power;
  std::string throttle_current;
  std::string throttle_thermal;
};

void put_throttle(FactSet& facts, const MetricKeys& keys, const std::string& b, std::size_t off,
                  const std::string& src) {
  const std::uint64_t s = le(b, off, 8);
  if (s == ~std::uint64_t{0}) {
    for (const std::string* k :
         {&keys.throttle_power, &keys.throttle_current, &keys.throttle_thermal})
      facts.put_status(*k, Status::missing, src,
                       "the firmware does not report throttle status (all bits set)");
    return;
  }
  facts.put_ok(keys.throttle_power, active(s, kPowerBits), src);
  facts.put_ok(keys.throttle_current, active(s, kCurrentBits), src);
  facts.put_ok(keys.throttle_thermal, active(s, kTemperatureBits), src);
}

void collect_card(const ProbeContext& ctx, FactSet& facts, const std::string& card) {
  const std::string path = "/sys/class/drm/" + card + "/device/gpu_metrics";
  const MetricKeys keys(card);
  const std::vector<const std::string*> fields = {
      &keys.temperature_edge_c, &keys.temperature_hotspot_c, &keys.temperature_mem_c,
      &keys.socket_power_w,     &keys.throttle_power,        &keys.throttle_current,
      &keys.throttle_thermal};
  auto all_status = [&](Status st, const std::string& why, bool with_version) {
    if (with_version) facts.put_status(keys.version, st, path, why);
    for (const std::string* f : fields)
      facts.put_status(*f, st, path, why);
  };
  if (!ctx.root.exists(path)) {
    all_status(Status::missing, "no gpu_metrics (a GPU without SMU metrics, or an older kernel)",
               true);
    return;
  }
  const ReadResult r = ctx.root.read(path, kMaxMetricsBytes);
  if (!r.ok()) {
    all_status(r.status, r.reason, true);
    return;
  }
  const std::string& b = r.text;
  if (b.size() < 4) {
    all_status(Status::error, fmt::format("{} bytes: shorter than the 4-byte header", b.size()),
               true);
    return;
  }
  const auto size = le(b, 0, 2);
  const auto format = static_cast<unsigned>(static_cast<unsigned char>(b[2]));
  const auto content = static_cast<unsigned>(static_cast<unsigned char>(b[3]));
  const std::string version = fmt::format("{}.{}", format, content);
  if (size < 4 || size > b.size()) {
    all_status(Status::error,
               fmt::format("v{} says {} bytes but {} were read", version, size, b.size()), true);
    return;
  }
  facts.put_ok(keys.version, version, path);
  // The layout this version has, and the bytes it needs.
  std::size_t need = 0;
  if (format == 1 && content == 3)
    need = 120;
  else if (format == 1 && content >= 4 && content <= 6)
    need = 12;
  else if (format == 2 && content >= 2 && content <= 4)
    need = 128;
  if (need == 0) {
    all_status(Status::missing, fmt::format("gpu_metrics v{} is not decoded", version), false);
    return;
  }
  if (size < need) {
    all_status(Status::error,
               fmt::format("v{} is {} bytes, shorter than its {}-byte layout", version, size, need),
               false);
    return;
  }
  const std::string why_absent = fmt::format("not in gpu_metrics v{}", version);
  if (format == 1 && content == 3) {
    put_u16(facts, keys.temperature_edge_c, b, 4, path);
    put_u16(facts, keys.temperature_hotspot_c, b, 6, path);
    put_u16(facts, keys.temperature_mem_c, b, 8, path);
    put_u16(facts, keys.socket_power_w, b, 22, path);
    put_throttle(facts, keys, b, 112, path);
  } else if (format == 1) {
    facts.put_status(keys.temperature_edge_c, Status::missing, path, why_absent);
    put_u16(facts, keys.temperature_hotspot_c, b, 4, path);
    put_u16(facts, keys.temperature_mem_c, b, 6, path);
    put_u16(facts, keys.socket_power_w, b, 10, path);
    for (const std::string* k :
         {&keys.throttle_power, &keys.throttle_current, &keys.throttle_thermal})
      facts.put_status(*k, Status::missing, path,
                       why_absent + " (no ASIC-independent throttle status)");
  } else {
    for (const std::string* k : {&keys.temperature_edge_c, &keys.temperature_hotspot_c,
                                 &keys.temperature_mem_c, &keys.socket_power_w})
      facts.put_status(*k, Status::missing, path, why_absent);
    put_throttle(facts, keys, b, 120, path);
  }
}

void collect(const ProbeContext& ctx, FactSet& facts) {
  // The AMD DRM cards the drm probe found (an input: it runs after the drm probe).
  for_each_amd_card(facts, [&](const std::string& card) { collect_card(ctx, facts, card); });
}

} // namespace

std::unique_ptr<Probe> make_gpu_metrics_probe() {
  return std::make_unique<BasicProbe>("gpu_metrics", collect);
}

} // namespace halo::probes

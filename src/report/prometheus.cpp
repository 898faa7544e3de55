// SPDX-License-Identifier: MIT
// The Prometheus text exposition format (version 0.0.4) for node_exporter's textfile
// collector: `halo-doctor check --output prometheus:/var/lib/prometheus/node-exporter/halo.prom`.
// Every metric is a gauge named halo_doctor_*; facts that are not ok are left out, never
// exported as 0, so an alert on a missing value is a separate `absent()` rule.
#include <halo/report.hpp>
#include <halo/sanitize.hpp>

#include <fmt/format.h>

#include <array>
#include <map>
#include <utility>

namespace halo {
namespace {

/// Escapes a label value: backslash, double quote and newline (exposition format spec), after
/// control characters and bytes that are not UTF-8 became `\xNN` text (terminal_safe), so
/// the value stays one valid UTF-8 line.
std::string escape_label(std::string_view raw) {
  const std::string v = terminal_safe(raw);
  std::string out;
  out.reserve(v.size());
  for (char c : v) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '"')
      out += "\\\"";
    else if (c == '\n')
      out += "\\n";
    else
      out += c;
  }
  return out;
}

/// Escapes a HELP text: backslash and newline (control characters as in escape_label).
std::string escape_help(std::string_view raw) {
  const std::string v = terminal_safe(raw);
  std::string out;
  for (char c : v) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '\n')
      out += "\\n";
    else
      out += c;
  }
  return out;
}

using Labels = std::vector<std::pair<std::string, std::string>>;

/// Integers print exactly (byte counts exceed 2^53 only beyond 8 PiB), others in shortest form.
std::string number(double v) {
  if (v > -9.007199254740992e15 && v < 9.007199254740992e15 &&
      v == static_cast<double>(static_cast<std::int64_t>(v)))
    return fmt::format("{}", static_cast<std::int64_t>(v));
  return fmt::format("{}", v);
}

class Exposition {
public:
  /// Starts a metric family: HELP and TYPE lines.
  void gauge(std::string_view name, std::string_view help) {
    out_ += fmt::format("# HELP {} {}\n# TYPE {} gauge\n", name, escape_help(help), name);
  }
  void sample(std::string_view name, const Labels& labels, std::string_view value) {
    out_ += name;
    if (!labels.empty()) {
      out_ += '{';
      for (std::size_t i = 0; i < labels.size(); ++i)
        out_ += fmt::format("{}{}=\"{}\"", i == 0 ? "" : ",", labels[i].first,
                            escape_label(labels[i].second));
      out_ += '}';
    }
    out_ += fmt::format(" {}\n", value);
  }
  void sample(std::string_view name, const Labels& labels, double value) {
    sample(name, labels, number(value));
  }
  const std::string& str() const { return out_; }

private:
  std::string out_;
};

/// Which facts a metric exports: one host fact, or a field of every GPU (`gpu.N.<field>`, labelled
/// gpu="N" with the GPU's pci_slot and gfx) or of every ROCr GPU agent (`hsa.gpu.N.<field>`,
/// labelled gpu="N" only: ROCr numbers the GPUs it sees, another numbering).
enum class Per { host, gpu, hsa_gpu };

/// A fact exported as a metric: one sample per matching key, labelled by the GPU index.
struct FactMetric {
  Per scope = Per::host;
  std::string_view key; ///< the fact key (host), else the per-GPU field (keys::gpu_field)
  const char* name{};   ///< metric name
  const char* help{};   ///< HELP text
  double scale = 1.0;   ///< multiplies the fact into the metric's unit (millidegrees -> degrees)
};

namespace field = keys::gpu_field;

constexpr auto kFactMetrics = std::to_array<FactMetric>({
    {Per::host, keys::mem_total_bytes, "halo_doctor_memory_total_bytes",
     "MemTotal of /proc/meminfo in bytes (fact mem.total_bytes)"},
    {Per::host, keys::ttm_pages_limit_bytes, "halo_doctor_ttm_pages_limit_bytes",
     "Active TTM pages_limit in bytes: the ceiling on GPU-mapped system memory (fact "
     "ttm.pages_limit_bytes)"},
    {Per::host, keys::ttm_recommended_bytes, "halo_doctor_ttm_recommended_bytes",
     "TTM limit halo-doctor recommends for this machine and --reserve, in bytes (fact "
     "ttm.recommended_bytes)"},
    {Per::gpu, field::gtt_total_bytes, "halo_doctor_gpu_gtt_total_bytes",
     "GTT size amdgpu reports in mem_info_gtt_total, bytes (fact gpu.N.gtt_total_bytes)"},
    {Per::gpu, field::vram_total_bytes, "halo_doctor_gpu_vram_total_bytes",
     "VRAM (or carve-out) size amdgpu reports in mem_info_vram_total, bytes (fact "
     "gpu.N.vram_total_bytes)"},
    {Per::hsa_gpu, keys::hsa_gpu_field::coarse_pool_bytes, "halo_doctor_hsa_coarse_pool_bytes",
     "Size of the HSA agent's coarse-grained global memory pool, bytes, from "
     "hsa_amd_memory_pool_get_info (fact hsa.gpu.N.coarse_pool_bytes)"},
    {Per::gpu, field::usable_bytes, "halo_doctor_gpu_usable_bytes",
     "Memory a process on the GPU can allocate, bytes (fact gpu.N.usable_bytes, docs/plan.md)"},
    // The AMD device metrics exporter names these PCIE_SPEED, PCIE_MAX_SPEED and
    // GPU_JUNCTION_TEMPERATURE / GPU_MEMORY_TEMPERATURE.
    {Per::gpu, field::pcie_current_speed_gts, "halo_doctor_gpu_pcie_speed_gts",
     "Negotiated PCIe link speed, GT/s (current_link_speed; fact gpu.N.pcie.current_speed_gts)"},
    {Per::gpu, field::pcie_max_speed_gts, "halo_doctor_gpu_pcie_max_speed_gts",
     "Maximum PCIe link speed, GT/s (max_link_speed; fact gpu.N.pcie.max_speed_gts)"},
    {Per::gpu, field::pcie_current_width, "halo_doctor_gpu_pcie_width",
     "Negotiated PCIe link width, lanes (current_link_width; fact gpu.N.pcie.current_width)"},
    {Per::gpu, field::pcie_max_width, "halo_doctor_gpu_pcie_max_width",
     "Maximum PCIe link width, lanes (max_link_width; fact gpu.N.pcie.max_width)"},
    {Per::gpu, field::temp_junction_mc, "halo_doctor_gpu_junction_temperature_celsius",
     "Junction (hotspot) temperature, degrees Celsius (hwmon; fact gpu.N.temp.junction_mc)", 0.001},
    {Per::gpu, field::temp_mem_mc, "halo_doctor_gpu_memory_temperature_celsius",
     "Memory (HBM/VRAM) temperature, degrees Celsius (hwmon; fact gpu.N.temp.mem_mc)", 0.001},
    {Per::gpu, field::temp_edge_mc, "halo_doctor_gpu_edge_temperature_celsius",
     "Edge temperature, degrees Celsius (hwmon; fact gpu.N.temp.edge_mc)", 0.001},
    {Per::gpu, field::power_cap_uw, "halo_doctor_gpu_power_cap_watts",
     "Power cap the SMU holds the GPU to, watts (hwmon power1_cap; fact gpu.N.power.cap_uw)", 1e-6},
    {Per::gpu, field::power_cap_default_uw, "halo_doctor_gpu_power_cap_default_watts",
     "The GPU's default power cap, watts (hwmon power1_cap_default; fact "
     "gpu.N.power.cap_default_uw)",
     1e-6},
    // The exporter's GPU_PACKAGE_POWER (MI300-class: the current socket power).
    {Per::gpu, field::metrics_socket_power_w, "halo_doctor_gpu_package_power_watts",
     "Socket power the SMU reports in gpu_metrics, watts (fact gpu.N.metrics.socket_power_w)"},
    {Per::gpu, field::xgmi_hive_size, "halo_doctor_gpu_xgmi_hive_size",
     "GPUs in this GPU's XGMI hive, itself included (xgmi_num_hops; fact gpu.N.xgmi.hive_size)"},
    {Per::gpu, field::partition_nodes, "halo_doctor_gpu_partitions",
     "Logical GPUs (KFD nodes) of this GPU's card: 1 in SPX, 8 in CPX on an MI300X (fact "
     "gpu.N.partition_nodes)"},
});

/// The key pattern a metric matches: the host key, or its field on every GPU (`*`).
std::string pattern_of(const FactMetric& m) {
  switch (m.scope) {
  case Per::gpu:
    return keys::gpu("*", m.key);
  case Per::hsa_gpu:
    return keys::hsa_gpu("*", m.key);
  case Per::host:
    break;
  }
  return std::string(m.key);
}

/// Adds the GPU's PCI slot and gfx target (facts gpu.N.pci_slot, gpu.N.gfx_target) where known:
/// the labels a fleet dashboard joins on, as the AMD device metrics exporter labels its series.
void gpu_labels(const FactSet& facts, const std::string& index, Labels& labels) {
  if (auto slot = facts.get<std::string>(keys::gpu(index, field::pci_slot)))
    labels.emplace_back("pci_slot", *slot);
  if (auto gfx = facts.get<std::string>(keys::gpu(index, field::gfx_target)))
    labels.emplace_back("gfx", *gfx);
}

/// The `*` segment of `key` for a pattern with one `*`.
std::string star_segment(std::string_view pattern, std::string_view key) {
  const auto star = pattern.find('*');
  if (star == std::string_view::npos) return "";
  const std::size_t tail = pattern.size() - star - 1;
  if (key.size() < star + tail) return "";
  return std::string(key.substr(star, key.size() - star - tail));
}

} // namespace

std::string prometheus_report(const std::vector<Result>& results, const ReportContext& ctx,
                              const FactSet& facts) {
  Exposition e;
  e.gauge("halo_doctor_info", "halo-doctor and rule-set versions of the last run (always 1)");
  e.sample("halo_doctor_info",
           {{"version", ctx.tool_version},
            {"ruleset_version", ctx.ruleset_version},
            {"kernel", ctx.kernel}},
           1.0);

  e.gauge("halo_doctor_rule_failed",
          "1 if the rule failed and no site-policy waiver covers it, else 0 (pass, skip, error, "
          "waived)");
  // A per-GPU rule's samples carry gpu="N" (the gpu.N index) and pci_slot; a host rule's none.
  auto with_gpu = [](const Result& r, Labels labels) {
    if (r.gpu) {
      labels.emplace_back("gpu", std::to_string(r.gpu->index));
      labels.emplace_back("pci_slot", r.gpu->pci_slot);
    }
    return labels;
  };
  for (const auto& r : results)
    e.sample(
        "halo_doctor_rule_failed",
        with_gpu(
            r, {{"id", r.id}, {"severity", std::string(to_string(r.severity))}, {"area", r.area}}),
        r.status == Outcome::fail && !r.waived() ? 1.0 : 0.0);

  e.gauge("halo_doctor_rule_status",
          "Outcome of each rule as the status label (pass, fail, waived, skip, error); always 1");
  for (const auto& r : results)
    e.sample("halo_doctor_rule_status",
             with_gpu(r, {{"id", r.id},
                          {"severity", std::string(to_string(r.severity))},
                          {"status",
                           r.waived() ? std::string("waived") : std::string(to_string(r.status))}}),
             1.0);

  std::map<std::string, int> by_status = {
      {"pass", 0}, {"fail", 0}, {"waived", 0}, {"skip", 0}, {"error", 0}};
  for (const auto& r : results)
    ++by_status[r.waived() ? std::string("waived") : std::string(to_string(r.status))];
  e.gauge("halo_doctor_results", "Number of rules by outcome (fail excludes waived failures)");
  for (const auto& [status, n] : by_status)
    e.sample("halo_doctor_results", {{"status", status}}, static_cast<double>(n));

  e.gauge("halo_doctor_exit_code",
          "Exit code of `check`: 0 ok, 1 failed, 4 only failures pending a reboot");
  e.sample("halo_doctor_exit_code", {}, static_cast<double>(ctx.exit_code));

  e.gauge("halo_doctor_run_duration_seconds", "Wall-clock time of the halo-doctor run, seconds");
  e.sample("halo_doctor_run_duration_seconds", {}, fmt::format("{:.6f}", ctx.duration_seconds));

  if (ctx.finished_unix_seconds > 0) {
    e.gauge("halo_doctor_last_run_timestamp_seconds",
            "When the halo-doctor run finished, seconds since the Unix epoch");
    e.sample("halo_doctor_last_run_timestamp_seconds", {},
             static_cast<double>(ctx.finished_unix_seconds));
  }

  for (const auto& m : kFactMetrics) {
    const std::string pattern = pattern_of(m);
    bool started = false;
    for (const Fact* f : facts.match(pattern)) {
      const auto v = facts.get_number(f->key);
      if (!v) continue; // not ok: left out, never 0
      if (!started) e.gauge(m.name, m.help);
      started = true;
      Labels labels;
      if (m.scope != Per::host) {
        const std::string index = star_segment(pattern, f->key);
        labels.emplace_back("gpu", index);
        // Only gpu.N.* facts: hsa.gpu.N counts ROCr's visible GPUs, another numbering.
        if (m.scope == Per::gpu) gpu_labels(facts, index, labels);
      }
      e.sample(m.name, labels, *v * m.scale);
    }
  }
  // Throttler reasons active now, by kind (gpu_metrics' ASIC-independent throttle status): the
  // number of reasons set, 0 when none; left out where the table has no such status.
  bool started = false;
  constexpr std::array<std::pair<const char*, std::string_view>, 3> kThrottle = {{
      {"thermal", field::metrics_throttle_thermal},
      {"power", field::metrics_throttle_power},
      {"current", field::metrics_throttle_current},
  }};
  for (const auto& [kind, throttle_field] : kThrottle) {
    const std::string pattern = keys::gpu("*", throttle_field);
    for (const Fact* f : facts.match(pattern)) {
      const auto* reasons = std::get_if<std::vector<std::string>>(&f->value);
      if (!f->ok() || reasons == nullptr) continue;
      if (!started)
        e.gauge("halo_doctor_gpu_throttle_reasons",
                "Throttler reasons the SMU reports active now, by kind (thermal, power, current; "
                "gpu_metrics indep_throttle_status; facts gpu.N.metrics.throttle_*)");
      started = true;
      const std::string index = star_segment(pattern, f->key);
      Labels labels{{"gpu", index}};
      gpu_labels(facts, index, labels);
      labels.emplace_back("kind", kind);
      e.sample("halo_doctor_gpu_throttle_reasons", labels, static_cast<double>(reasons->size()));
    }
  }
  return e.str();
}

} // namespace halo

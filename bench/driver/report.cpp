// SPDX-License-Identifier: MIT
// halo-bench fact recording and printing shared by the parts: fact-key shape names, timing
// sources, rates with median and spread, the sampled GEMM output check, the facts file.
#include "driver.hpp"
#include "halo_bench/checks.hpp"

#include <cstdio>
#include <string>

namespace halo_bench::driver {

std::string shape_key(const GemmShape& s) {
  return "m" + std::to_string(s.m) + "_n" + std::to_string(s.n) + "_k" + std::to_string(s.k);
}

std::string timing_source(const std::string& what, const Options& o) {
  return "halo-bench " + what + ", " + std::string(gpu::backend_name()) +
         "Event timing, median of " + std::to_string(o.reps);
}

Summary Recorder::record_rate(const std::string& value_key, const std::string& stats_prefix,
                              double work, const std::vector<double>& ms, const std::string& what) {
  const Summary s = halo_bench::summarize(ms);
  const double rate = halo_bench::per_second_giga(work, s.median);
  const std::string source = timing_source(what, options);
  facts.set_ok(value_key, value_key.ends_with("tflops") ? rate / 1000.0 : rate, source);
  facts.set_ok(stats_prefix + ".median_ms", s.median, source);
  facts.set_ok(stats_prefix + ".spread", s.spread, source + "; (max-min)/median");
  return s;
}

void print_rate(const char* label, double value, const char* unit, const Summary& s) {
  std::printf("  %-34s %10.2f %-7s (median %.3f ms, spread %.1f%%, n=%zu)\n", label, value, unit,
              s.median, 100.0 * s.spread, s.count);
}

bool check_gemm(gpu::GemmSession& session, const std::vector<std::int64_t>& flat,
                const std::vector<double>& expected, FactSet& facts, const std::string& key,
                const std::string& what) {
  const std::vector<float> got = session.gather_output(flat);
  const halo_bench::CheckResult check = halo_bench::check_relative(
      expected, got, gemm_tolerance, halo_bench::relative_floor(expected));
  facts.set_ok(key + ".max_rel_err", check.max_rel_error,
               "halo-bench " + what + " vs CPU reference on " + std::to_string(check.compared) +
                   " sampled outputs");
  if (!check.ok) {
    facts.set_error(key + ".tflops", check.reason);
    std::printf("  %-34s ERROR %s\n", what.c_str(), check.reason.c_str());
  }
  return check.ok;
}

std::optional<double>
GemmMeasure::operator()(const std::string& key, const std::string& what,
                        const std::vector<double>& expect,
                        const std::function<std::vector<double>()>& timed) const {
  Recorder rec{facts, options};
  try {
    session.poison_output();
    const std::vector<double> ms = timed();
    if (!check_gemm(session, flat, expect, facts, key, what)) {
      return std::nullopt;
    }
    const Summary s = rec.record_rate(key + ".tflops", key, flops, ms, what);
    const double tflops = halo_bench::per_second_giga(flops, s.median) / 1000.0;
    if (peak_tflops > 0.0) {
      facts.set_ok(key + ".pct_of_peak", 100.0 * tflops / peak_tflops,
                   "TFLOP/s / table peak dense BF16");
    }
    print_rate(what.c_str(), tflops, "TFLOP/s", s);
    return tflops;
  } catch (const gpu::GpuError& e) {
    facts.set_error(key + ".tflops", e.what());
    std::printf("  %-34s ERROR %s\n", what.c_str(), e.what());
    return std::nullopt;
  }
}

void write_facts(const Options& o, const FactSet& facts) {
  if (!o.json_path.empty()) {
    facts.write(o.json_path, halo_bench::tool_version);
    std::printf("facts written to %s\n", o.json_path.c_str());
  }
}

} // namespace halo_bench::driver

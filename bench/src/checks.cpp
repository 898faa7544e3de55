// SPDX-License-Identifier: MIT
#include "halo_bench/checks.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

namespace halo_bench {

double relative_floor(std::span<const double> expected, double fraction) {
  double largest = 0.0;
  for (const double value : expected) {
    if (std::isfinite(value)) {
      largest = std::max(largest, std::fabs(value));
    }
  }
  return std::max(largest * fraction, static_cast<double>(std::numeric_limits<float>::min()));
}

CheckResult check_relative(std::span<const double> expected, std::span<const float> got,
                           double tolerance, double abs_floor) {
  CheckResult result;
  if (expected.size() != got.size() || expected.empty()) {
    result.reason = "result check failed: compared " + std::to_string(got.size()) +
                    " values against " + std::to_string(expected.size()) + " reference values";
    return result;
  }
  const double floor = std::max(abs_floor, static_cast<double>(std::numeric_limits<float>::min()));
  result.compared = expected.size();
  for (std::size_t i = 0; i < expected.size(); ++i) {
    const double value = static_cast<double>(got[i]);
    double err = 0.0;
    if (!std::isfinite(value)) {
      err = std::isfinite(expected[i]) ? std::numeric_limits<double>::infinity() : 0.0;
    } else {
      err = std::fabs(value - expected[i]) / std::max(std::fabs(expected[i]), floor);
    }
    if (err > tolerance) {
      ++result.mismatches;
    }
    if (err > result.max_rel_error || (i == 0 && err >= result.max_rel_error)) {
      result.max_rel_error = err;
      result.worst_index = i;
    }
  }
  result.ok = result.mismatches == 0;
  if (!result.ok) {
    char buffer[160];
    std::snprintf(buffer, sizeof buffer,
                  "result check failed: max rel err %.3g > %.3g (%zu of %zu sampled elements)",
                  result.max_rel_error, tolerance, result.mismatches, result.compared);
    result.reason = buffer;
  }
  return result;
}

CheckResult check_bit_exact(std::span<const bf16_bits> expected, std::span<const bf16_bits> got) {
  CheckResult result;
  if (expected.size() != got.size()) {
    result.reason = "bit-exact check failed: " + std::to_string(got.size()) + " values, expected " +
                    std::to_string(expected.size());
    return result;
  }
  result.compared = expected.size();
  bool first = true;
  for (std::size_t i = 0; i < expected.size(); ++i) {
    if (expected[i] != got[i]) {
      ++result.mismatches;
      if (first) {
        first = false;
        result.worst_index = i;
        char buffer[160];
        std::snprintf(buffer, sizeof buffer,
                      "bit-exact check failed: element %zu is 0x%04x, expected 0x%04x", i,
                      static_cast<unsigned>(got[i]), static_cast<unsigned>(expected[i]));
        result.reason = buffer;
      }
    }
  }
  result.ok = result.mismatches == 0;
  if (!result.ok) {
    result.reason += " (" + std::to_string(result.mismatches) + " of " +
                     std::to_string(result.compared) + " differ)";
  }
  return result;
}

} // namespace halo_bench

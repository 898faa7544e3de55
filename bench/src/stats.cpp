// SPDX-License-Identifier: MIT
#include "halo_bench/stats.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <vector>

namespace halo_bench {

Summary summarize(std::span<const double> samples) {
  if (samples.empty()) {
    throw std::invalid_argument("summarize: no samples");
  }
  std::vector<double> sorted(samples.begin(), samples.end());
  if (std::any_of(sorted.begin(), sorted.end(), [](double v) { return std::isnan(v); })) {
    throw std::invalid_argument("summarize: NaN sample");
  }
  std::sort(sorted.begin(), sorted.end());
  Summary s;
  s.count = sorted.size();
  const std::size_t mid = s.count / 2;
  s.median = (s.count % 2 == 1) ? sorted[mid] : 0.5 * (sorted[mid - 1] + sorted[mid]);
  s.min = sorted.front();
  s.max = sorted.back();
  double sum = 0.0;
  for (const double v : sorted) {
    sum += v;
  }
  s.mean = sum / static_cast<double>(s.count);
  if (s.count > 1) {
    double squares = 0.0;
    for (const double v : sorted) {
      squares += (v - s.mean) * (v - s.mean);
    }
    s.stddev = std::sqrt(squares / static_cast<double>(s.count - 1));
  }
  s.spread = s.median != 0.0 ? (s.max - s.min) / s.median : 0.0;
  return s;
}

double per_second_giga(double work, double milliseconds) noexcept {
  if (!(milliseconds > 0.0)) {
    return 0.0;
  }
  return work / (milliseconds * 1e-3) / 1e9;
}

} // namespace halo_bench

// SPDX-License-Identifier: MIT
// Statistics over repeated timings.
#pragma once

#include <cstddef>
#include <span>

namespace halo_bench {

/// Summary of repeated measurements (any unit; halo-bench uses milliseconds per repetition).
struct Summary {
  std::size_t count = 0; ///< number of samples
  double median = 0.0;   ///< middle value; mean of the two middle values for an even count
  double min = 0.0;      ///< smallest sample
  double max = 0.0;      ///< largest sample
  double mean = 0.0;     ///< arithmetic mean
  double stddev = 0.0;   ///< sample standard deviation (n-1 in the denominator; 0 when n < 2)
  double spread = 0.0;   ///< (max - min) / median, the relative range; 0 when median == 0
};

/// Summarises `samples`. Throws std::invalid_argument when it is empty or holds a NaN.
Summary summarize(std::span<const double> samples);

/// Converts a time per repetition to a rate: work / (ms * 1e-3) / 1e9, i.e. GB/s for bytes or
/// GFLOP/s for flops. Returns 0 for a non-positive time.
double per_second_giga(double work, double milliseconds) noexcept;

} // namespace halo_bench

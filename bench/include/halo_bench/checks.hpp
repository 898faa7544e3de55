// SPDX-License-Identifier: MIT
// Result checks: a failed check turns a benchmark number into an error fact.
#pragma once

#include "halo_bench/bf16.hpp"

#include <cstddef>
#include <span>
#include <string>

namespace halo_bench {

/// Outcome of comparing a GPU result against the CPU reference.
struct CheckResult {
  bool ok = false;             ///< true when every compared element passed
  double max_rel_error = 0.0;  ///< largest relative error seen (0 for bit-exact checks)
  std::size_t worst_index = 0; ///< index (in the compared spans) of the worst element
  std::size_t mismatches = 0;  ///< elements over tolerance (or differing bits)
  std::size_t compared = 0;    ///< elements compared
  std::string reason;          ///< empty when ok, else a one-line explanation for the facts
};

/// Relative-error check of `got` against `expected` (same length, at least 1 element):
/// err_i = |got_i - expected_i| / max(|expected_i|, abs_floor). abs_floor keeps outputs near zero
/// from turning rounding noise into a huge ratio; pass for example 1e-3 * max|expected|.
/// A NaN or infinity in `got` where `expected` is finite fails the check. ok = max err <= tol.
CheckResult check_relative(std::span<const double> expected, std::span<const float> got,
                           double tolerance, double abs_floor);

/// Convenience floor for check_relative: `fraction` times the largest |expected| (at least the
/// smallest normal float, so the division is always defined).
double relative_floor(std::span<const double> expected, double fraction = 1e-3);

/// Bit-exact comparison of two bf16 arrays (equal length required, else the check fails). NaNs
/// must match bit for bit too. reason names the first differing index and both bit patterns.
CheckResult check_bit_exact(std::span<const bf16_bits> expected, std::span<const bf16_bits> got);

} // namespace halo_bench

// SPDX-License-Identifier: MIT
#include <halo/units.hpp>

#include <fmt/format.h>

namespace halo::units {

std::string overflow_reason(std::int64_t count, std::string_view unit, std::int64_t unit_bytes) {
  return fmt::format("{} {} x {} bytes does not fit a signed 64-bit integer (bytes)", count, unit,
                     unit_bytes);
}

std::string gib(std::int64_t bytes) {
  return gib_of(static_cast<double>(bytes));
}

std::string gib_of(double bytes) {
  return fmt::format("{:.2f} GiB", bytes / static_cast<double>(kGiB));
}

std::string pages_gib(std::int64_t pages) {
  return gib_of(static_cast<double>(pages) * static_cast<double>(kTtmPageBytes));
}

} // namespace halo::units

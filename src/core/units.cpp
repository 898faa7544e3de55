// SPDX-License-Identifier: MIT
#include <halo/units.hpp>

#include <fmt/format.h>

namespace halo::units {

std::string gib(std::int64_t bytes) {
  return fmt::format("{:.2f} GiB", static_cast<double>(bytes) / static_cast<double>(kGiB));
}

} // namespace halo::units

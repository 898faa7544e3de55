// SPDX-License-Identifier: MIT
// Shared pieces of the libFuzzer targets (tests/fuzz/README.md).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace halo::fuzz {

/// The fuzzer's bytes as text.
inline std::string_view text(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

} // namespace halo::fuzz

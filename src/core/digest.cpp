// SPDX-License-Identifier: MIT
#include <halo/digest.hpp>

#include <nettle/sha2.h>

#include <array>
#include <cstdint>

namespace halo {

std::string sha256_hex(std::string_view data) {
  sha256_ctx ctx{};
  sha256_init(&ctx);
  sha256_update(&ctx, data.size(), reinterpret_cast<const std::uint8_t*>(data.data()));
  std::array<std::uint8_t, SHA256_DIGEST_SIZE> md{};
  sha256_digest(&ctx, md.size(), md.data());
  static constexpr std::string_view kHex = "0123456789abcdef";
  std::string out;
  out.reserve(2 * md.size());
  for (const std::uint8_t byte : md) {
    out.push_back(kHex[byte >> 4U]);
    out.push_back(kHex[byte & 0xfU]);
  }
  return out;
}

} // namespace halo

// SPDX-License-Identifier: MIT
// SHA-256 for the fix: the machine tag a script is bound to, and the hash `fix --apply` shows of
// the script it runs. nettle (Debian nettle-dev), the library libarchive already links.
#include <halo/fix.hpp>

#include <fmt/format.h>

#include <nettle/sha2.h>

#include <array>
#include <cstdint>

namespace halo::fix {

std::string sha256_hex(std::string_view data) {
  sha256_ctx ctx{};
  sha256_init(&ctx);
  sha256_update(&ctx, data.size(), reinterpret_cast<const std::uint8_t*>(data.data()));
  std::array<std::uint8_t, SHA256_DIGEST_SIZE> md{};
  sha256_digest(&ctx, md.size(), md.data());
  std::string out;
  out.reserve(md.size() * 2);
  for (const std::uint8_t b : md)
    out += fmt::format("{:02x}", b);
  return out;
}

std::string machine_tag(std::string_view machine_id) {
  // The script computes: printf 'halo-doctor fix:%s' "$(head -n 1 /etc/machine-id)" | sha256sum
  // ($(...) drops the newline; machine-id(5): 32 hex digits and a newline).
  const auto nl = machine_id.find('\n');
  if (nl != std::string_view::npos) machine_id = machine_id.substr(0, nl);
  if (machine_id.empty()) return "";
  return sha256_hex(fmt::format("halo-doctor fix:{}", machine_id)).substr(0, 16);
}

} // namespace halo::fix

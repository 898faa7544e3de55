// SPDX-License-Identifier: MIT
// The machine tag a fix script is bound to (SHA-256 through halo/digest.hpp).
#include <halo/digest.hpp>
#include <halo/fix.hpp>

#include <fmt/format.h>

namespace halo::fix {

std::string machine_tag(std::string_view machine_id) {
  // The script computes: printf 'halo-doctor fix:%s' "$(head -n 1 /etc/machine-id)" | sha256sum
  // ($(...) drops the newline; machine-id(5): 32 hex digits and a newline).
  const auto nl = machine_id.find('\n');
  if (nl != std::string_view::npos) machine_id = machine_id.substr(0, nl);
  if (machine_id.empty()) return "";
  return sha256_hex(fmt::format("halo-doctor fix:{}", machine_id)).substr(0, 16);
}

} // namespace halo::fix

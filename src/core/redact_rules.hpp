// SPDX-License-Identifier: MIT
// The naming rules of the one redactor (include/halo/redact.hpp, src/core/redact.cpp), which
// the capture bundle (src/core/bundle_redact.cpp) and the Markdown report apply: which facts hold
// identifiers, which values identify nothing, the pseudonyms that replace host, user and serial,
// and where a URL holds credentials.
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace halo::redact_rules {

/// What replaces the machine's host name, in files, facts and report text.
inline constexpr std::string_view kHost = "redacted-host";

/// The pseudonym of the n-th person learnt (1-based): "user1".
inline std::string user(std::size_t n) {
  return fmt::format("user{}", n);
}

/// The pseudonym of the n-th identifier learnt (1-based) written as text: "redacted-serial-1".
inline std::string serial(std::size_t n) {
  return fmt::format("redacted-serial-{}", n);
}

/// A value that is one of the pseudonyms above already (a replayed bundle's facts): learning it
/// again would rename `user2` to `user1` in the report of the replay. Host `redacted-host[-N]`,
/// user `userN`, `redacted-serial-N`, a UUID `00000000-0000-0000-0000-<N>`, and hex or decimal
/// numbers below 2^16 (a GPU's or machine's pseudonym N; a real unique_id or machine-id is random
/// over 64 or 128 bits).
inline bool is_pseudonym(std::string_view v) {
  auto digits_from = [&](std::size_t at, int base) {
    if (at >= v.size() || v.size() - at > 40) return false;
    std::size_t value = 0;
    for (std::size_t i = at; i < v.size(); ++i) {
      const char c = v[i];
      int d = -1;
      if (c >= '0' && c <= '9') d = c - '0';
      if (base == 16 && c >= 'a' && c <= 'f') d = c - 'a' + 10;
      if (d < 0) return false;
      if (value >= 65536) return false;
      value = value * static_cast<std::size_t>(base) + static_cast<std::size_t>(d);
    }
    return value < 65536;
  };
  if (v == kHost) return true;
  if (v.starts_with(kHost) && v.size() > kHost.size() + 1 && v[kHost.size()] == '-')
    return digits_from(kHost.size() + 1, 10);
  if (v.starts_with("user")) return digits_from(4, 10);
  if (v.starts_with("redacted-serial-")) return digits_from(16, 10);
  if (v.starts_with("00000000-0000-0000-0000-")) return digits_from(24, 16);
  return digits_from(0, 16);
}

/// A fact whose key names a serial number, UUID or unique id holds an identifier (DMI
/// product_serial/product_uuid, amdgpu `serial_number` and `unique_id`, ROCr's agent UUID).
inline bool identifier_key(std::string_view key) {
  return key.find("serial") != std::string_view::npos ||
         key.find("uuid") != std::string_view::npos ||
         key.find("unique_id") != std::string_view::npos;
}

/// A value that identifies no machine, and is kept as it is: empty, all zeros, one character
/// repeated ("FFFFFFFF", "........"), or the text firmware leaves in DMI fields nobody filled in
/// (dmidecode's "junk" strings, dmidecode.c dmi_dump/is_printable and its OEM placeholders).
/// Replacing such text everywhere would change other fields that hold it (a board_vendor of
/// "Default string").
inline bool identifies_nothing(std::string_view v) {
  if (v.find_first_not_of("0 ") == std::string_view::npos) return true;
  std::string low(v);
  std::transform(low.begin(), low.end(), low.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  for (const char* p : {"to be filled by o.e.m.", "default string", "not specified",
                        "not applicable", "none", "n/a", "unknown", "system serial number",
                        "chassis serial number", "base board serial number", "0123456789",
                        "123456789", "03000200-0400-0500-0006-000700080009"})
    if (low == p) return true;
  return v.find_first_not_of(v.front()) == std::string_view::npos;
}

/// The userinfo of every URL in `v` (RFC 3986 3.2.1: `scheme://userinfo@host`), as (offset,
/// length) spans of `v`. A URL ends at white space or a list separator; its userinfo ends at the
/// last '@' before that (a password may hold '/' or ':' unescaped: over-masking is safe, leaking
/// is not). The one scan behind mask_url_credentials (what a value shows) and the bundle's
/// learning of URL passwords (removed wherever else they occur).
inline std::vector<std::pair<std::size_t, std::size_t>> url_userinfo(std::string_view v) {
  std::vector<std::pair<std::size_t, std::size_t>> out;
  for (std::size_t i = 0; (i = v.find("://", i)) != std::string_view::npos;) {
    const std::size_t start = i + 3;
    std::size_t end = v.find_first_of(" \t\n,;\"'<>", start);
    if (end == std::string_view::npos) end = v.size();
    const auto at = v.substr(start, end - start).rfind('@');
    if (at != std::string_view::npos) {
      out.emplace_back(start, at);
      i = start + at;
    } else {
      i = start;
    }
  }
  return out;
}

} // namespace halo::redact_rules

// SPDX-License-Identifier: MIT
// The naming rules both redactors follow, so that a report pasted in public
// (TextRedactor, src/core/redact.cpp) says of the machine what its capture bundle says
// (Redactor, src/core/bundle_redact.cpp): which facts hold identifiers, which values identify
// nothing, and the pseudonyms that replace host, user and serial.
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <string>
#include <string_view>

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

} // namespace halo::redact_rules

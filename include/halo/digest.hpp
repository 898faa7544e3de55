// SPDX-License-Identifier: MIT
#pragma once

#include <string>
#include <string_view>

namespace halo {

/// SHA-256 (FIPS 180-4) of `data`, as 64 lower-case hex digits. nettle's sha256_init,
/// sha256_update and sha256_digest (Debian nettle-dev, the library libarchive itself links; nettle
/// manual, "Recommended hash functions"). The one digest of the doctor: the rule set's digest
/// (`ruleset.digest`, src/rules/loader.cpp), the fix's machine tag and the hash `fix --apply`
/// shows of the script it runs (src/fix/digest.cpp). Never throws.
std::string sha256_hex(std::string_view data);

} // namespace halo

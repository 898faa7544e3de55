// SPDX-License-Identifier: MIT
// Redaction of report text meant to be pasted in public (`check --format markdown`), by the rules
// a capture bundle follows (include/halo/bundle.hpp CaptureOptions::redact, docs/security.md).
#pragma once

#include <halo/fact.hpp>

#include <map>
#include <string>
#include <string_view>

namespace halo {

/// Replaces, in any text, what identifies the machine or its people, learnt from the facts:
/// the host name (fact host.name) by `redacted-host`, as a bundle stores it; the user names
/// (facts user.name, env.sudo_user, and every NAME of a `/home/NAME` or `/var/home/NAME` path in
/// a string fact) by `user1`, `user2`, ... in that order of first sight, as a bundle's home
/// directories; the
/// userinfo of every URL (`https://user:pass@host` -> `https://<masked>@host`,
/// mask_url_credentials). A name is replaced where it stands as a word, not inside a path
/// component of another name (`/dev/kfd` keeps its `dev` when a user is called dev). Serial
/// numbers and UUIDs: the values of facts whose key names a serial, uuid or unique_id become
/// `redacted-serial-N`, unless they identify nothing (all zeros, a DMI placeholder such as "To be
/// filled by O.E.M."). These naming rules are the capture bundle's (src/core/redact_rules.hpp).
class TextRedactor {
public:
  explicit TextRedactor(const FactSet& facts);
  /// `text` with the learnt identities replaced.
  std::string operator()(std::string_view text) const;
  /// The user pseudonym of a name ("user1"), empty when the name was not learnt.
  std::string user(std::string_view name) const;

private:
  void learn_user(const std::string& name);
  std::string hostname_;
  std::map<std::string, std::string, std::less<>> users_;
  std::map<std::string, std::string, std::less<>> ids_;
};

} // namespace halo

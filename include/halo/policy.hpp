// SPDX-License-Identifier: MIT
// Site policy: a lab's thresholds, severity overrides, skipped rules and waivers, kept in one JSON
// file (`check --policy FILE`), checked against docs/policy.schema.json and described in
// docs/policy.md.
#pragma once

#include <halo/result.hpp>
#include <halo/rules.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace halo {

/// A rule the policy does not evaluate here, with the reason the report shows.
struct PolicySkip {
  std::string rule;
  std::string reason;
  std::size_t line = 0; ///< line of the entry in the policy file
};

/// A time-limited acceptance of a failing rule: who accepted it, why, and until when.
struct PolicyWaiver {
  std::string rule;
  std::string reason;
  std::string owner;
  std::string expires; ///< last day it holds, YYYY-MM-DD (inclusive)
  std::size_t line = 0;
};

/// A parsed policy file. Every field is optional in the file.
struct Policy {
  std::string origin; ///< the file it came from, for messages
  /// Default for `--reserve` in GiB (the flag wins when given).
  std::optional<std::int64_t> reserve_gib;
  /// Thresholds passed to rules as params `min_kernel` and `min_rocm` (version strings).
  std::optional<std::string> min_kernel;
  std::optional<std::string> min_rocm;
  /// Severity a rule's failures are reported with at this site, by rule id.
  std::map<std::string, Severity, std::less<>> severity;
  std::vector<PolicySkip> skip;
  std::vector<PolicyWaiver> waivers;
  /// `"slurm": {"prolog": [ids], "epilog": [ids]}`: the rules `halo-doctor slurm prolog` and
  /// `epilog` evaluate instead of the volatile ones (docs/slurm.md); absent: the default.
  std::optional<std::vector<std::string>> slurm_prolog_rules;
  std::optional<std::vector<std::string>> slurm_epilog_rules;
  /// Line of each rule id mentioned (severity, skip, waivers), for unknown-id messages.
  std::map<std::string, std::size_t, std::less<>> id_lines;
};

/// Parses and validates a policy (the schema in docs/policy.schema.json). Throws InputError
/// "ORIGIN:LINE: ..." for JSON syntax errors, unknown keys, wrong types, bad dates or severities.
Policy parse_policy(std::string_view text, std::string_view origin);

/// Reads and parses a policy file; an unreadable file is an InputError naming it.
Policy load_policy_file(const std::string& path);

/// Throws InputError "ORIGIN:LINE: unknown rule id" if the policy names a rule `rules` lacks.
void check_policy_rule_ids(const Policy& policy, const RuleSet& rules);

/// Applies the policy to evaluated results, in place: severity overrides, then skips (status
/// skip, message "skipped by site policy: REASON"), then waivers: a failure whose waiver expires
/// on or after `today` (YYYY-MM-DD) gets Result::waiver; a failure with an expired waiver stays a
/// plain failure and its message says "waiver ... expired on DATE".
void apply_policy(const Policy& policy, std::vector<Result>& results, std::string_view today);

/// Params the policy contributes to rules: min_kernel, min_rocm when set.
void add_policy_params(const Policy& policy, Params& params);

/// Today's local date as YYYY-MM-DD (the clock waivers are compared with).
std::string today_local_date();

} // namespace halo

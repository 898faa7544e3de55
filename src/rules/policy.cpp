// SPDX-License-Identifier: MIT
// Site policy: parsing with line numbers, validation, and application to results.
#include <halo/error.hpp>
#include <halo/io.hpp>
#include <halo/policy.hpp>
#include <halo/schema.hpp>

#include <fmt/chrono.h>
#include <fmt/format.h>

#include <re2/re2.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <fstream>
#include <sstream>

namespace halo {
namespace {

class Checker {
public:
  Checker(std::string_view origin, const JsonPositions& pos) : origin_(origin), pos_(pos) {}

  [[noreturn]] void fail(const std::string& pointer, const std::string& what) const {
    throw InputError(fmt::format("{}:{}: {}: {}", origin_, pos_.line(pointer),
                                 pointer.empty() ? "policy" : pointer.substr(1), what));
  }
  std::size_t line(const std::string& pointer) const { return pos_.line(pointer); }

  void only_keys(const nlohmann::json& obj, const std::string& ptr,
                 std::initializer_list<std::string_view> allowed) const {
    for (const auto& [k, v] : obj.items()) {
      bool ok = false;
      for (auto a : allowed)
        ok = ok || a == k;
      if (!ok) fail(fmt::format("{}/{}", ptr, k), fmt::format("unknown key '{}'", k));
    }
  }
  std::string text(const nlohmann::json& obj, const std::string& ptr, const char* key) const {
    if (!obj.contains(key)) fail(ptr, fmt::format("'{}' is required", key));
    const auto& v = obj[key];
    if (!v.is_string() || v.get<std::string>().empty())
      fail(ptr + "/" + key, "must be a non-empty string");
    return v.get<std::string>();
  }

private:
  std::string_view origin_;
  const JsonPositions& pos_;
};

bool valid_date(const std::string& s) {
  static const RE2 re(R"((\d{4})-(\d{2})-(\d{2}))");
  int year = 0;
  unsigned month = 0;
  unsigned day = 0;
  if (!RE2::FullMatch(s, re, &year, &month, &day)) return false;
  // A real calendar day (std::chrono: 2026-02-31 and 2025-02-29 are not; 2028-02-29 is).
  return std::chrono::year_month_day(std::chrono::year(year), std::chrono::month(month),
                                     std::chrono::day(day))
      .ok();
}

} // namespace

// Defined in the generated embedded_rules.cpp (cmake/EmbedRules.cmake).
std::string embedded_policy_schema();

Policy parse_policy(std::string_view text, std::string_view origin) {
  // Depth-checked first: JsonPositions walks the text recursively.
  const nlohmann::json doc = parse_json_input(text, origin);
  const JsonPositions pos(text);
  const Checker c(origin, pos);
  if (!doc.is_object()) c.fail("", "must be a JSON object");
  c.only_keys(doc, "",
              {"$schema", "policy_version", "thresholds", "severity", "skip", "waivers", "slurm"});

  Policy p;
  p.origin = std::string(origin);
  if (doc.contains("policy_version") &&
      (!doc["policy_version"].is_number_integer() ||
       doc["policy_version"].get<std::int64_t>() != 1)) // not get<int>: 2^32+1 would be 1
    c.fail("/policy_version", "must be 1 (the only policy format this halo-doctor knows)");

  if (doc.contains("thresholds")) {
    const auto& t = doc["thresholds"];
    if (!t.is_object()) c.fail("/thresholds", "must be an object");
    c.only_keys(t, "/thresholds", {"reserve_gib", "min_kernel", "min_rocm"});
    if (t.contains("reserve_gib")) {
      const auto& v = t["reserve_gib"];
      if (!v.is_number_integer() || v.get<std::int64_t>() < 0 || v.get<std::int64_t>() > 4096)
        c.fail("/thresholds/reserve_gib", "must be an integer number of GiB from 0 to 4096");
      p.reserve_gib = v.get<std::int64_t>();
    }
    static const RE2 version_re(R"(\d+(\.\d+)*)");
    for (const char* k : {"min_kernel", "min_rocm"}) {
      if (!t.contains(k)) continue;
      const auto& v = t[k];
      if (!v.is_string() || !RE2::FullMatch(v.get<std::string>(), version_re))
        c.fail(fmt::format("/thresholds/{}", k), "must be a dotted version such as \"6.14\"");
      (std::string_view(k) == "min_kernel" ? p.min_kernel : p.min_rocm) = v.get<std::string>();
    }
  }

  if (doc.contains("severity")) {
    const auto& s = doc["severity"];
    if (!s.is_object()) c.fail("/severity", "must be an object of rule id to severity");
    for (const auto& [id, v] : s.items()) {
      const std::string ptr = "/severity/" + id;
      const auto sev = v.is_string() ? parse_severity(v.get<std::string>()) : std::nullopt;
      if (!sev) c.fail(ptr, R"(must be "error", "warning" or "info")");
      p.severity[id] = *sev;
      p.id_lines.emplace(id, c.line(ptr));
    }
  }

  if (doc.contains("skip")) {
    const auto& s = doc["skip"];
    if (!s.is_array()) c.fail("/skip", "must be a list of {rule, reason}");
    for (std::size_t i = 0; i < s.size(); ++i) {
      const std::string ptr = fmt::format("/skip/{}", i);
      if (!s[i].is_object()) c.fail(ptr, "must be an object {rule, reason}");
      c.only_keys(s[i], ptr, {"rule", "reason"});
      PolicySkip sk{c.text(s[i], ptr, "rule"), c.text(s[i], ptr, "reason"), c.line(ptr)};
      p.id_lines.emplace(sk.rule, c.line(ptr + "/rule"));
      p.skip.push_back(std::move(sk));
    }
  }

  if (doc.contains("waivers")) {
    const auto& w = doc["waivers"];
    if (!w.is_array()) c.fail("/waivers", "must be a list of {rule, reason, owner, expires}");
    for (std::size_t i = 0; i < w.size(); ++i) {
      const std::string ptr = fmt::format("/waivers/{}", i);
      if (!w[i].is_object()) c.fail(ptr, "must be an object {rule, reason, owner, expires}");
      c.only_keys(w[i], ptr, {"rule", "reason", "owner", "expires"});
      PolicyWaiver pw{c.text(w[i], ptr, "rule"), c.text(w[i], ptr, "reason"),
                      c.text(w[i], ptr, "owner"), c.text(w[i], ptr, "expires"), c.line(ptr)};
      if (!valid_date(pw.expires))
        c.fail(ptr + "/expires", fmt::format("'{}' is not a date YYYY-MM-DD", pw.expires));
      p.id_lines.emplace(pw.rule, c.line(ptr + "/rule"));
      p.waivers.push_back(std::move(pw));
    }
  }
  if (doc.contains("slurm")) {
    const auto& sl = doc["slurm"];
    if (!sl.is_object()) c.fail("/slurm", "must be an object {prolog, epilog}");
    c.only_keys(sl, "/slurm", {"prolog", "epilog"});
    for (const char* mode : {"prolog", "epilog"}) {
      if (!sl.contains(mode)) continue;
      const std::string ptr = fmt::format("/slurm/{}", mode);
      const auto& ids = sl[mode];
      if (!ids.is_array()) c.fail(ptr, "must be a list of rule ids");
      std::vector<std::string> list;
      for (std::size_t i = 0; i < ids.size(); ++i) {
        const std::string ip = fmt::format("{}/{}", ptr, i);
        if (!ids[i].is_string() || ids[i].get<std::string>().empty())
          c.fail(ip, "must be a rule id");
        list.push_back(ids[i].get<std::string>());
        p.id_lines.emplace(list.back(), c.line(ip));
      }
      (std::string_view(mode) == "prolog" ? p.slurm_prolog_rules : p.slurm_epilog_rules) =
          std::move(list);
    }
  }
  // docs/policy.schema.json is the published definition: what it refuses is refused, after the
  // checks above have given their more precise messages.
  static const nlohmann::json schema = nlohmann::json::parse(embedded_policy_schema());
  validate_against_schema(schema, doc, text, origin);
  return p;
}

Policy load_policy_file(const std::string& path) {
  return parse_policy(read_input_file(path), path);
}

void check_policy_rule_ids(const Policy& policy, const RuleSet& rules) {
  for (const auto& [id, line] : policy.id_lines)
    if (rules.find(id) == nullptr)
      throw InputError(fmt::format("{}:{}: unknown rule id '{}' (see halo-doctor rules)",
                                   policy.origin, line, id));
}

void apply_policy(const Policy& policy, std::vector<Result>& results, std::string_view today) {
  for (auto& r : results) {
    if (auto it = policy.severity.find(r.id); it != policy.severity.end()) r.severity = it->second;
    for (const auto& sk : policy.skip) {
      if (sk.rule != r.id) continue;
      r.status = Outcome::skip;
      r.message = fmt::format("skipped by site policy: {}", sk.reason);
      r.fix = nullptr;
      r.pending_reboot = false;
    }
    if (r.status != Outcome::fail) continue;
    const PolicyWaiver* active = nullptr;
    const PolicyWaiver* expired = nullptr;
    for (const auto& w : policy.waivers) {
      if (w.rule != r.id) continue;
      if (std::string_view(w.expires) >= today)
        active = &w;
      else if (expired == nullptr || w.expires > expired->expires)
        expired = &w;
    }
    if (active != nullptr)
      r.waiver = Waiver{active->reason, active->owner, active->expires};
    else if (expired != nullptr)
      r.message += fmt::format(" (the waiver by {} expired on {}: {})", expired->owner,
                               expired->expires, expired->reason);
  }
}

void add_policy_params(const Policy& policy, Params& params) {
  if (policy.min_kernel) params["min_kernel"] = *policy.min_kernel;
  if (policy.min_rocm) params["min_rocm"] = *policy.min_rocm;
}

std::string today_local_date() {
  return fmt::format("{:%Y-%m-%d}", fmt::localtime(std::time(nullptr)));
}

} // namespace halo

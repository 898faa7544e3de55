// SPDX-License-Identifier: MIT
// Merging the failing rules' structured fixes (docs/rules.md "fix") into one plan, validating
// every value that will end up in a script, and the --ttm-limit override.
#include <halo/error.hpp>
#include <halo/fix.hpp>
#include <halo/rules.hpp>
#include <halo/units.hpp>

#include <fmt/format.h>

#include <re2/re2.h>

#include <algorithm>

namespace halo::fix {
namespace {

constexpr std::int64_t kGiB = 1024LL * 1024 * 1024;
constexpr std::int64_t kPagesPerGiB = 262144; // 1 GiB / 4 KiB TTM pages

/// Rules whose TTM value wins when rules disagree: they compute the recommended limit.
bool preferred(std::string_view rule) {
  return rule == rule_ids::ttm_limit_low || rule == rule_ids::ttm_limit_overcommit;
}

const RE2& karg_key_re() {
  static const RE2 re(R"([A-Za-z0-9_][A-Za-z0-9_.-]*)");
  return re;
}
const RE2& value_re() {
  static const RE2 re(R"([A-Za-z0-9_.,:/+@=-]*)");
  return re;
}
const RE2& module_re() {
  static const RE2 re(R"([a-z0-9_-]+)");
  return re;
}
const RE2& conf_file_re() {
  static const RE2 re(R"([A-Za-z0-9_.-]+\.conf)");
  return re;
}
const RE2& param_re() {
  static const RE2 re(R"([a-z0-9_]+)");
  return re;
}
const RE2& group_re() {
  static const RE2 re(R"([a-z_][a-z0-9_-]*)");
  return re;
}
const RE2& env_name_re() {
  static const RE2 re(R"([A-Za-z_][A-Za-z0-9_]*)");
  return re;
}
const RE2& sysctl_key_re() {
  static const RE2 re(R"([a-z0-9_]+(\.[a-z0-9_-]+)+)");
  return re;
}
const RE2& sysctl_value_re() {
  static const RE2 re(R"([A-Za-z0-9_.:-]+( [A-Za-z0-9_.:-]+)*)");
  return re;
}

[[noreturn]] void bad(const std::string& rule, const std::string& what) {
  throw InputError(fmt::format("rule {}: fix {}: refusing to put it in a script", rule, what));
}

std::string check(const std::string& rule, const std::string& what, const std::string& v,
                  const RE2& re) {
  if (!RE2::FullMatch(v, re)) bad(rule, fmt::format("{} '{}' is not valid", what, v));
  return v;
}

bool printable_line(std::string_view s) {
  return std::none_of(s.begin(), s.end(),
                      [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; });
}

/// A scalar JSON value as text (numbers without a fraction as integers).
std::string scalar(const std::string& rule, const nlohmann::json& j, std::string_view what) {
  if (j.is_string()) return j.get<std::string>();
  if (j.is_number_integer()) return std::to_string(j.get<std::int64_t>());
  if (j.is_number_unsigned()) return std::to_string(j.get<std::uint64_t>());
  if (j.is_boolean()) return j.get<bool>() ? "1" : "0";
  bad(rule, fmt::format("{} is not a string or integer: {}", what, j.dump()));
}

std::vector<std::string> strings(const std::string& rule, const nlohmann::json& j,
                                 std::string_view what) {
  std::vector<std::string> out;
  if (j.is_string())
    out.push_back(j.get<std::string>());
  else if (j.is_array())
    for (const auto& e : j)
      out.push_back(scalar(rule, e, what));
  else
    bad(rule, fmt::format("{} is not a list", what));
  return out;
}

template <class T> void add_unique(std::vector<T>& v, const T& x) {
  if (std::find(v.begin(), v.end(), x) == v.end()) v.push_back(x);
}

/// Sets key=value in an ordered list, resolving disagreements (preferred rule wins, else first).
void set_value(Plan& plan, std::vector<std::pair<std::string, std::string>>& kv,
               std::map<std::string, std::string>& owner, const std::string& where,
               const std::string& key, const std::string& value, const std::string& rule) {
  auto it = std::find_if(kv.begin(), kv.end(), [&](const auto& p) { return p.first == key; });
  if (it == kv.end()) {
    kv.emplace_back(key, value);
    owner[key] = rule;
    return;
  }
  if (it->second == value) return;
  const std::string& prev = owner[key];
  if (preferred(rule) && !preferred(prev)) {
    plan.notes.push_back(fmt::format("{} {}: {} proposes {}, {} proposes {}; using {} ({}'s value)",
                                     where, key, prev, it->second, rule, value, value, rule));
    it->second = value;
    owner[key] = rule;
  } else {
    plan.notes.push_back(fmt::format("{} {}: {} proposes {}, {} proposes {}; using {} ({}'s value)",
                                     where, key, prev, it->second, rule, value, it->second, prev));
  }
}

} // namespace

bool valid_user_name(std::string_view name) {
  static const RE2 re(R"([a-z_][a-z0-9_-]*\$?)");
  return !name.empty() && name.size() <= 32 &&
         RE2::FullMatch(re2::StringPiece(name.data(), name.size()), re);
}

Plan merge_fixes(const std::vector<Result>& results) {
  Plan plan;
  std::map<std::string, std::string> karg_owner;
  std::map<std::string, std::map<std::string, std::string>> opt_owner; // "file/module" -> owners
  std::map<std::string, std::string> sysctl_owner;
  std::map<std::string, std::string> env_owner;
  auto step = [&](const std::string& name, const std::string& rule) {
    add_unique(plan.step_rules[name], rule);
  };

  for (const auto& r : results) {
    if (r.status != Outcome::fail || !r.fix.is_object()) continue;
    const auto& f = r.fix;
    const std::string& id = r.id;
    bool automated = false;

    if (f.contains("kernel_args")) {
      const auto& ka = f["kernel_args"];
      if (ka.contains("set")) {
        if (!ka["set"].is_object()) bad(id, "kernel_args.set is not an object");
        for (const auto& [k, v] : ka["set"].items()) {
          check(id, "kernel argument", k, karg_key_re());
          const std::string val = check(id, "value of " + k, scalar(id, v, k), value_re());
          set_value(plan, plan.kargs_set, karg_owner, "kernel argument", k, val, id);
          automated = true;
        }
      }
      if (ka.contains("remove")) {
        for (const auto& raw : strings(id, ka["remove"], "kernel_args.remove")) {
          // A list fact rendered inside a longer string reads "a, b": split it back.
          std::string item;
          for (char c : raw + ",") {
            if (c == ',' || c == ' ') {
              if (!item.empty() && item != "?") {
                add_unique(plan.kargs_remove, check(id, "kernel argument", item, karg_key_re()));
                automated = true;
              }
              item.clear();
            } else {
              item += c;
            }
          }
        }
      }
      if (automated) step("kernel_args", id);
    }

    if (f.contains("modprobe")) {
      if (!f["modprobe"].is_array()) bad(id, "modprobe is not a list");
      for (const auto& m : f["modprobe"]) {
        const std::string module = check(
            id, "module", scalar(id, m.value("module", nlohmann::json()), "module"), module_re());
        const std::string file =
            check(id, "modprobe.d file", scalar(id, m.value("file", nlohmann::json()), "file"),
                  conf_file_re());
        auto it = std::find_if(plan.modprobe.begin(), plan.modprobe.end(),
                               [&](const auto& x) { return x.file == file && x.module == module; });
        if (it == plan.modprobe.end()) {
          plan.modprobe.push_back(ModprobeFile{file, module, {}, {}, {}});
          it = plan.modprobe.end() - 1;
        }
        add_unique(it->rules, id);
        if (!m.contains("options") || !m["options"].is_object())
          bad(id, "modprobe options missing");
        for (const auto& [k, v] : m["options"].items()) {
          check(id, "module parameter", k, param_re());
          const std::string val = check(id, "value of " + k, scalar(id, v, k), value_re());
          set_value(plan, it->options, opt_owner[fmt::format("{}/{}", file, module)],
                    fmt::format("options {} in {}:", module, file), k, val, id);
        }
        automated = true;
        step("modprobe", id);
      }
    }

    if (f.value("initramfs", false)) {
      // The script rebuilds the images older than the modprobe.d files (ttm-pending-reboot, a
      // pending limit the user set): a step it does, not one for a person.
      plan.initramfs = true;
      automated = true;
      step("initramfs", id);
    }

    if (f.contains("sysctl")) {
      if (!f["sysctl"].is_object()) bad(id, "sysctl is not an object");
      for (const auto& [k, v] : f["sysctl"].items()) {
        check(id, "sysctl key", k, sysctl_key_re());
        const std::string val = check(id, "value of " + k, scalar(id, v, k), sysctl_value_re());
        set_value(plan, plan.sysctl, sysctl_owner, "sysctl", k, val, id);
        automated = true;
      }
      step("sysctl", id);
    }

    if (f.contains("groups")) {
      for (const auto& g : strings(id, f["groups"], "groups"))
        add_unique(plan.groups, check(id, "group", g, group_re()));
      automated = true;
      step("groups", id);
    }

    if (f.contains("udev")) {
      for (const auto& line : strings(id, f["udev"], "udev")) {
        if (line.empty() || !printable_line(line)) bad(id, "udev line has control characters");
        add_unique(plan.udev, line);
      }
      automated = true;
      step("udev", id);
    }

    if (f.contains("env")) {
      const auto& e = f["env"];
      if (e.contains("unset"))
        for (const auto& n : strings(id, e["unset"], "env.unset"))
          add_unique(plan.env_unset, check(id, "variable", n, env_name_re()));
      if (e.contains("set")) {
        if (!e["set"].is_object()) bad(id, "env.set is not an object");
        for (const auto& [k, v] : e["set"].items()) {
          check(id, "variable", k, env_name_re());
          const std::string val = scalar(id, v, k);
          if (!printable_line(val)) bad(id, "value of " + k + " has control characters");
          set_value(plan, plan.env_set, env_owner, "environment", k, val, id);
        }
      }
      automated = true;
      step("env", id);
    }

    if (f.value("reboot", false)) plan.reboot = true;

    if (f.contains("manual"))
      for (const auto& m : strings(id, f["manual"], "manual"))
        plan.manual.push_back({id, m});
    if (automated) {
      plan.covered.push_back(id);
      if (f.contains("summary") && f["summary"].is_string())
        plan.summaries.emplace_back(id, f["summary"].get<std::string>());
    } else if (!f.contains("manual") && f.contains("summary"))
      plan.manual.push_back({id, f["summary"].is_string() ? f["summary"].get<std::string>() : ""});
  }
  // A key both set and removed is set: the removal was for another spelling of it.
  plan.kargs_remove.erase(std::remove_if(plan.kargs_remove.begin(), plan.kargs_remove.end(),
                                         [&](const std::string& k) {
                                           return std::any_of(
                                               plan.kargs_set.begin(), plan.kargs_set.end(),
                                               [&](const auto& p) { return p.first == k; });
                                         }),
                          plan.kargs_remove.end());
  return plan;
}

void apply_ttm_limit(Plan& plan, std::int64_t gib, std::optional<std::int64_t> max_limit_bytes,
                     const std::string& ttm_module) {
  if (gib <= 0)
    throw InputError(fmt::format("--ttm-limit {}: must be a whole number of GiB > 0", gib));
  if (max_limit_bytes) {
    const std::int64_t max_gib = *max_limit_bytes / kGiB;
    if (gib > max_gib)
      throw InputError(fmt::format(
          "--ttm-limit {} GiB: above MemTotal ({:.2f} GiB) minus the 2 GiB the operating system "
          "keeps (ttm-limit-overcommit); the largest allowed is {} GiB",
          gib,
          static_cast<double>(*max_limit_bytes + units::kTtmOsHeadroomBytes) /
              static_cast<double>(kGiB),
          max_gib));
  }
  const auto pages_n = units::checked_bytes(gib, kPagesPerGiB);
  if (!pages_n)
    throw InputError(
        fmt::format("--ttm-limit {} GiB: {} x {} pages does not fit a signed 64-bit integer", gib,
                    gib, kPagesPerGiB));
  const std::string pages = std::to_string(*pages_n);
  auto is_ttm_param = [](std::string_view p) {
    return p == "pages_limit" || p == "page_pool_size";
  };
  bool any = false;
  for (auto& [k, v] : plan.kargs_set) {
    const auto dot = k.find('.');
    if (dot != std::string::npos && is_ttm_param(std::string_view(k).substr(dot + 1))) {
      v = pages;
      any = true;
    }
  }
  for (auto& m : plan.modprobe)
    for (auto& [k, v] : m.options)
      if (is_ttm_param(k)) {
        v = pages;
        any = true;
      }
  if (!any) {
    if (ttm_module.empty() || !RE2::FullMatch(ttm_module, module_re()))
      throw InputError(
          "--ttm-limit: no failing rule proposes a TTM limit and the TTM module amdgpu "
          "uses is not known (fact ttm.module); nothing to set");
    plan.kargs_set.emplace_back(ttm_module + ".pages_limit", pages);
    plan.kargs_set.emplace_back(ttm_module + ".page_pool_size", pages);
    plan.modprobe.push_back(ModprobeFile{"halo-doctor-ttm.conf",
                                         ttm_module,
                                         {{"pages_limit", pages}, {"page_pool_size", pages}},
                                         {"--ttm-limit"},
                                         {}});
    plan.initramfs = true;
    plan.reboot = true;
    plan.covered.emplace_back("--ttm-limit");
    for (const char* s : {"kernel_args", "modprobe", "initramfs"})
      plan.step_rules[s].emplace_back("--ttm-limit");
  }
  plan.notes.push_back(fmt::format(
      "--ttm-limit {} GiB: pages_limit and page_pool_size set to {} pages ({} x 262144)", gib,
      pages, gib));
}

} // namespace halo::fix

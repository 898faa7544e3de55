// SPDX-License-Identifier: MIT
// The text report for people, the facts listing, the catalogue and explain.
#include <halo/report.hpp>
#include <halo/sanitize.hpp>
#include <halo/text.hpp>
#include <halo/units.hpp>

#include <fmt/color.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <map>

namespace halo {
namespace {

/// The report's colours through fmt/color.h; `on` is false for --color never, a pipe, or
/// NO_COLOR (src/cli/common.cpp use_color).
struct Palette {
  bool on;
  std::string wrap(fmt::text_style style, std::string_view s) const {
    return on ? fmt::format(style, "{}", s) : std::string(s);
  }
  std::string red(std::string_view s) const {
    return wrap(fmt::fg(fmt::terminal_color::red) | fmt::emphasis::bold, s);
  }
  std::string yellow(std::string_view s) const {
    return wrap(fmt::fg(fmt::terminal_color::yellow) | fmt::emphasis::bold, s);
  }
  std::string green(std::string_view s) const {
    return wrap(fmt::fg(fmt::terminal_color::green), s);
  }
  std::string dim(std::string_view s) const { return wrap(fmt::emphasis::faint, s); }
  std::string bold(std::string_view s) const { return wrap(fmt::emphasis::bold, s); }
};

std::string badge(const Result& r, const Palette& p) {
  switch (r.status) {
  case Outcome::pass:
    return p.green("PASS ");
  case Outcome::skip:
    return p.dim("SKIP ");
  case Outcome::error:
    return p.yellow("ERROR");
  case Outcome::fail:
    if (r.waived()) return p.dim("WAIVED");
    if (r.severity == Severity::error) return p.red("FAIL ");
    if (r.severity == Severity::warning) return p.yellow("WARN ");
    return "INFO ";
  }
  return "";
}

/// A value for people: bytes and pages also in GiB.
std::string human(const std::string& key, const nlohmann::json& v) {
  if (v.is_null()) return "-";
  std::string s = v.is_string() ? v.get<std::string>() : dump_json(v);
  if (v.is_array()) {
    std::vector<std::string> parts;
    for (const auto& e : v)
      parts.push_back(e.is_string() ? e.get<std::string>() : dump_json(e));
    s = parts.empty() ? "(none)" : fmt::format("{}", fmt::join(parts, ", "));
  }
  auto ends = [&](std::string_view suf) {
    return key.size() >= suf.size() && key.compare(key.size() - suf.size(), suf.size(), suf) == 0;
  };
  if (v.is_number_integer()) {
    const auto n = v.get<std::int64_t>();
    if (ends("_bytes")) return fmt::format("{} ({})", n, units::gib(n));
    if (ends("_pages"))
      return fmt::format("{} pages ({})", n, units::pages_gib(n)); // no int64 product to wrap
  }
  return s;
}

int rank(const Result& r) {
  if (r.status == Outcome::fail) return 3 - static_cast<int>(r.severity); // error first
  if (r.status == Outcome::error) return 4;
  if (r.status == Outcome::pass) return 5;
  return 6;
}

void indent_lines(std::string& out, const std::string& text, std::string_view prefix) {
  for (const std::string_view line : split_records(text, '\n'))
    out += fmt::format("{}{}\n", prefix, line);
}

/// "1 error", "2 warnings": a count and its noun, plural when it is not one.
std::string counted(int n, std::string_view noun) {
  return fmt::format("{} {}{}", n, noun, n == 1 ? "" : "s");
}

/// The report's last line: the findings by severity (info-level ones are notes, which gate only
/// under --fail-on info), the other outcomes, and why the exit code is what it is
/// (gate_exit_code: the non-waived failures at or above --fail-on; 4 when all of them wait for a
/// reboot).
std::string summary_line(const std::vector<Result>& results, const ReportContext& ctx,
                         const TextOptions& opt) {
  std::array<int, 3> by{}; // non-waived failures by Severity (info, warning, error)
  int pass = 0;
  int skip = 0;
  int unchecked = 0;
  int waived = 0;
  int pending = 0;
  for (const auto& r : results) {
    if (r.status == Outcome::pass) ++pass;
    if (r.status == Outcome::skip) ++skip;
    if (r.status == Outcome::error) ++unchecked;
    if (r.status != Outcome::fail) continue;
    if (r.waived()) {
      ++waived;
      continue;
    }
    ++by.at(static_cast<std::size_t>(r.severity));
    if (r.pending_reboot) ++pending;
  }
  const int errors = by[static_cast<std::size_t>(Severity::error)];
  const int warnings = by[static_cast<std::size_t>(Severity::warning)];
  const int notes = by[static_cast<std::size_t>(Severity::info)];
  std::string line = fmt::format("summary: {}, {}, {}", counted(errors, "error"),
                                 counted(warnings, "warning"), counted(notes, "note"));
  if (pending > 0) line += fmt::format(" ({} pending reboot)", pending);
  if (waived > 0) line += fmt::format(", {} waived", waived);
  line += fmt::format("; {} passed, {} skipped", pass, skip);
  if (unchecked > 0) line += fmt::format(", {} could not be checked", unchecked);
  if (!opt.verbose && pass + skip > 0) line += " (-v lists them)";

  constexpr std::array<std::string_view, 4> kFailOnNames = {"info", "warning", "error", "never"};
  const std::string_view fail_on = kFailOnNames.at(static_cast<std::size_t>(ctx.fail_on));
  int gating = 0;
  if (ctx.fail_on != FailOn::never)
    for (int sev = static_cast<int>(ctx.fail_on); sev <= static_cast<int>(Severity::error); ++sev)
      gating += by.at(static_cast<std::size_t>(sev));
  // The findings below the threshold, which do not gate: "2 warnings and 1 note".
  std::vector<std::string> below;
  if (ctx.fail_on != FailOn::never) {
    if (ctx.fail_on == FailOn::error && warnings > 0) below.push_back(counted(warnings, "warning"));
    if (ctx.fail_on != FailOn::info && notes > 0) below.push_back(counted(notes, "note"));
  }
  std::string why;
  if (ctx.fail_on == FailOn::never)
    why = "--fail-on never";
  else if (ctx.exit_code == 0 && below.empty())
    why = fmt::format("nothing failed at or above --fail-on {}", fail_on);
  else if (ctx.exit_code == 0)
    why = fmt::format("nothing failed at or above --fail-on {} ({} below it)", fail_on,
                      fmt::join(below, " and "));
  else if (ctx.exit_code == 1)
    why = fmt::format("{} at or above --fail-on {}", counted(gating, "finding"), fail_on);
  else if (ctx.exit_code == 4)
    why = fmt::format("{} at or above --fail-on {} {} for a reboot",
                      gating == 1 ? std::string("the finding") : counted(gating, "finding"),
                      fail_on, gating == 1 ? "waits" : "wait");
  line += fmt::format("; exit code {}", ctx.exit_code);
  if (!why.empty()) line += ": " + why;
  return line + "\n";
}

} // namespace

std::vector<std::string> render_fix_lines(const nlohmann::json& fix) {
  std::vector<std::string> out;
  if (!fix.is_object()) return out;
  auto strs = [](const nlohmann::json& a) {
    std::vector<std::string> v;
    if (a.is_array())
      for (const auto& e : a)
        v.push_back(e.is_string() ? e.get<std::string>() : dump_json(e));
    return v;
  };
  if (fix.contains("summary")) out.push_back(fix["summary"].get<std::string>());
  if (fix.contains("kernel_args")) {
    const auto& ka = fix["kernel_args"];
    std::vector<std::string> set;
    if (ka.contains("set"))
      for (const auto& [k, v] : ka["set"].items())
        set.push_back(fmt::format("{}={}", k, v.is_string() ? v.get<std::string>() : dump_json(v)));
    auto remove = strs(ka.value("remove", nlohmann::json::array()));
    if (!set.empty())
      out.push_back(fmt::format("kernel command line: add {}", fmt::join(set, " ")));
    if (!remove.empty())
      out.push_back(fmt::format("kernel command line: remove {}", fmt::join(remove, " ")));
    out.emplace_back("  (halo-doctor fix writes the commands for this machine's boot loader)");
  }
  if (fix.contains("modprobe")) {
    for (const auto& m : fix["modprobe"]) {
      std::vector<std::string> opts;
      for (const auto& [k, v] : m["options"].items())
        opts.push_back(
            fmt::format("{}={}", k, v.is_string() ? v.get<std::string>() : dump_json(v)));
      out.push_back(fmt::format("/etc/modprobe.d/{}: options {} {}",
                                m.value("file", "halo-doctor.conf"), m["module"].get<std::string>(),
                                fmt::join(opts, " ")));
    }
  }
  if (fix.contains("initramfs") && fix["initramfs"].get<bool>())
    out.emplace_back(
        "rebuild the initramfs (dracut --force | update-initramfs -u -k all | mkinitcpio -P)");
  if (fix.contains("sysctl")) {
    for (const auto& [k, v] : fix["sysctl"].items()) {
      const std::string val = v.is_string() ? v.get<std::string>() : dump_json(v);
      out.push_back(fmt::format("sudo sysctl -w {}={}", k, val));
      out.push_back(
          fmt::format("echo '{} = {}' | sudo tee /etc/sysctl.d/90-halo-doctor.conf", k, val));
    }
  }
  if (fix.contains("groups")) {
    auto g = strs(fix["groups"]);
    out.push_back(fmt::format("sudo usermod -aG {} \"$USER\"   (then log out and back in)",
                              fmt::join(g, ",")));
  }
  if (fix.contains("udev") && fix["udev"].is_array()) {
    out.emplace_back("/etc/udev/rules.d/70-halo-doctor-gpu.rules:");
    for (const auto& l : strs(fix["udev"]))
      out.push_back("  " + l);
    out.emplace_back("sudo udevadm control --reload-rules && sudo udevadm trigger");
  }
  if (fix.contains("env")) {
    for (const auto& u : strs(fix["env"].value("unset", nlohmann::json::array())))
      out.push_back("unset " + u);
    if (fix["env"].contains("set"))
      for (const auto& [k, v] : fix["env"]["set"].items())
        out.push_back(fmt::format("export {}={}", k, v.get<std::string>()));
  }
  for (const auto& m : strs(fix.value("manual", nlohmann::json::array())))
    out.push_back(m);
  if (fix.value("reboot", false)) out.emplace_back("reboot, then run: halo-doctor check");
  return out;
}

std::string text_report(const std::vector<Result>& results, const ReportContext& ctx,
                        const TextOptions& opt) {
  const Palette p{opt.color};
  std::string out;
  out += p.bold(fmt::format("halo-doctor {}", ctx.tool_version));
  out += fmt::format(" on {} ({}, kernel {})", ctx.hostname.empty() ? "?" : ctx.hostname,
                     ctx.os.empty() ? "unknown OS" : ctx.os, ctx.kernel.empty() ? "?" : ctx.kernel);
  if (ctx.runs_in == "wsl2")
    out += ", in WSL2";
  else if (!ctx.runs_in.empty() && ctx.runs_in != "host")
    out += fmt::format(", in a {} container", ctx.runs_in);
  if (!ctx.virtualization.empty() && ctx.virtualization != "none")
    out += ctx.virtualization == "vm-other"
               ? std::string(", in a virtual machine")
               : fmt::format(", in a {} virtual machine", ctx.virtualization);
  if (ctx.root != "/") out += fmt::format(", root {}", ctx.root);
  out += "\n";
  if (const auto& py = ctx.python; py.judged) {
    if (py.site.empty()) {
      out += fmt::format("python: no PyTorch found: {}\n", py.basis);
    } else {
      std::string what = py.build + " build";
      if (!py.hip.empty()) what += fmt::format(", HIP {}", py.hip);
      if (!py.rocm.empty()) what += fmt::format(", ROCm {}", py.rocm);
      if (py.build == "rocm")
        what += py.gfx_targets.empty()
                    ? std::string(", no readable gfx targets")
                    : fmt::format(", kernels for {}", fmt::join(py.gfx_targets, " "));
      out += fmt::format("python: torch {} ({}) in {}, chosen by {}\n", py.torch, what, py.site,
                         py.basis);
    }
  }

  // What a person reads (issue 35): the failing and warning findings and those that could not be
  // checked, each with its evidence and fix; the info-level findings as one-line notes; then one
  // line of counts that says why the exit code is what it is. --verbose adds every passing and
  // skipped rule with its evidence, and why and the sources of each finding; --quiet leaves out
  // the notes and waived findings.
  auto shown = [&](const Result& r) {
    if (opt.verbose) return true;
    if (r.status == Outcome::error) return true;
    if (r.status != Outcome::fail) return false;
    if (r.waived() || r.severity == Severity::info) return !opt.quiet;
    return true;
  };
  std::vector<std::string> areas;
  for (const auto& r : results)
    if (shown(r) && std::find(areas.begin(), areas.end(), r.area) == areas.end())
      areas.push_back(r.area);
  // Areas with failures first, in the order of their worst result.
  std::map<std::string, int> worst;
  for (const auto& r : results) {
    auto it = worst.find(r.area);
    worst[r.area] = it == worst.end() ? rank(r) : std::min(it->second, rank(r));
  }
  std::stable_sort(areas.begin(), areas.end(),
                   [&](const auto& a, const auto& b) { return worst[a] < worst[b]; });

  for (const auto& area : areas) {
    std::vector<const Result*> rs;
    for (const auto& r : results)
      if (r.area == area && shown(r)) rs.push_back(&r);
    std::stable_sort(rs.begin(), rs.end(),
                     [](const Result* a, const Result* b) { return rank(*a) < rank(*b); });
    std::string block;
    for (const Result* r : rs) {
      const bool note = r->status == Outcome::fail && r->severity == Severity::info;
      const bool detail =
          (r->status == Outcome::fail && !note && !r->waived()) || r->status == Outcome::error;
      block += fmt::format("  {} {:<28} {}{}{}\n", note && !r->waived() ? "NOTE " : badge(*r, p),
                           r->id, r->gpu ? describe_gpu(*r->gpu) + ": " : std::string(), r->message,
                           r->pending_reboot ? p.yellow(" [pending reboot]") : "");
      if (r->waiver)
        block += fmt::format("        waived until {} by {}: {}\n", r->waiver->expires,
                             r->waiver->owner, r->waiver->reason);
      if (!detail && !opt.verbose) continue;
      if (!r->evidence.empty()) {
        block += "        found:\n";
        for (const auto& e : r->evidence) {
          std::string val = e.status == "ok" ? human(e.key, e.value)
                                             : fmt::format("<{}{}{}>", e.status,
                                                           e.reason.empty() ? "" : ": ", e.reason);
          block += fmt::format("          {} = {}{}\n", e.key, val,
                               e.source.empty() ? "" : p.dim(fmt::format("  ({})", e.source)));
        }
      }
      if (!detail && !note) continue;
      if (opt.verbose) {
        block += "        why:\n";
        indent_lines(block, r->why, "          ");
      }
      auto fix = render_fix_lines(r->fix);
      if (!fix.empty()) {
        block += "        fix:\n";
        for (const auto& l : fix)
          block += fmt::format("          {}\n", l);
      }
      if (opt.verbose && !r->sources.empty()) {
        block += "        sources:\n";
        for (const auto& s : r->sources)
          block += fmt::format("          {}\n", s);
      }
      if (!opt.verbose) block += fmt::format("        why: halo-doctor explain {}\n", r->id);
    }
    if (!block.empty()) out += fmt::format("\n{}\n{}", p.bold(area), block);
  }
  // Nothing to show and most rules skipped: say what kept them from judging (an empty report must
  // not read as a clean bill of health), the three commonest skip reasons with their counts.
  const auto count_of = [&](Outcome o) {
    return std::count_if(results.begin(), results.end(),
                         [o](const Result& r) { return r.status == o; });
  };
  if (areas.empty() && !opt.verbose && count_of(Outcome::skip) > count_of(Outcome::pass)) {
    std::map<std::string, int> reasons;
    for (const auto& r : results)
      if (r.status == Outcome::skip) ++reasons[r.message];
    std::vector<std::pair<int, std::string>> top;
    top.reserve(reasons.size());
    for (const auto& [reason, n] : reasons)
      top.emplace_back(n, reason);
    std::stable_sort(top.begin(), top.end(),
                     [](const auto& a, const auto& b) { return a.first > b.first; });
    if (top.size() > 3) top.resize(3);
    if (!top.empty()) out += "\nthe commonest reasons rules were skipped:\n";
    for (const auto& [n, reason] : top)
      out += fmt::format("  {:>3}  {}\n", n, reason);
  }
  out += "\n" + summary_line(results, ctx, opt);
  // Facts may hold terminal escape sequences and bytes that are not UTF-8: neutralised here, the
  // reporter's own colours kept.
  return terminal_safe(out, opt.color);
}

std::string text_facts(const FactSet& facts) {
  std::string out;
  for (const auto& [k, f] : facts.all()) {
    if (f.ok())
      out += fmt::format("{} = {}  ({})\n", k, human(k, value_to_json(f.value)), f.source);
    else
      out += fmt::format("{} <{}{}{}>  ({})\n", k, to_string(f.status),
                         f.reason.empty() ? "" : ": ", f.reason, f.source);
  }
  return terminal_safe(out);
}

std::string text_catalogue(const RuleSet& rules) {
  std::string out = fmt::format("rule set {} ({})\n", rules.version, rules.digest);
  for (const auto& r : rules.rules)
    out += fmt::format("  {:<30} {:<8} {:<8} {}\n", r.id, to_string(r.max_severity()), r.area,
                       r.title);
  return terminal_safe(out);
}

nlohmann::json json_catalogue(const RuleSet& rules) {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& r : rules.rules) {
    nlohmann::json sev = nlohmann::json::array();
    for (const auto& f : r.fail)
      sev.push_back(std::string(to_string(f.severity)));
    list.push_back({{"id", r.id},
                    {"title", r.title},
                    {"area", r.area},
                    {"scope", r.scope == Scope::gpu ? "gpu" : "host"},
                    {"severity", std::string(to_string(r.max_severity()))},
                    {"severities", sev},
                    {"file", r.file},
                    {"line", r.line},
                    {"sources", r.sources}});
  }
  return {{"ruleset_version", rules.version}, {"ruleset_digest", rules.digest}, {"rules", list}};
}

namespace {

/// A template filled in with the machine's values when every fact it names was read there
/// (expand_template writes "?" for a fact it lacks); otherwise the template as it is.
std::string on_machine(const std::string& tmpl, const ExplainMachine* m) {
  if (m == nullptr || tmpl.find('{') == std::string::npos) return tmpl;
  const std::string out = expand_template(tmpl, m->facts, m->params);
  // A "?" that the template did not have itself stands for a fact this machine lacks.
  const auto q = [](const std::string& t) { return std::count(t.begin(), t.end(), '?'); };
  return q(out) > q(tmpl) ? tmpl : out;
}

} // namespace

std::string text_explain(const Rule& r, const ExplainMachine* m) {
  std::string out = fmt::format("{}: {}\n  area: {}\n  severity: ", r.id, r.title, r.area);
  std::vector<std::string> sev;
  for (const auto& f : r.fail)
    sev.emplace_back(to_string(f.severity));
  out += fmt::format("{}\n  defined in: {}:{}\n\nwhy:\n", fmt::join(sev, " / "), r.file, r.line);
  indent_lines(out, r.why, "  ");
  for (const auto& pre : r.applies)
    out += fmt::format("\nskipped when: {}\n", on_machine(pre.skip_reason, m));
  out += "\nfails when:\n";
  for (const auto& f : r.fail)
    out += fmt::format("  [{}] {}\n", to_string(f.severity), on_machine(f.message, m));
  if (!r.fix.is_null()) {
    out += m == nullptr ? "\nfix (template; `check` fills in this machine's values):\n"
                        : "\nfix (with this machine's values where it has them):\n";
    for (const auto& l : render_fix_lines(r.fix))
      out += "  " + on_machine(l, m) + "\n";
  }
  if (!r.evidence.empty()) out += fmt::format("\nevidence: {}\n", fmt::join(r.evidence, ", "));
  out += "\nsources:\n";
  for (const auto& s : r.sources)
    out += "  " + s + "\n";
  if (m != nullptr) {
    out += fmt::format("\non this machine ({}):\n", m->where);
    if (m->results.empty()) out += "  not judged (no GPU for this per-GPU rule)\n";
    for (const auto& res : m->results) {
      const std::string who = res.gpu ? fmt::format("GPU {} ({}, {}): ", res.gpu->index,
                                                    res.gpu->pci_slot, res.gpu->gfx_target)
                                      : std::string();
      const std::string status =
          res.status == Outcome::fail ? fmt::format("FAIL ({})", to_string(res.severity)) : [&] {
            std::string st(to_string(res.status));
            for (char& ch : st)
              ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
            return st;
          }();
      out += fmt::format("  {}{}: {}\n", who, status, res.message);
      if (res.status == Outcome::fail && !res.fix.is_null())
        for (const auto& l : render_fix_lines(res.fix))
          out += "    " + l + "\n";
    }
  }
  return terminal_safe(out);
}

} // namespace halo

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

/// The word before a finding: kube-bench's PASS/FAIL/WARN/INFO, and UNKNOWN for a rule that could
/// not be checked (Nagios' plugin state for "could not be determined"), never ERROR, which would
/// read as a failure the summary does not count.
std::string badge(const Result& r, const Palette& p) {
  switch (r.status) {
  case Outcome::pass:
    return p.green("PASS");
  case Outcome::skip:
    return p.dim("SKIP");
  case Outcome::error:
    return p.yellow("UNKNOWN");
  case Outcome::fail:
    if (r.waived()) return p.dim("WAIVED");
    if (r.severity == Severity::error) return p.red("FAIL");
    if (r.severity == Severity::warning) return p.yellow("WARN");
    return "NOTE";
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
  if (!opt.verbose && pass + skip > 0) line += " (-v lists them, and why each finding matters)";
  if (unchecked > 0) {
    // What would let them be checked: a fact denied to this user needs root (the probes read
    // /dev/kmsg, debugfs and root-only sysfs files: kernel.dmesg_restrict, file modes); any
    // other unreadable fact is named, with why, in the result's own line.
    const bool denied = std::any_of(results.begin(), results.end(), [](const Result& r) {
      return r.status == Outcome::error &&
             std::any_of(r.proof.begin(), r.proof.end(),
                         [](const Evidence& e) { return e.status == "denied"; });
    });
    line += fmt::format(", {} could not be checked ({})", unchecked,
                        denied ? "run as root to read what this user may not"
                               : "the UNKNOWN lines name the facts that could not be read");
  }

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
  return line;
}

/// A fix `halo-doctor fix` writes a script step for (src/fix/merge.cpp: kernel arguments,
/// modprobe.d, sysctl, groups, udev rules, the environment); `manual` and `summary` alone are
/// steps for a person.
bool automated_fix(const nlohmann::json& fix) {
  if (!fix.is_object()) return false;
  return fix.contains("kernel_args") || fix.contains("modprobe") || fix.contains("sysctl") ||
         fix.contains("groups") || fix.contains("udev") || fix.contains("env");
}

/// The summary's last line, the next step: `sudo halo-doctor fix` when a failure has a fix it
/// writes, the reboot when failures only wait for one, the fix steps above when they are a
/// person's to take; nothing when nothing failed.
std::string next_step(const std::vector<Result>& results) {
  bool fixable = false;
  bool reboot = false;
  bool manual = false;
  bool pending = false;
  for (const auto& r : results) {
    if (r.status != Outcome::fail || r.waived() || r.severity == Severity::info) continue;
    if (r.pending_reboot) {
      pending = true;
      continue;
    }
    if (automated_fix(r.fix)) {
      fixable = true;
      reboot = reboot || (r.fix.is_object() && r.fix.value("reboot", false));
    } else {
      manual = true;
    }
  }
  if (fixable)
    return fmt::format("next: sudo halo-doctor fix{}{}", reboot ? ", then reboot" : "",
                       manual ? "; the other fix steps above are yours" : "");
  if (manual)
    return fmt::format("next: take the fix steps above{}, then run halo-doctor check again",
                       pending ? " and reboot" : "");
  if (pending) return "next: reboot to make the configured fix take effect";
  return {};
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

std::size_t visible_width(std::string_view s) {
  std::size_t n = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c == 0x1B && i + 1 < s.size() && s[i + 1] == '[') { // SGR: ESC [ params m
      const std::size_t m = s.find('m', i + 2);
      if (m != std::string_view::npos) {
        i = m;
        continue;
      }
    }
    if ((c & 0xC0U) != 0x80U) ++n; // a UTF-8 continuation byte adds no column
  }
  return n;
}

std::string wrap_line(std::string_view line, std::size_t width, std::size_t indent) {
  width = std::max<std::size_t>(width, 20);
  indent = std::min(indent, width / 2);
  if (visible_width(line) <= width) return std::string(line) + "\n";
  const std::size_t lead = std::min(line.find_first_not_of(' '), line.size());
  std::string out(line.substr(0, lead));
  std::size_t col = lead;
  bool line_empty = true; // no word on the current output line yet
  auto new_line = [&] {
    out.erase(out.find_last_not_of(' ') + 1); // no trailing blanks where a run of spaces broke
    out += '\n';
    out.append(indent, ' ');
    col = indent;
    line_empty = true;
  };
  for (const std::string_view word : split_records(line.substr(lead), ' ')) {
    const std::size_t w = visible_width(word);
    if (!line_empty) {
      if (col + 1 + w > width) {
        if (w == 0) continue; // a run of spaces at the break
        new_line();
      } else {
        out += ' ';
        ++col;
      }
    }
    if (col + w <= width) {
      out += word;
      col += w;
    } else {
      // Wider than the room left: broken where the line ends, escape sequences kept whole.
      for (std::size_t i = 0; i < word.size(); ++i) {
        const auto c = static_cast<unsigned char>(word[i]);
        if (c == 0x1B && i + 1 < word.size() && word[i + 1] == '[') {
          const std::size_t m = word.find('m', i + 2);
          if (m != std::string_view::npos) {
            out += word.substr(i, m - i + 1);
            i = m;
            continue;
          }
        }
        const bool starts_char = (c & 0xC0U) != 0x80U;
        if (starts_char && col >= width) {
          out += '\n';
          out.append(indent, ' ');
          col = indent;
        }
        out += word[i];
        if (starts_char) ++col;
      }
    }
    line_empty = false;
  }
  return out + "\n";
}

namespace {

/// A message's headline for one-line views: the text before its first ": " or "; " outside
/// parentheses. Rule messages read "what is wrong: why; what to do" (docs/rules.md).
std::string headline(std::string_view msg, bool at_colon) {
  int depth = 0;
  for (std::size_t i = 0; i + 1 < msg.size(); ++i) {
    const char c = msg[i];
    if (c == '(') ++depth;
    if (c == ')' && depth > 0) --depth;
    if (depth == 0 && msg[i + 1] == ' ' && (c == ';' || (at_colon && c == ':')))
      return std::string(msg.substr(0, i));
  }
  return std::string(msg);
}

/// `s` without the parenthesised remarks it ends with: "no torch found (searched A, B)" is "no
/// torch found" (the default report's python line; --verbose shows them).
std::string without_trailing_remarks(std::string s) {
  while (!s.empty() && s.back() == ')') {
    int depth = 0;
    std::size_t i = s.size();
    while (i-- > 0) {
      if (s[i] == ')') ++depth;
      if (s[i] == '(' && --depth == 0) break;
    }
    if (i == std::string::npos || i == 0) break;
    s.erase(s.find_last_not_of(' ', i - 1) + 1);
  }
  return s;
}

/// One line cut to `width` columns, "..." marking the cut: at the last space when that keeps more
/// than half the line, so no word is cut in two ("6.17.4-200.f...").
std::string fit(const std::string& line, std::size_t width) {
  if (visible_width(line) <= width) return line;
  std::string out;
  std::size_t col = 0;
  std::size_t space_at = std::string::npos; // bytes of `out` before the last space
  std::size_t space_col = 0;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const auto c = static_cast<unsigned char>(line[i]);
    if (c == 0x1B && i + 1 < line.size() && line[i + 1] == '[') {
      const std::size_t m = line.find('m', i + 2);
      if (m != std::string::npos) {
        out += line.substr(i, m - i + 1);
        i = m;
        continue;
      }
    }
    if ((c & 0xC0U) != 0x80U) {
      if (col + 3 >= width) break;
      ++col;
    }
    if (c == ' ') {
      space_at = out.size();
      space_col = col;
    }
    out += line[i];
  }
  if (space_at != std::string::npos && space_col > width / 2) {
    out.resize(space_at);
    while (!out.empty() && (out.back() == ',' || out.back() == ':' || out.back() == ';'))
      out.pop_back();
  }
  return out + "...";
}

/// A finding as a person reads it: a result, and the failures it `subsumes` that failed too.
struct Finding {
  const Result* head;
  std::vector<const Result*> also;
  /// The same rule's same verdict and message on other GPUs (a per-GPU rule whose cause is the
  /// host's, such as its ROCm release): one finding for all of them, not one a GPU.
  std::vector<const Result*> peers;
  int rank; ///< the worst of its results
};

std::string evidence_value(const Evidence& e) {
  return e.status == "ok"
             ? human(e.key, e.value)
             : fmt::format("<{}{}{}>", e.status, e.reason.empty() ? "" : ": ", e.reason);
}

/// The `label:` block of `lines`, the first line after the label and the others under it.
void labelled(std::string& out, std::string_view label, const std::vector<std::string>& lines,
              std::size_t width) {
  constexpr std::size_t kCol = 15; // "        found: " and "        fix:   "
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const std::string head =
        i == 0 ? fmt::format("        {:<6} ", fmt::format("{}:", label)) : std::string(kCol, ' ');
    out += wrap_line(head + lines[i], width, kCol + 2);
  }
}

} // namespace

std::string text_report(const std::vector<Result>& results, const ReportContext& ctx,
                        const TextOptions& opt) {
  const Palette p{opt.color};
  const std::size_t width = std::max<std::size_t>(opt.width, 40);
  std::string out;
  std::string head = p.bold(fmt::format("halo-doctor {}", ctx.tool_version));
  head +=
      fmt::format(" on {} ({}, kernel {})", ctx.hostname.empty() ? "?" : ctx.hostname,
                  ctx.os.empty() ? "unknown OS" : ctx.os, ctx.kernel.empty() ? "?" : ctx.kernel);
  if (ctx.runs_in == "wsl2")
    head += ", in WSL2";
  else if (!ctx.runs_in.empty() && ctx.runs_in != "host")
    head += fmt::format(", in a {} container", ctx.runs_in);
  if (!ctx.virtualization.empty() && ctx.virtualization != "none")
    head += ctx.virtualization == "vm-other"
                ? std::string(", in a virtual machine")
                : fmt::format(", in a {} virtual machine", ctx.virtualization);
  if (ctx.root != "/") head += fmt::format(", root {}", ctx.root);
  if (!opt.quiet) out += wrap_line(head, width, 2);
  if (const auto& py = ctx.python; py.judged && !opt.quiet) {
    if (py.site.empty()) {
      // Where it looked is in --verbose (and `halo-doctor facts`): the basis names every
      // directory searched.
      out += wrap_line(fmt::format("python: no PyTorch found: {}",
                                   opt.verbose ? py.basis : without_trailing_remarks(py.basis)),
                       width, 2);
    } else {
      std::string what = py.build + " build";
      if (!py.hip.empty()) what += fmt::format(", HIP {}", py.hip);
      if (!py.rocm.empty()) what += fmt::format(", ROCm {}", py.rocm);
      if (py.build == "rocm")
        what += py.gfx_targets.empty()
                    ? std::string(", no readable gfx targets")
                    : fmt::format(", kernels for {}", fmt::join(py.gfx_targets, " "));
      out += wrap_line(fmt::format("python: torch {} ({}) in {}, chosen by {}", py.torch, what,
                                   py.site, py.basis),
                       width, 2);
    }
  }

  // What a person reads (issues 35, 46): the failing and warning findings and those that could
  // not be checked, each with the facts that decided it and its fix; the info-level findings as
  // one-line notes; then the counts, why the exit code is what it is, and the next step.
  // --verbose adds every passing and skipped rule, every evidence fact, why and the sources;
  // --quiet prints one line per finding and leaves out the notes and waived findings.
  auto shown = [&](const Result& r) {
    if (opt.verbose) return true;
    if (r.status == Outcome::error) return true;
    if (r.status != Outcome::fail) return false;
    if (r.waived() || r.severity == Severity::info) return !opt.quiet;
    return true;
  };
  // Failures another failing rule subsumes (one cause, its fix the stricter) go under that one;
  // a rule that is itself under another takes none (no chains, no cycles).
  auto live_failure = [](const Result& r) {
    return r.status == Outcome::fail && !r.waived() && r.severity != Severity::info;
  };
  std::vector<const Result*> under(results.size(), nullptr);
  auto subsumer = [&](const Result& r) -> const Result* {
    if (!live_failure(r)) return nullptr;
    for (const auto& h : results)
      if (&h != &r && live_failure(h) && shown(h) &&
          std::find(h.subsumes.begin(), h.subsumes.end(), r.id) != h.subsumes.end())
        return &h;
    return nullptr;
  };
  for (std::size_t i = 0; i < results.size(); ++i)
    under[i] = subsumer(results[i]);
  for (std::size_t i = 0; i < results.size(); ++i)
    if (under[i] != nullptr &&
        under[static_cast<std::size_t>(under[i] - results.data())] != nullptr)
      under[i] = nullptr;
  std::vector<Finding> findings;
  auto same_verdict = [](const Result& a, const Result& b) {
    return a.id == b.id && a.gpu && b.gpu && a.status == b.status && a.severity == b.severity &&
           a.message == b.message && a.pending_reboot == b.pending_reboot &&
           a.waived() == b.waived();
  };
  for (std::size_t i = 0; i < results.size(); ++i) {
    if (under[i] != nullptr || !shown(results[i])) continue;
    Finding f{&results[i], {}, {}, rank(results[i])};
    for (std::size_t j = 0; j < results.size(); ++j)
      if (under[j] == &results[i]) {
        f.also.push_back(&results[j]);
        f.rank = std::min(f.rank, rank(results[j]));
      }
    if (f.also.empty()) {
      auto peer = std::find_if(findings.begin(), findings.end(), [&](const Finding& g) {
        return g.also.empty() && same_verdict(*g.head, results[i]);
      });
      if (peer != findings.end()) {
        peer->peers.push_back(&results[i]);
        continue;
      }
    }
    findings.push_back(std::move(f));
  }

  // Areas with failures first, in the order of their worst finding; in an area, worst first.
  std::vector<std::string> areas;
  std::map<std::string, int> worst;
  for (const auto& f : findings) {
    if (std::find(areas.begin(), areas.end(), f.head->area) == areas.end())
      areas.push_back(f.head->area);
    auto it = worst.find(f.head->area);
    worst[f.head->area] = it == worst.end() ? f.rank : std::min(it->second, f.rank);
  }
  std::stable_sort(areas.begin(), areas.end(),
                   [&](const auto& a, const auto& b) { return worst[a] < worst[b]; });
  std::stable_sort(findings.begin(), findings.end(),
                   [](const Finding& a, const Finding& b) { return a.rank < b.rank; });

  // The badge of a finding: its worst result's.
  auto finding_badge = [&](const Finding& f) {
    const Result* w = f.head;
    for (const Result* r : f.also)
      if (rank(*r) < rank(*w)) w = r;
    return badge(*w, p);
  };
  auto who = [](const Result& r) { return r.gpu ? describe_gpu(*r.gpu) + ": " : std::string(); };
  // A finding's GPUs: the head's alone, or "GPUs 0-3, 5 (gfx950)" for one with peers.
  auto who_all = [&](const Finding& f) {
    if (f.peers.empty()) return who(*f.head);
    std::vector<std::int64_t> idx{f.head->gpu->index};
    std::string gfx = f.head->gpu->gfx_target;
    for (const Result* r : f.peers) {
      idx.push_back(r->gpu->index);
      if (r->gpu->gfx_target != gfx) gfx.clear();
    }
    std::sort(idx.begin(), idx.end());
    std::vector<std::string> runs;
    for (std::size_t i = 0; i < idx.size();) {
      std::size_t j = i;
      while (j + 1 < idx.size() && idx[j + 1] == idx[j] + 1)
        ++j;
      runs.push_back(j == i ? fmt::format("{}", idx[i]) : fmt::format("{}-{}", idx[i], idx[j]));
      i = j + 1;
    }
    return fmt::format("GPUs {}{}: ", fmt::join(runs, ", "), gfx.empty() ? "" : " (" + gfx + ")");
  };
  auto reboot_mark = [&](const Result& r) {
    return r.pending_reboot ? p.yellow(" [pending reboot]") : std::string();
  };

  if (opt.quiet) {
    // One line per finding: the badge, the rule (and those under it), the message's headline.
    for (const auto& f : findings) {
      std::string ids = f.head->id;
      for (const Result* r : f.also)
        ids += ", " + r->id;
      const std::string b = finding_badge(f);
      out += fit(fmt::format("{}{} {}  {}{}{}", b,
                             std::string(7 - std::min<std::size_t>(7, visible_width(b)), ' '), ids,
                             who_all(f), headline(f.head->message, true), reboot_mark(*f.head)),
                 width) +
             "\n";
    }
  }

  for (const auto& area : opt.quiet ? std::vector<std::string>{} : areas) {
    std::string block;
    for (const auto& f : findings) {
      if (f.head->area != area) continue;
      const Result& r = *f.head;
      const bool note = r.status == Outcome::fail && r.severity == Severity::info;
      const bool detail = live_failure(r) || r.status == Outcome::error;
      block += wrap_line(fmt::format("  {}  {}  {}{}{}", finding_badge(f), r.id, who_all(f),
                                     r.message, reboot_mark(r)),
                         width, 8);
      for (const Result* a : f.also)
        block += wrap_line(fmt::format("        also {}  {}{}{}", a->id, who(*a),
                                       headline(a->message, false), reboot_mark(*a)),
                           width, 10);
      if (r.waiver)
        block += wrap_line(fmt::format("        waived until {} by {}: {}", r.waiver->expires,
                                       r.waiver->owner, r.waiver->reason),
                           width, 10);
      if (!detail && !opt.verbose) continue;
      // The evidence: under --verbose every fact the rule shows; otherwise the facts that decided
      // it (a fact the verdict did not turn on, such as an Ubuntu ABI field on Fedora, is
      // noise). An UNKNOWN line's message already names the facts it could not read and why.
      std::vector<std::string> found;
      std::vector<std::string> seen;
      auto add_evidence = [&](const std::vector<Evidence>& ev) {
        for (const auto& e : ev) {
          if (std::find(seen.begin(), seen.end(), e.key) != seen.end()) continue;
          seen.push_back(e.key);
          found.push_back(
              fmt::format("{} = {}{}", e.key, evidence_value(e),
                          e.source.empty() ? "" : p.dim(fmt::format("  ({})", e.source))));
        }
      };
      if (opt.verbose) {
        add_evidence(r.evidence);
        for (const Result* a : f.also)
          add_evidence(a->evidence);
      } else if (r.status != Outcome::error) {
        add_evidence(r.proof);
        for (const Result* a : f.also)
          add_evidence(a->proof);
      }
      labelled(block, "found", found, width);
      if (!detail && !note) continue;
      if (opt.verbose) {
        block += "        why:\n";
        for (const std::string_view l : split_records(r.why, '\n'))
          block += wrap_line(fmt::format("          {}", l), width, 10);
      }
      // The fix once: the head's, which covers those under it (their own stay in JSON).
      std::vector<std::string> fix;
      // A fix of only the initramfs and the reboot: its steps say all its summary says ("rebuild
      // the initramfs and reboot"), so the summary is not printed again.
      nlohmann::json shown_fix = r.fix;
      if (shown_fix.is_object() && shown_fix.contains("summary") &&
          std::all_of(shown_fix.items().begin(), shown_fix.items().end(),
                      [](const auto& kv) {
                        return kv.key() == "summary" || kv.key() == "initramfs" ||
                               kv.key() == "reboot";
                      }) &&
          (shown_fix.value("initramfs", false) || shown_fix.value("reboot", false)))
        shown_fix.erase("summary");
      for (auto& l : render_fix_lines(shown_fix))
        if (l.rfind("  (", 0) != 0) fix.push_back(std::move(l)); // fix's own notes: -v/explain
      labelled(block, "fix", fix, width);
      if (opt.verbose && !r.sources.empty()) labelled(block, "sources", r.sources, width);
    }
    if (!block.empty()) out += fmt::format("\n{}\n{}", p.bold(area), block);
  }
  // Nothing to show and most rules skipped: say what kept them from judging (an empty report must
  // not read as a clean bill of health), the three commonest skip reasons with their counts.
  const auto count_of = [&](Outcome o) {
    return std::count_if(results.begin(), results.end(),
                         [o](const Result& r) { return r.status == o; });
  };
  if (findings.empty() && !opt.verbose && count_of(Outcome::skip) > count_of(Outcome::pass)) {
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
      out += wrap_line(fmt::format("  {:>3}  {}", n, reason), width, 7);
  }
  if (!opt.quiet) out += "\n";
  out += wrap_line(summary_line(results, ctx, opt), width, 2);
  if (const std::string next = next_step(results); !next.empty()) out += wrap_line(next, width, 2);
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

// SPDX-License-Identifier: MIT
// The Markdown report (`check --format markdown`): a short report to paste into a GitHub issue,
// as `python -m torch.utils.collect_env` and `accelerate env` give one: the machine in a table,
// the failing and warning findings with evidence and fix, then the counts. Redacted like a
// capture bundle (include/halo/redact.hpp). Every string that came from the machine, a rule or a
// file goes through one escaping function (md_text, md_code, md_block) for CommonMark 0.31 and
// GitHub Flavored Markdown (https://spec.commonmark.org/0.31.2/, https://github.github.com/gfm/).
#include <halo/redact.hpp>
#include <halo/report.hpp>
#include <halo/sanitize.hpp>
#include <halo/units.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <cctype>

namespace halo {
namespace {

/// Inline text: one line (sanitize.hpp one_line: no control characters, no bidi overrides), then
/// a backslash before every ASCII punctuation character that can start markup inline (CommonMark
/// 2.4 "Backslash escapes": any ASCII punctuation may be escaped): emphasis `*` `_` `~`, code
/// `` ` ``, links and images `[` `]` `!`, raw HTML and autolinks `<` `>`, entities `&`, table
/// cells `|` (GFM 4.10), the escape itself, and GitHub's @mentions and #references `@` `#`.
/// Callers never put it at the start of a line, so `-`, `+`, `.` and `=` cannot make a block.
std::string md_text(std::string_view s) {
  const std::string line = one_line(s);
  std::string out;
  out.reserve(line.size() + 8);
  auto alnum = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; };
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    // An `_` between two letters or digits can neither open nor close emphasis (CommonMark 6.2:
    // it is both left- and right-flanking and preceded and followed by an alphanumeric), so
    // `x86_64` and `pages_limit` stay readable in the pasted text.
    const bool intraword =
        c == '_' && i > 0 && i + 1 < line.size() && alnum(line[i - 1]) && alnum(line[i + 1]);
    if (!intraword && std::string_view("\\`*_~[]!<>&|@#").find(c) != std::string_view::npos)
      out += '\\';
    out += c;
  }
  return out;
}

/// A code span for a rule id or fact key: a run of backticks longer than any inside it
/// (CommonMark 6.1), padded with spaces when the text starts or ends with one; `|` is escaped in
/// a table cell (GFM 4.10: the cell split happens before inline parsing, code spans included).
std::string md_code(std::string_view s, bool in_table = false) {
  std::string text = one_line(s);
  std::size_t longest = 0;
  std::size_t run = 0;
  for (const char c : text) {
    run = c == '`' ? run + 1 : 0;
    longest = std::max(longest, run);
  }
  if (in_table) {
    std::string escaped;
    for (const char c : text) {
      if (c == '|') escaped += '\\';
      escaped += c;
    }
    text = escaped;
  }
  const std::string fence(longest + 1, '`');
  const bool pad = !text.empty() && (text.front() == '`' || text.back() == '`');
  return fence + (pad ? " " : "") + text + (pad ? " " : "") + fence;
}

/// A fenced code block of lines (CommonMark 4.5): the fence is longer than any backtick run in
/// the lines, so no line can close it; its content is literal (no HTML, no links).
std::string md_block(const std::vector<std::string>& lines, std::string_view indent) {
  std::size_t longest = 0;
  for (const auto& l : lines) {
    std::size_t run = 0;
    for (const char c : l) {
      run = c == '`' ? run + 1 : 0;
      longest = std::max(longest, run);
    }
  }
  const std::string fence(std::max<std::size_t>(3, longest + 1), '`');
  std::string out = fmt::format("{}{}\n", indent, fence);
  for (const auto& l : lines)
    out += fmt::format("{}{}\n", indent, one_line(l));
  out += fmt::format("{}{}\n", indent, fence);
  return out;
}

std::string value_text(const std::string& key, const nlohmann::json& v) {
  if (v.is_null()) return "-";
  if (v.is_array()) {
    std::vector<std::string> parts;
    for (const auto& e : v)
      parts.push_back(e.is_string() ? e.get<std::string>() : dump_json(e));
    return parts.empty() ? std::string("(none)") : fmt::format("{}", fmt::join(parts, ", "));
  }
  if (v.is_number_integer()) {
    const auto n = v.get<std::int64_t>();
    if (key.ends_with("_bytes")) return fmt::format("{} ({})", n, units::gib(n));
    if (key.ends_with("_pages")) return fmt::format("{} pages ({})", n, units::pages_gib(n));
  }
  return v.is_string() ? v.get<std::string>() : dump_json(v);
}

std::optional<std::int64_t> int_fact(const FactSet& facts, const std::string& key) {
  return facts.get<std::int64_t>(key);
}

std::string str_fact(const FactSet& facts, std::string_view key) {
  return facts.get<std::string>(key).value_or("");
}

/// "error", "warning": how a finding is named in its line.
std::string_view label(const Result& r) {
  if (r.status == Outcome::error) return "could not check";
  if (r.severity == Severity::error) return "FAIL";
  if (r.severity == Severity::warning) return "WARN";
  return "NOTE";
}

} // namespace

std::string markdown_report(const std::vector<Result>& results, const ReportContext& ctx,
                            const FactSet& facts) {
  // A facts file or a replayed bundle: the facts are all there is to learn from.
  return markdown_report(results, ctx, facts, Redactor(nullptr, facts));
}

std::string markdown_report(const std::vector<Result>& results, const ReportContext& ctx,
                            const FactSet& facts, const Redactor& redact) {
  auto text = [&](std::string_view s) { return md_text(redact(s)); };
  std::string out = "### halo-doctor report\n\n";
  out += fmt::format("<!-- halo-doctor {} check --format markdown: host and user names, serial "
                     "numbers and URL credentials are redacted -->\n\n",
                     md_text(ctx.tool_version));
  // The machine (a two-column table: GitHub renders it compactly and it survives a paste).
  std::vector<std::pair<std::string, std::string>> rows;
  std::string host = ctx.hostname.empty() ? std::string("?") : std::string("redacted-host");
  std::vector<std::string> where;
  if (!ctx.runs_in.empty() && ctx.runs_in != "host")
    where.push_back(fmt::format("in a {} container", ctx.runs_in));
  if (!ctx.virtualization.empty() && ctx.virtualization != "none")
    where.emplace_back(ctx.virtualization == "vm-other"
                           ? std::string("in a virtual machine")
                           : fmt::format("in a {} virtual machine", ctx.virtualization));
  if (!where.empty()) host += fmt::format(" ({})", fmt::join(where, ", "));
  rows.emplace_back("Host", text(host));
  rows.emplace_back("OS", text(ctx.os.empty() ? std::string("unknown") : ctx.os));
  rows.emplace_back("Kernel", text(ctx.kernel.empty() ? std::string("?") : ctx.kernel));
  const std::int64_t gpus = int_fact(facts, std::string(keys::gpu_count)).value_or(0);
  std::vector<std::string> memory;
  if (auto m = int_fact(facts, std::string(keys::mem_total_bytes)))
    memory.push_back(fmt::format("RAM {}", units::gib(*m)));
  if (auto t = int_fact(facts, std::string(keys::ttm_pages_limit_bytes)))
    memory.push_back(fmt::format("TTM pages_limit {}", units::gib(*t)));
  constexpr std::int64_t kMaxGpuRows = 16;
  for (std::int64_t i = 0; i < gpus && i < kMaxGpuRows; ++i) {
    std::vector<std::string> parts;
    for (const auto field :
         {keys::gpu_field::name, keys::gpu_field::gfx_target, keys::gpu_field::pci_slot})
      if (auto v = facts.get<std::string>(keys::gpu(i, field)); v && !v->empty())
        parts.push_back(*v);
    std::vector<std::string> mem;
    if (auto v = int_fact(facts, keys::gpu(i, keys::gpu_field::vram_total_bytes)))
      mem.push_back(fmt::format("VRAM {}", units::gib(*v)));
    if (auto g = int_fact(facts, keys::gpu(i, keys::gpu_field::gtt_total_bytes)))
      mem.push_back(fmt::format("GTT {}", units::gib(*g)));
    if (!mem.empty()) parts.push_back(fmt::format("{}", fmt::join(mem, ", ")));
    rows.emplace_back(
        fmt::format("GPU {}", i),
        text(parts.empty() ? std::string("?") : fmt::format("{}", fmt::join(parts, "; "))));
  }
  if (gpus > kMaxGpuRows)
    rows.emplace_back("GPUs",
                      text(fmt::format("{} in all (the first {} above)", gpus, kMaxGpuRows)));
  if (gpus == 0) rows.emplace_back("GPU", "none found");
  if (!memory.empty())
    rows.emplace_back("Memory", text(fmt::format("{}", fmt::join(memory, ", "))));
  const std::string rocm = str_fact(facts, keys::hsa_rocm_version);
  const Fact* rocm_fact = facts.find(keys::hsa_rocm_version);
  std::string rocm_row = "unknown";
  if (!rocm.empty())
    rocm_row = rocm;
  else if (rocm_fact != nullptr && rocm_fact->not_probed())
    rocm_row = "not probed (" + rocm_fact->reason.substr(kNotProbedPrefix.size()) + ")";
  else if (rocm_fact != nullptr && !rocm_fact->reason.empty())
    rocm_row = "unknown: " + rocm_fact->reason;
  rows.emplace_back("ROCm", text(rocm_row));
  if (const auto& py = ctx.python; py.judged) {
    if (py.site.empty()) {
      rows.emplace_back("PyTorch", text("not found: " + py.basis));
    } else {
      std::string what = py.build + " build";
      if (!py.hip.empty()) what += ", HIP " + py.hip;
      if (!py.rocm.empty()) what += ", ROCm " + py.rocm;
      if (py.build == "rocm")
        what += py.gfx_targets.empty()
                    ? std::string(", no readable gfx targets")
                    : fmt::format(", kernels for {}", fmt::join(py.gfx_targets, " "));
      rows.emplace_back("PyTorch", text(fmt::format("{} ({})", py.torch, what)));
      rows.emplace_back("Python", text(fmt::format("{} ({})", py.site, py.basis)));
    }
  }
  rows.emplace_back(
      "Rules", text(fmt::format("{} ({})", ctx.ruleset_version, ctx.ruleset_digest.substr(0, 19))));
  out += "| | |\n|---|---|\n";
  for (const auto& [k, v] : rows)
    out += fmt::format("| {} | {} |\n", k, v);

  // The findings a person acts on: failures at warning and error, and what could not be checked.
  std::vector<const Result*> shown;
  std::vector<const Result*> notes;
  for (const auto& r : results) {
    if (r.status == Outcome::error ||
        (r.status == Outcome::fail && !r.waived() && r.severity != Severity::info))
      shown.push_back(&r);
    else if (r.status == Outcome::fail && !r.waived())
      notes.push_back(&r);
  }
  auto rank = [](const Result* r) {
    if (r->status == Outcome::error) return 3;
    return 2 - static_cast<int>(r->severity);
  };
  std::stable_sort(shown.begin(), shown.end(),
                   [&](const Result* a, const Result* b) { return rank(a) < rank(b); });
  out += "\n#### Findings\n\n";
  if (shown.empty()) out += "No failing or warning findings.\n";
  for (const Result* r : shown) {
    out += fmt::format("- **{}** {}{}: {}{}\n", label(*r), md_code(r->id),
                       r->gpu ? " (" + text(describe_gpu(*r->gpu)) + ")" : std::string(),
                       text(r->message), r->pending_reboot ? " *(pending reboot)*" : "");
    for (const auto& e : r->evidence) {
      const std::string val =
          e.status == "ok"
              ? value_text(e.key, e.value)
              : fmt::format("<{}{}{}>", e.status, e.reason.empty() ? "" : ": ", e.reason);
      out += fmt::format("  - {} = {}{}\n", md_code(e.key), text(val),
                         e.source.empty() ? std::string() : " (" + text(e.source) + ")");
    }
    std::vector<std::string> fix = render_fix_lines(r->fix);
    if (!fix.empty()) {
      for (auto& l : fix)
        l = redact(l);
      out += "  - fix:\n\n";
      out += md_block(fix, "    ");
    }
  }
  if (!notes.empty()) {
    out += "\nNotes (info): ";
    std::vector<std::string> ids;
    ids.reserve(notes.size());
    for (const Result* r : notes)
      ids.push_back(md_code(r->id));
    out += fmt::format("{}\n", fmt::join(ids, ", "));
  }
  const Summary s = summarize(results);
  const int errors = s.failed(Severity::error);
  const int warnings = s.failed(Severity::warning);
  const int infos = s.failed(Severity::info);
  out += fmt::format("\n**{} error{}, {} warning{}, {} note{}**", errors, errors == 1 ? "" : "s",
                     warnings, warnings == 1 ? "" : "s", infos, infos == 1 ? "" : "s");
  if (s.waived > 0) out += fmt::format(" ({} waived)", s.waived);
  out += fmt::format("; {} passed, {} skipped", s.pass, s.skip);
  if (s.error > 0) out += fmt::format(", {} could not be checked", s.error);
  out += fmt::format("; exit code {}\n", ctx.exit_code);
  return out;
}

} // namespace halo

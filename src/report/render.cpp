// SPDX-License-Identifier: MIT
// Dispatch from a format name to its reporter.
#include <halo/report.hpp>
#include <halo/sanitize.hpp>

#include <fmt/format.h>

#include <array>
#include <stdexcept>

namespace halo {

Summary summarize(const std::vector<Result>& results) {
  Summary s;
  for (const auto& r : results) {
    switch (r.status) {
    case Outcome::pass:
      ++s.pass;
      break;
    case Outcome::fail:
      ++s.fail;
      ++s.failed_by_severity.at(static_cast<std::size_t>(r.severity));
      if (r.pending_reboot) ++s.pending_reboot;
      if (r.waived()) ++s.waived;
      break;
    case Outcome::skip:
      ++s.skip;
      break;
    case Outcome::error:
      ++s.error;
      break;
    }
  }
  return s;
}

namespace {
struct FormatName {
  ReportFormat format;
  std::string_view name;
};
/// The one table of the formats' spellings, in declaration order.
constexpr std::array<FormatName, 6> kFormats = {{{ReportFormat::text, "text"},
                                                 {ReportFormat::json, "json"},
                                                 {ReportFormat::junit, "junit"},
                                                 {ReportFormat::prometheus, "prometheus"},
                                                 {ReportFormat::npd, "npd"},
                                                 {ReportFormat::markdown, "markdown"}}};
} // namespace

std::string_view to_string(ReportFormat f) {
  for (const auto& [format, name] : kFormats)
    if (format == f) return name;
  return "text"; // unreachable: every enumerator is in kFormats
}

std::optional<ReportFormat> parse_report_format(std::string_view name) {
  for (const auto& [format, spelled] : kFormats)
    if (spelled == name) return format;
  return std::nullopt;
}

std::vector<std::string> format_names(std::initializer_list<ReportFormat> formats) {
  std::vector<std::string> out;
  out.reserve(formats.size());
  for (const ReportFormat f : formats)
    out.emplace_back(to_string(f));
  return out;
}

std::vector<std::string> report_formats() {
  std::vector<std::string> out;
  out.reserve(kFormats.size());
  for (const auto& entry : kFormats)
    out.emplace_back(entry.name);
  return out;
}

std::string render_report(std::string_view format, const std::vector<Result>& results,
                          const ReportContext& ctx, const FactSet& facts, const TextOptions& text) {
  const auto f = parse_report_format(format);
  if (!f) throw std::invalid_argument("unknown report format: " + std::string(format));
  switch (*f) {
  case ReportFormat::text:
    return text_report(results, ctx, text);
  case ReportFormat::json:
    return json_report_text({ReportPart{results, ctx, facts}}, false);
  case ReportFormat::junit:
    return junit_report(results, ctx);
  case ReportFormat::prometheus:
    return prometheus_report(results, ctx, facts);
  case ReportFormat::npd:
    return npd_report(results, ctx);
  case ReportFormat::markdown:
    return markdown_report(results, ctx, facts);
  }
  throw std::invalid_argument("unknown report format: " + std::string(format));
}

} // namespace halo

namespace halo {

bool multi_report_format(std::string_view format) {
  const auto f = parse_report_format(format);
  return f == ReportFormat::text || f == ReportFormat::json;
}

std::string render_reports(std::string_view format, const std::vector<ReportPart>& parts,
                           const TextOptions& text) {
  const auto f = parse_report_format(format);
  if (f == ReportFormat::text) {
    std::string out;
    for (const auto& part : parts) {
      if (!out.empty()) out += '\n';
      out += text_report(part.results, part.ctx, text);
    }
    return out;
  }
  if (f == ReportFormat::json) {
    return json_report_text(parts, true);
  }
  throw std::invalid_argument(fmt::format("{} reports one Python environment per run", format));
}

} // namespace halo

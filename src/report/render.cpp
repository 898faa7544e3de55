// SPDX-License-Identifier: MIT
// Dispatch from a format name to its reporter.
#include <halo/report.hpp>
#include <halo/sanitize.hpp>

#include <fmt/format.h>

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

std::vector<std::string> report_formats() {
  return {"text", "json", "junit", "prometheus", "npd", "markdown"};
}

std::string render_report(std::string_view format, const std::vector<Result>& results,
                          const ReportContext& ctx, const FactSet& facts, const TextOptions& text) {
  if (format == "text") return text_report(results, ctx, text);
  if (format == "json") return json_report_text({ReportPart{results, ctx, facts}}, false);
  if (format == "junit") return junit_report(results, ctx);
  if (format == "prometheus") return prometheus_report(results, ctx, facts);
  if (format == "npd") return npd_report(results, ctx);
  if (format == "markdown") return markdown_report(results, ctx, facts);
  throw std::invalid_argument("unknown report format: " + std::string(format));
}

} // namespace halo

namespace halo {

bool multi_report_format(std::string_view format) {
  return format == "text" || format == "json";
}

std::string render_reports(std::string_view format, const std::vector<ReportPart>& parts,
                           const TextOptions& text) {
  if (format == "text") {
    std::string out;
    for (const auto& part : parts) {
      if (!out.empty()) out += '\n';
      out += text_report(part.results, part.ctx, text);
    }
    return out;
  }
  if (format == "json") {
    return json_report_text(parts, true);
  }
  throw std::invalid_argument(fmt::format("{} reports one Python environment per run", format));
}

} // namespace halo

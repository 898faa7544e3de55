// Dispatch from a format name to its reporter.
#include <halo/report.hpp>

#include <stdexcept>

namespace halo {

std::vector<std::string> report_formats() {
  return {"text", "json", "junit", "prometheus", "npd"};
}

std::string render_report(std::string_view format, const std::vector<Result>& results,
                          const ReportContext& ctx, const FactSet& facts, const TextOptions& text) {
  if (format == "text") return text_report(results, ctx, text);
  if (format == "json") return json_report(results, ctx).dump(2) + "\n";
  if (format == "junit") return junit_report(results, ctx);
  if (format == "prometheus") return prometheus_report(results, ctx, facts);
  if (format == "npd") return npd_report(results, ctx);
  throw std::invalid_argument("unknown report format: " + std::string(format));
}

} // namespace halo

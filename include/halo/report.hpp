// Reporters: text for people, JSON (schema_version 1) for machines.
#pragma once

#include <halo/fact.hpp>
#include <halo/result.hpp>
#include <halo/rules.hpp>

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace halo {

/// What the report says about the run besides the results.
struct ReportContext {
  std::string tool_version;
  std::string hostname;
  std::string kernel;
  std::string os;
  std::string ruleset_version;
  std::string ruleset_digest;
  std::string root; ///< "/" or the --root / --facts origin
  int exit_code = 0;
};

/// Options of the text reporter.
struct TextOptions {
  bool color = false;
  bool quiet = false;   ///< only failures and errors, then the summary
  bool verbose = false; ///< passing and skipped rules with their evidence too
};

/// The report formats `check --format` accepts.
std::vector<std::string> report_formats();

/// Renders results in one of report_formats(); throws std::invalid_argument for others. `facts`
/// are available to formats that export numbers (the text and JSON reports do not need them).
std::string render_report(std::string_view format, const std::vector<Result>& results,
                          const ReportContext& ctx, const FactSet& facts, const TextOptions& text);

/// The JSON report, schema_version 1 (docs/report.schema.json).
nlohmann::json json_report(const std::vector<Result>& results, const ReportContext& ctx);

/// The text report: grouped by area, failures first, each with evidence (and its path), why,
/// fix and sources; a summary line at the end.
std::string text_report(const std::vector<Result>& results, const ReportContext& ctx,
                        const TextOptions& opt);

/// Renders a structured fix as the commands and lines a person would type (used by the text
/// report and `explain`).
std::vector<std::string> render_fix_lines(const nlohmann::json& fix);

/// The facts listing for `halo-doctor facts` in text form: key, value, status, source.
std::string text_facts(const FactSet& facts);

/// The rule catalogue for `halo-doctor rules` in text form.
std::string text_catalogue(const RuleSet& rules);

/// One rule in full for `halo-doctor explain RULE_ID`.
std::string text_explain(const Rule& rule);

} // namespace halo

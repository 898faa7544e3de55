// The Kubernetes node-problem-detector custom-plugin format: one short message line on stdout
// and the plugin exit-code contract (0 OK, 1 NonOK, 2 Unknown), so a node whose GPU stack is
// misconfigured gets a node condition (docs/fleet.md, docs/examples/npd-halo-doctor.json).
#include <halo/report.hpp>

#include <fmt/format.h>

namespace halo {
namespace {

Severity threshold_of(FailOn f) {
  return static_cast<Severity>(static_cast<int>(f));
}

bool counts(const Result& r, FailOn fail_on) {
  return fail_on != FailOn::never && r.severity >= threshold_of(fail_on);
}

/// "PREFIX: a, b, c (+N more)" within kNpdMaxMessage characters.
std::string id_list(std::string_view prefix, const std::vector<std::string>& ids) {
  std::string out = fmt::format("{}: ", prefix);
  std::size_t shown = 0;
  for (const auto& id : ids) {
    const std::size_t left = ids.size() - shown - 1;
    const std::string more = left > 0 ? fmt::format(" (+{} more)", left) : "";
    const std::string piece = (shown == 0 ? "" : ", ") + id;
    if (out.size() + piece.size() + more.size() > kNpdMaxMessage) break;
    out += piece;
    ++shown;
  }
  if (shown < ids.size())
    out += fmt::format("{}(+{} more)", shown == 0 ? "" : " ", ids.size() - shown);
  return out.substr(0, kNpdMaxMessage);
}

} // namespace

int npd_exit_code(const std::vector<Result>& results, FailOn fail_on) {
  bool unknown = false;
  for (const auto& r : results) {
    if (!counts(r, fail_on)) continue;
    if (r.status == Outcome::fail && !r.waived()) return 1;
    if (r.status == Outcome::error) unknown = true;
  }
  return unknown ? 2 : 0;
}

std::string npd_report(const std::vector<Result>& results, const ReportContext& ctx) {
  std::vector<std::string> failed;
  std::vector<std::string> unknown;
  int n_pass = 0;
  for (const auto& r : results) {
    if (r.status == Outcome::pass) ++n_pass;
    if (!counts(r, ctx.fail_on)) continue;
    if (r.status == Outcome::fail && !r.waived()) failed.push_back(r.id);
    if (r.status == Outcome::error) unknown.push_back(r.id);
  }
  if (!failed.empty()) return id_list("halo-doctor failed", failed) + "\n";
  if (!unknown.empty()) return id_list("halo-doctor could not check", unknown) + "\n";
  return fmt::format("halo-doctor OK: {} rules passed\n", n_pass);
}

} // namespace halo

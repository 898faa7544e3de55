// SPDX-License-Identifier: MIT
// The Kubernetes node-problem-detector custom-plugin format: one short message line on stdout
// and the plugin exit-code contract (0 OK, 1 NonOK, 2 Unknown), so a node whose GPU stack is
// misconfigured gets a node condition (docs/fleet.md, docs/examples/npd-halo-doctor.json).
#include <halo/report.hpp>
#include <halo/sanitize.hpp>

#include <fmt/format.h>

#include <algorithm>

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

/// The message as node-problem-detector shows it: one line of printable UTF-8 (rule ids come
/// from rules files, which a site may write): control characters as `\xNN`, newlines as spaces,
/// cut to kNpdMaxMessage bytes without splitting a UTF-8 sequence.
std::string one_line(const std::string& s) {
  std::string out = terminal_safe(s);
  std::replace(out.begin(), out.end(), '\n', ' ');
  std::replace(out.begin(), out.end(), '\t', ' ');
  if (out.size() > kNpdMaxMessage) {
    std::size_t cut = kNpdMaxMessage;
    while (cut > 0 && (static_cast<unsigned char>(out[cut]) & 0xC0U) == 0x80U)
      --cut;
    out.resize(cut);
  }
  return out;
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
    // A per-GPU rule that failed on several GPUs is named once.
    auto& to = r.status == Outcome::fail && !r.waived() ? failed : unknown;
    if ((r.status == Outcome::fail && !r.waived()) || r.status == Outcome::error)
      if (std::find(to.begin(), to.end(), r.id) == to.end()) to.push_back(r.id);
  }
  std::string line;
  if (!failed.empty())
    line = id_list("halo-doctor failed", failed);
  else if (!unknown.empty())
    line = id_list("halo-doctor could not check", unknown);
  else
    line = fmt::format("halo-doctor OK: {} rules passed", n_pass);
  return one_line(line) + "\n";
}

} // namespace halo

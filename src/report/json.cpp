// SPDX-License-Identifier: MIT
#include <halo/report.hpp>

namespace halo {

nlohmann::json json_report(const std::vector<Result>& results, const ReportContext& ctx) {
  nlohmann::json j;
  j["schema_version"] = 1;
  j["tool"] = {{"name", "halo-doctor"}, {"version", ctx.tool_version}};
  j["host"] = {
      {"hostname", ctx.hostname}, {"kernel", ctx.kernel}, {"os", ctx.os}, {"root", ctx.root}};
  if (!ctx.runs_in.empty()) j["host"]["runs_in"] = ctx.runs_in;
  if (!ctx.virtualization.empty()) j["host"]["virtualization"] = ctx.virtualization;
  if (ctx.python.judged) {
    const auto& py = ctx.python;
    j["python"] = {{"site", py.site},
                   {"basis", py.basis},
                   {"torch", py.torch},
                   {"build", py.build},
                   {"hip", py.hip},
                   {"rocm", py.rocm},
                   {"gfx_targets", py.gfx_targets}};
  }
  j["ruleset"] = {{"version", ctx.ruleset_version}, {"digest", ctx.ruleset_digest}};
  nlohmann::json arr = nlohmann::json::array();
  for (const auto& r : results) {
    nlohmann::json e;
    e["id"] = r.id;
    e["title"] = r.title;
    e["area"] = r.area;
    e["status"] = to_string(r.status);
    e["severity"] = to_string(r.severity);
    e["message"] = r.message;
    if (r.gpu) {
      e["gpu"] = {{"index", r.gpu->index},
                  {"pci_slot", r.gpu->pci_slot},
                  {"gfx_target", r.gpu->gfx_target},
                  {"name", r.gpu->name},
                  {"hip_device", r.gpu->hip_device ? nlohmann::json(*r.gpu->hip_device)
                                                   : nlohmann::json(nullptr)}};
    }
    nlohmann::json ev = nlohmann::json::object();
    nlohmann::json ev_src = nlohmann::json::object();
    for (const auto& x : r.evidence) {
      ev[x.key] = x.value;
      nlohmann::json s = {{"status", x.status}, {"source", x.source}};
      if (!x.reason.empty()) s["reason"] = x.reason;
      ev_src[x.key] = std::move(s);
    }
    e["evidence"] = std::move(ev);
    e["evidence_sources"] = std::move(ev_src);
    e["fix"] = r.fix;
    e["pending_reboot"] = r.pending_reboot;
    e["sources"] = r.sources;
    if (r.waiver)
      e["waived"] = {
          {"reason", r.waiver->reason}, {"owner", r.waiver->owner}, {"expires", r.waiver->expires}};
    arr.push_back(std::move(e));
  }
  const Summary s = summarize(results);
  nlohmann::json summary = {
      {"pass", s.pass}, {"fail", s.fail}, {"skip", s.skip}, {"error", s.error}};
  summary["failed_by_severity"] = {{"error", s.failed(Severity::error)},
                                   {"warning", s.failed(Severity::warning)},
                                   {"info", s.failed(Severity::info)}};
  summary["pending_reboot"] = s.pending_reboot;
  j["summary"] = std::move(summary);
  j["results"] = std::move(arr);
  j["exit_code"] = ctx.exit_code;
  return j;
}

} // namespace halo

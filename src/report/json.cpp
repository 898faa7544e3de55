// SPDX-License-Identifier: MIT
#include <halo/report.hpp>
#include <halo/sanitize.hpp>

#include <algorithm>
#include <string>
#include <vector>

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
      if (!x.probe.empty()) s["probe"] = x.probe;
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

namespace halo {

namespace {
/// The evidence of one result as json_report's `evidence` and `evidence_sources` objects hold
/// it: one entry per key, the last of each key's evidence (`ev[key] = ...` overwrites), in the
/// objects' key order (std::map: bytewise).
std::vector<const Evidence*> evidence_by_key(const std::vector<Evidence>& evidence) {
  std::vector<const Evidence*> out;
  out.reserve(evidence.size());
  for (const auto& x : evidence)
    out.push_back(&x);
  // Stable: among equal keys the last one given stays last, and is the one kept.
  std::ranges::stable_sort(out,
                           [](const Evidence* a, const Evidence* b) { return a->key < b->key; });
  std::vector<const Evidence*> unique;
  unique.reserve(out.size());
  for (std::size_t i = 0; i < out.size(); ++i)
    if (i + 1 == out.size() || out[i + 1]->key != out[i]->key) unique.push_back(out[i]);
  return unique;
}

void write_strings(JsonStream& w, const std::vector<std::string>& list) {
  w.begin_array();
  for (const auto& s : list)
    w.string(s);
  w.end_array();
}

/// json_report(results, ctx) written to `w`, each object's members in nlohmann::json's (sorted)
/// key order.
void write_report(JsonStream& w, const std::vector<Result>& results, const ReportContext& ctx) {
  w.begin_object();
  w.key("exit_code");
  w.integer(ctx.exit_code);
  w.key("host");
  w.begin_object();
  w.key("hostname");
  w.string(ctx.hostname);
  w.key("kernel");
  w.string(ctx.kernel);
  w.key("os");
  w.string(ctx.os);
  w.key("root");
  w.string(ctx.root);
  if (!ctx.runs_in.empty()) {
    w.key("runs_in");
    w.string(ctx.runs_in);
  }
  if (!ctx.virtualization.empty()) {
    w.key("virtualization");
    w.string(ctx.virtualization);
  }
  w.end_object();
  if (ctx.python.judged) {
    const auto& py = ctx.python;
    w.key("python");
    w.begin_object();
    w.key("basis");
    w.string(py.basis);
    w.key("build");
    w.string(py.build);
    w.key("gfx_targets");
    write_strings(w, py.gfx_targets);
    w.key("hip");
    w.string(py.hip);
    w.key("rocm");
    w.string(py.rocm);
    w.key("site");
    w.string(py.site);
    w.key("torch");
    w.string(py.torch);
    w.end_object();
  }
  w.key("results");
  w.begin_array();
  for (const auto& r : results) {
    const std::vector<const Evidence*> evidence = evidence_by_key(r.evidence);
    w.begin_object();
    w.key("area");
    w.string(r.area);
    w.key("evidence");
    w.begin_object();
    for (const Evidence* x : evidence) {
      w.key(x->key);
      w.value(x->value);
    }
    w.end_object();
    w.key("evidence_sources");
    w.begin_object();
    for (const Evidence* x : evidence) {
      w.key(x->key);
      w.begin_object();
      if (!x->probe.empty()) {
        w.key("probe");
        w.string(x->probe);
      }
      if (!x->reason.empty()) {
        w.key("reason");
        w.string(x->reason);
      }
      w.key("source");
      w.string(x->source);
      w.key("status");
      w.string(x->status);
      w.end_object();
    }
    w.end_object();
    w.key("fix");
    w.value(r.fix);
    if (r.gpu) {
      w.key("gpu");
      w.begin_object();
      w.key("gfx_target");
      w.string(r.gpu->gfx_target);
      w.key("hip_device");
      if (r.gpu->hip_device)
        w.integer(*r.gpu->hip_device);
      else
        w.null();
      w.key("index");
      w.integer(r.gpu->index);
      w.key("name");
      w.string(r.gpu->name);
      w.key("pci_slot");
      w.string(r.gpu->pci_slot);
      w.end_object();
    }
    w.key("id");
    w.string(r.id);
    w.key("message");
    w.string(r.message);
    w.key("pending_reboot");
    w.boolean(r.pending_reboot);
    w.key("severity");
    w.string(to_string(r.severity));
    w.key("sources");
    write_strings(w, r.sources);
    w.key("status");
    w.string(to_string(r.status));
    w.key("title");
    w.string(r.title);
    if (r.waiver) {
      w.key("waived");
      w.begin_object();
      w.key("expires");
      w.string(r.waiver->expires);
      w.key("owner");
      w.string(r.waiver->owner);
      w.key("reason");
      w.string(r.waiver->reason);
      w.end_object();
    }
    w.end_object();
  }
  w.end_array();
  w.key("ruleset");
  w.begin_object();
  w.key("digest");
  w.string(ctx.ruleset_digest);
  w.key("version");
  w.string(ctx.ruleset_version);
  w.end_object();
  w.key("schema_version");
  w.integer(1);
  const Summary s = summarize(results);
  w.key("summary");
  w.begin_object();
  w.key("error");
  w.integer(s.error);
  w.key("fail");
  w.integer(s.fail);
  w.key("failed_by_severity");
  w.begin_object();
  w.key("error");
  w.integer(s.failed(Severity::error));
  w.key("info");
  w.integer(s.failed(Severity::info));
  w.key("warning");
  w.integer(s.failed(Severity::warning));
  w.end_object();
  w.key("pass");
  w.integer(s.pass);
  w.key("pending_reboot");
  w.integer(s.pending_reboot);
  w.key("skip");
  w.integer(s.skip);
  w.end_object();
  w.key("tool");
  w.begin_object();
  w.key("name");
  w.string("halo-doctor");
  w.key("version");
  w.string(ctx.tool_version);
  w.end_object();
  w.end_object();
}

/// True when every evidence key is valid UTF-8: dump_json renames the other keys (which moves
/// them in the order), so such a report is written from its tree instead.
bool keys_valid(const std::vector<ReportPart>& parts) {
  for (const auto& part : parts)
    for (const auto& r : part.results)
      for (const auto& x : r.evidence)
        if (!JsonStream::key_ok(x.key)) return false;
  return true;
}
} // namespace

std::string json_report_text(const std::vector<ReportPart>& parts, bool as_array) {
  if (!keys_valid(parts)) {
    if (!as_array) return dump_json(json_report(parts.at(0).results, parts.at(0).ctx), 2) + "\n";
    nlohmann::json all = nlohmann::json::array();
    for (const auto& part : parts)
      all.push_back(json_report(part.results, part.ctx));
    return dump_json(all, 2) + "\n";
  }
  std::string out;
  std::size_t results = 0;
  for (const auto& part : parts)
    results += part.results.size();
  out.reserve(4096 + 1024 * results); // some 800 bytes a result: grown once, if ever
  JsonStream w(out, 2);
  if (as_array) w.begin_array();
  for (const auto& part : parts)
    write_report(w, part.results, part.ctx);
  if (as_array) w.end_array();
  out += '\n';
  return out;
}

} // namespace halo

// SPDX-License-Identifier: MIT
// The plan report (halo-doctor plan): the model, the run's settings with where each came from, the
// itemised estimate, the verdict, the limits and the changes that need less memory, then the
// findings as the check report prints them. Only formatting: plan::make_plan computed the estimate,
// the derive stage the capacity, the rules the verdict.
#include <halo/plan.hpp>
#include <halo/report.hpp>
#include <halo/rules.hpp>
#include <halo/sanitize.hpp>

#include <fmt/color.h>
#include <fmt/format.h>

#include <cmath>

namespace halo {
namespace {

double gib(std::int64_t bytes) {
  return static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0);
}

/// 8030261248 -> "8,030,261,248".
std::string grouped(std::int64_t v) {
  std::string digits = fmt::format("{}", v < 0 ? -v : v);
  std::string out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return v < 0 ? "-" + out : out;
}

std::string origin_text(const plan::Origin& o) {
  switch (o.kind) {
  case plan::Origin::Kind::file:
  case plan::Origin::Kind::command_line:
    return o.text;
  case plan::Origin::Kind::default_value:
    return "default: " + o.text;
  case plan::Origin::Kind::assumed:
    return "assumed: " + o.text;
  }
  return o.text;
}

std::string origin_kind(const plan::Origin& o) {
  switch (o.kind) {
  case plan::Origin::Kind::file:
    return "file";
  case plan::Origin::Kind::command_line:
    return "command_line";
  case plan::Origin::Kind::default_value:
    return "default";
  case plan::Origin::Kind::assumed:
    return "assumed";
  }
  return "default";
}

/// The settings in display order: name, value as text, value as JSON, origin.
struct Row {
  std::string name;
  std::string text;
  nlohmann::json value;
  const plan::Origin* origin;
};

std::vector<Row> setting_rows(const plan::TrainSettings& s) {
  auto b = [](bool v) { return std::string(v ? "true" : "false"); };
  std::string targets;
  for (const auto& t : s.lora_targets.value)
    targets += (targets.empty() ? "" : ",") + t;
  std::vector<Row> rows = {
      {"method", plan::to_string(s.method.value), plan::to_string(s.method.value),
       &s.method.origin},
      {"micro_batch", fmt::format("{}", s.micro_batch.value), s.micro_batch.value,
       &s.micro_batch.origin},
      {"seq_len", fmt::format("{}", s.seq_len.value), s.seq_len.value, &s.seq_len.origin},
      {"grad_accum", fmt::format("{}", s.grad_accum.value), s.grad_accum.value,
       &s.grad_accum.origin},
      {"eval_batch", fmt::format("{}", s.eval_batch.value), s.eval_batch.value,
       &s.eval_batch.origin},
      {"load_dtype", s.load_dtype.value, s.load_dtype.value, &s.load_dtype.origin},
      {"bf16", b(s.bf16.value), s.bf16.value, &s.bf16.origin},
      {"fp16", b(s.fp16.value), s.fp16.value, &s.fp16.origin},
      {"tf32", b(s.tf32.value), s.tf32.value, &s.tf32.origin},
      {"gradient_checkpointing", b(s.gradient_checkpointing.value), s.gradient_checkpointing.value,
       &s.gradient_checkpointing.origin},
      {"optim", s.optim.value, s.optim.value, &s.optim.origin},
      {"attention", plan::to_string(s.attention.value), plan::to_string(s.attention.value),
       &s.attention.origin},
      {"dataloader_num_workers", fmt::format("{}", s.dataloader_workers.value),
       s.dataloader_workers.value, &s.dataloader_workers.origin},
      {"dataloader_pin_memory", b(s.pin_memory.value), s.pin_memory.value, &s.pin_memory.origin},
      {"torch_compile", b(s.torch_compile.value), s.torch_compile.value, &s.torch_compile.origin},
      {"num_processes", fmt::format("{}", s.num_processes.value), s.num_processes.value,
       &s.num_processes.origin},
  };
  if (s.shard_stage.value > 0 || s.offload_params.value || s.offload_optimizer.value) {
    rows.push_back({"shard_stage", fmt::format("{}", s.shard_stage.value), s.shard_stage.value,
                    &s.shard_stage.origin});
    rows.push_back({"offload_params", b(s.offload_params.value), s.offload_params.value,
                    &s.offload_params.origin});
    rows.push_back({"offload_optimizer", b(s.offload_optimizer.value), s.offload_optimizer.value,
                    &s.offload_optimizer.origin});
  }
  if (s.method.value != plan::Method::full) {
    rows.insert(rows.begin() + 1,
                {"lora_r", fmt::format("{}", s.lora_r.value), s.lora_r.value, &s.lora_r.origin});
    rows.insert(rows.begin() + 2,
                {"lora_target_modules", targets, s.lora_targets.value, &s.lora_targets.origin});
    if (!s.modules_to_save.value.empty()) {
      std::string mts;
      for (const auto& t : s.modules_to_save.value)
        mts += (mts.empty() ? "" : ",") + t;
      rows.insert(rows.begin() + 3,
                  {"modules_to_save", mts, s.modules_to_save.value, &s.modules_to_save.origin});
    }
    if (s.method.value == plan::Method::lora)
      rows.insert(rows.begin() + 3, {"load_in_8bit", b(s.load_in_8bit.value), s.load_in_8bit.value,
                                     &s.load_in_8bit.origin});
  }
  return rows;
}

const Result* fit_result(const std::vector<Result>& results) {
  for (const auto& r : results)
    if (r.id == rule_ids::plan_memory_fit) return &r;
  return nullptr;
}

} // namespace

std::string plan_verdict(const std::vector<Result>& results) {
  const Result* r = fit_result(results);
  if (r == nullptr) return "unknown";
  if (r->status == Outcome::pass) return "fits";
  // A measured out-of-memory (plan --measure) is its own verdict, never the estimate's.
  if (r->status == Outcome::fail && r->message.rfind("does not fit (measured)", 0) == 0)
    return "does not fit (measured)";
  if (r->status == Outcome::fail) return r->severity == Severity::error ? "does not fit" : "tight";
  return "unknown";
}

std::string plan_text_report(const PlanReportData& d, const ReportContext& ctx,
                             const TextOptions& opt) {
  const plan::Plan& p = d.plan;
  const plan::ModelConfig& m = p.model;
  std::string out;
  auto line = [&](const std::string& s) { out += s + "\n"; };
  auto bold = [&](const std::string& s) {
    return opt.color ? fmt::format(fmt::emphasis::bold, "{}", s) : s;
  };
  const auto capacity = d.facts.get_int(keys::plan_capacity_bytes);
  const auto gpu = d.facts.get_int(keys::plan_gpu);
  line(bold(fmt::format("halo-doctor plan: {} on {}", m.name,
                        gpu ? describe_gpu(gpu_ref(d.facts, *gpu)) : std::string("no GPU"))));
  line("");
  line(bold("model") + "  " + m.path);
  line(fmt::format("  {} {}: {} layers, hidden {}, {} heads ({} KV, head_dim {}), MLP {}, "
                   "vocabulary {}{}",
                   m.model_type.empty() ? "?" : m.model_type, m.architecture, m.num_layers,
                   m.hidden_size, m.num_heads, m.num_kv_heads, m.head_dim, m.intermediate_size,
                   m.vocab_size,
                   m.num_experts > 0 ? fmt::format(", {} experts ({} per token)", m.num_experts,
                                                   m.experts_per_token)
                                     : std::string()));
  line(
      fmt::format("  {} parameters{}{}", grouped(p.params.total),
                  p.params.active != p.params.total
                      ? fmt::format(" ({} active per token)", grouped(p.params.active))
                      : std::string(),
                  p.params.exact ? "" : " (unknown model_type: counted as a Llama-style decoder)"));
  if (m.index_total_bytes)
    line(
        fmt::format("  weights on disk: {:.2f} GiB ({})", gib(*m.index_total_bytes), m.index_path));
  line("");
  line(bold("run") + "  " +
       (p.settings.config_path.empty()
            ? std::string("no --config: the frameworks' defaults and the command line")
            : fmt::format("{} ({})", p.settings.config_path, p.settings.config_format)));
  for (const auto& r : setting_rows(p.settings))
    line(fmt::format("  {:<24} {:<20} {}", r.name, r.text, origin_text(*r.origin)));
  if (!p.settings.ignored_keys.empty()) {
    std::string keys;
    for (const auto& k : p.settings.ignored_keys)
      keys += (keys.empty() ? "" : ", ") + k;
    line(fmt::format("  not read: {}", keys));
  }
  for (const auto& n : p.settings.notes)
    line("  note: " + n);
  line("");
  line(bold("memory per GPU") + "  (docs/plan.md)");
  for (const auto& it : p.estimate.items) {
    line(fmt::format("  {:<52} {:>9.2f} GiB  {}", it.what, gib(it.bytes), it.basis));
    if (!it.source.empty()) line(fmt::format("  {:<52} {:>13}  source: {}", "", "", it.source));
  }
  line(fmt::format("  {:<52} {:>9.2f} GiB  band {:.2f} .. {:.2f} GiB; peak: {}", "total",
                   gib(p.estimate.required_bytes), gib(p.estimate.low_bytes),
                   gib(p.estimate.high_bytes), p.estimate.peak_phase));
  line(fmt::format("  {:<52} {:>9.2f} GiB", "allocated by PyTorch",
                   gib(p.estimate.allocated_bytes)));
  for (const auto& u : p.estimate.unmeasured)
    line(fmt::format("  band widened, not measured: {}", u));
  if (const auto& mm = p.measured) {
    line("");
    if (mm->status == "ok") {
      line(bold("measured") + fmt::format("  plan --measure on {} (torch {}{}), {}", mm->device,
                                          mm->torch, mm->hip ? ", ROCm" : "", mm->python));
      const auto side = [&](const char* what, std::int64_t est, std::int64_t meas) {
        line(fmt::format(
            "  {:<34} estimate {:>8.2f} GiB   measured {:>8.2f} GiB  ({:+.1f} %)", what, gib(est),
            gib(meas),
            meas > 0 ? 100.0 * static_cast<double>(est - meas) / static_cast<double>(meas) : 0.0));
      };
      side("allocated (max_memory_allocated)", p.estimate.allocated_bytes, mm->peak_allocated);
      side("device peak (reserved + context)", p.estimate.required_bytes, mm->device_bytes);
      line(fmt::format("  {}{}", mm->detail,
                       mm->step_s > 0 ? fmt::format("; step time {:.2f} s", mm->step_s)
                                      : std::string()));
      line("  the verdict is judged by the measurement");
    } else {
      line(bold("measured") + fmt::format("  not measured ({}): {}", mm->status, mm->reason));
      line("  the verdict is judged by the estimate");
    }
  }
  line("");
  const Fact* cap = d.facts.find(keys::plan_capacity_bytes);
  if (capacity) {
    line(fmt::format("{}  {:.2f} GiB ({})", bold("capacity"), gib(*capacity), cap->source));
    if (auto fix = d.facts.get_int(keys::plan_capacity_with_ttm_fix_bytes); fix && *fix > *capacity)
      line(fmt::format("  with the TTM fix (halo-doctor fix): {:.2f} GiB", gib(*fix)));
  } else {
    line(fmt::format("{}  unknown ({})", bold("capacity"),
                     cap != nullptr ? cap->reason : std::string("not derived")));
  }
  const std::string verdict = plan_verdict(d.results);
  std::string vline = fmt::format("{}  {}", bold("verdict"), verdict);
  const std::int64_t judged = p.measured && p.measured->status == "ok" ? p.measured->device_bytes
                                                                       : p.estimate.required_bytes;
  if (capacity && *capacity > 0)
    vline += fmt::format(": needs {:.2f} of {:.2f} GiB ({:.0f} %)", gib(judged), gib(*capacity),
                         100.0 * static_cast<double>(judged) / static_cast<double>(*capacity));
  line(vline);
  if (d.limits && d.limits->max_micro_batch == 0) {
    line(fmt::format("  no micro-batch of {} tokens fits", p.settings.seq_len.value));
  } else if (d.limits) {
    line(fmt::format("  largest micro-batch that fits: {} (at {} tokens)",
                     d.limits->max_micro_batch, p.settings.seq_len.value));
    line(fmt::format(
        "  longest sequence that fits: {} tokens (at micro-batch {}){}", d.limits->max_seq_len,
        p.settings.micro_batch.value,
        d.limits->max_seq_len == m.max_positions ? ", the model's max_position_embeddings" : ""));
  }
  if (!p.alternatives.empty()) {
    line("");
    line(bold("to need less") + "  (each change on top of the ones above it)");
    for (const auto& a : p.alternatives)
      line(fmt::format("  {:<72} {:>9.2f} GiB{}", a.change, gib(a.required_bytes),
                       capacity ? (a.required_bytes <= *capacity ? "  fits" : "  does not fit")
                                : ""));
  }
  line("");
  // Model names, paths and keys come from the user's files: escaped for the terminal
  // (include/halo/sanitize.hpp), as the findings that text_report adds are.
  out = terminal_safe(out, opt.color);
  out += text_report(d.results, ctx, opt);
  return out;
}

nlohmann::json plan_json_report(const PlanReportData& d, const ReportContext& ctx) {
  const plan::Plan& p = d.plan;
  const plan::ModelConfig& m = p.model;
  nlohmann::json j;
  j["schema_version"] = 1;
  j["model"] = {{"path", m.path},
                {"name", m.name},
                {"model_type", m.model_type},
                {"architecture", m.architecture},
                {"num_hidden_layers", m.num_layers},
                {"hidden_size", m.hidden_size},
                {"intermediate_size", m.intermediate_size},
                {"num_attention_heads", m.num_heads},
                {"num_key_value_heads", m.num_kv_heads},
                {"head_dim", m.head_dim},
                {"vocab_size", m.vocab_size},
                {"tie_word_embeddings", m.tie_word_embeddings},
                {"num_experts", m.num_experts},
                {"experts_per_token", m.experts_per_token},
                {"weights_file_bytes",
                 m.index_total_bytes ? nlohmann::json(*m.index_total_bytes) : nlohmann::json()}};
  j["parameters"] = {{"total", p.params.total},
                     {"active", p.params.active},
                     {"embedding", p.params.embedding},
                     {"lm_head", p.params.lm_head},
                     {"layers", p.params.layers},
                     {"linear", p.params.linear},
                     {"exact", p.params.exact},
                     {"formula", p.params.formula},
                     {"trainable", p.estimate.trainable_params}};
  nlohmann::json settings = nlohmann::json::object();
  for (const auto& r : setting_rows(p.settings))
    settings[r.name] = {{"value", r.value},
                        {"origin", {{"kind", origin_kind(*r.origin)}, {"text", r.origin->text}}}};
  j["run"] = {{"config_paths", p.settings.config_path},
              {"config_format", p.settings.config_format},
              {"settings", settings},
              {"ignored_keys", p.settings.ignored_keys},
              {"notes", p.settings.notes}};
  nlohmann::json items = nlohmann::json::array();
  for (const auto& it : p.estimate.items)
    items.push_back({{"key", it.key},
                     {"what", it.what},
                     {"bytes", it.bytes},
                     {"basis", it.basis},
                     {"source", it.source}});
  j["memory"] = {{"items", items},
                 {"required_bytes", p.estimate.required_bytes},
                 {"low_bytes", p.estimate.low_bytes},
                 {"high_bytes", p.estimate.high_bytes},
                 {"allocated_bytes", p.estimate.allocated_bytes},
                 {"unmeasured", p.estimate.unmeasured},
                 {"peak_phase", p.estimate.peak_phase}};
  if (const auto& mm = p.measured)
    j["memory"]["measured"] = {{"status", mm->status},
                               {"reason", mm->reason},
                               {"python", mm->python},
                               {"torch", mm->torch},
                               {"device", mm->device},
                               {"hip", mm->hip},
                               {"reduced", mm->reduced},
                               {"peak_allocated_bytes", mm->peak_allocated},
                               {"peak_reserved_bytes", mm->peak_reserved},
                               {"context_bytes", mm->context_bytes},
                               {"device_bytes", mm->device_bytes},
                               {"step_s", mm->step_s},
                               {"detail", mm->detail}};
  const auto capacity = d.facts.get_int(keys::plan_capacity_bytes);
  const auto fix = d.facts.get_int(keys::plan_capacity_with_ttm_fix_bytes);
  const auto gpu = d.facts.get_int(keys::plan_gpu);
  const Fact* cap = d.facts.find(keys::plan_capacity_bytes);
  j["machine"] = {{"gpu", gpu ? nlohmann::json(*gpu) : nlohmann::json()},
                  {"capacity_bytes", capacity ? nlohmann::json(*capacity) : nlohmann::json()},
                  {"capacity_source", cap == nullptr ? std::string()
                                      : cap->ok()    ? cap->source
                                                     : cap->reason},
                  {"capacity_with_ttm_fix_bytes", fix ? nlohmann::json(*fix) : nlohmann::json()}};
  j["verdict"] = plan_verdict(d.results);
  j["limits"] = d.limits ? nlohmann::json{{"max_micro_batch", d.limits->max_micro_batch},
                                          {"max_seq_len", d.limits->max_seq_len}}
                         : nlohmann::json();
  nlohmann::json alts = nlohmann::json::array();
  for (const auto& a : p.alternatives)
    alts.push_back(
        {{"change", a.change},
         {"required_bytes", a.required_bytes},
         {"fits", capacity ? nlohmann::json(a.required_bytes <= *capacity) : nlohmann::json()}});
  j["alternatives"] = alts;
  j["report"] = json_report(d.results, ctx);
  return j;
}

} // namespace halo

// SPDX-License-Identifier: MIT
// Probe: the training run given with `plan` or `check --model` (include/halo/plan.hpp), as facts.
// It reads no machine: the model and training configurations were read (and refused when bad)
// before probing; this turns the plan into `plan.*` facts whose source is the file and line, the
// option or the default each came from. Without a plan, plan.present is false and the rules of
// rules/plan.json skip.
#include "probes.hpp"

#include <halo/fact_keys.hpp>
#include <halo/plan.hpp>

#include <fmt/format.h>

namespace halo::probes {
namespace {

constexpr std::string_view kPresent = fact_keys::plan::present;

std::string source(const plan::Origin& o) {
  switch (o.kind) {
  case plan::Origin::Kind::file:
    return o.text;
  case plan::Origin::Kind::command_line:
    return "command line " + o.text;
  case plan::Origin::Kind::default_value:
    return "default: " + o.text;
  case plan::Origin::Kind::assumed:
    return "assumed: " + o.text;
  }
  return o.text;
}

void collect(const DeriveContext& ctx, FactSet& facts) {
  const auto& p = ctx.options.plan;
  if (!p) {
    facts.put_ok(std::string(kPresent), false, "halo-doctor (no --model given)");
    return;
  }
  facts.put_ok(std::string(kPresent), true, "halo-doctor --model " + p->model.path);
  const std::string& cfg = p->model.path;
  facts.put_ok(std::string(fact_keys::plan::model_name), p->model.name, cfg);
  facts.put_ok(std::string(fact_keys::plan::model_type), p->model.model_type, cfg);
  facts.put_ok(std::string(fact_keys::plan::model_parameters), p->params.total,
               fmt::format("derived: {} ({})", p->params.formula,
                           p->params.exact ? "exact" : "unknown model_type: Llama-style count"));
  facts.put_ok(std::string(fact_keys::plan::model_parameters_exact), p->params.exact, cfg);
  if (p->model.index_total_bytes)
    facts.put_ok(std::string(fact_keys::plan::model_weights_file_bytes),
                 *p->model.index_total_bytes, p->model.index_path + " (metadata.total_size)");
  else
    facts.put_status(std::string(fact_keys::plan::model_weights_file_bytes), Status::missing, cfg,
                     "no model.safetensors.index.json beside the config");
  const plan::TrainSettings& s = p->settings;
  facts.put_ok(std::string(fact_keys::plan::config_format), s.config_format,
               s.config_path.empty() ? std::string("no --config") : s.config_path);
  facts.put_ok(std::string(fact_keys::plan::method), plan::to_string(s.method.value),
               source(s.method.origin));
  facts.put_ok(std::string(fact_keys::plan::micro_batch), s.micro_batch.value,
               source(s.micro_batch.origin));
  facts.put_ok(std::string(fact_keys::plan::eval_batch), s.eval_batch.value,
               source(s.eval_batch.origin));
  facts.put_ok(std::string(fact_keys::plan::grad_accum), s.grad_accum.value,
               source(s.grad_accum.origin));
  facts.put_ok(std::string(fact_keys::plan::effective_batch),
               s.micro_batch.value * s.grad_accum.value * s.num_processes.value,
               "derived: micro-batch x gradient accumulation x processes");
  facts.put_ok(std::string(fact_keys::plan::seq_len), s.seq_len.value, source(s.seq_len.origin));
  facts.put_ok(std::string(fact_keys::plan::bf16), s.bf16.value, source(s.bf16.origin));
  facts.put_ok(std::string(fact_keys::plan::fp16), s.fp16.value, source(s.fp16.origin));
  facts.put_ok(std::string(fact_keys::plan::tf32), s.tf32.value, source(s.tf32.origin));
  facts.put_ok(std::string(fact_keys::plan::load_dtype), s.load_dtype.value,
               source(s.load_dtype.origin));
  facts.put_ok(std::string(fact_keys::plan::gradient_checkpointing), s.gradient_checkpointing.value,
               source(s.gradient_checkpointing.origin));
  facts.put_ok(std::string(fact_keys::plan::optim), s.optim.value, source(s.optim.origin));
  facts.put_ok(std::string(fact_keys::plan::uses_bitsandbytes), plan::uses_bitsandbytes(s),
               "derived: QLoRA or LLM.int8 through transformers, or a bitsandbytes optimizer");
  facts.put_ok(std::string(fact_keys::plan::load_in_8bit), s.load_in_8bit.value,
               source(s.load_in_8bit.origin));
  facts.put_ok(std::string(fact_keys::plan::attention), plan::to_string(s.attention.value),
               source(s.attention.origin));
  facts.put_ok(std::string(fact_keys::plan::dataloader_workers), s.dataloader_workers.value,
               source(s.dataloader_workers.origin));
  facts.put_ok(std::string(fact_keys::plan::pin_memory), s.pin_memory.value,
               source(s.pin_memory.origin));
  facts.put_ok(std::string(fact_keys::plan::torch_compile), s.torch_compile.value,
               source(s.torch_compile.origin));
  facts.put_ok(std::string(fact_keys::plan::num_processes), s.num_processes.value,
               source(s.num_processes.origin));
  facts.put_ok(std::string(fact_keys::plan::ignored_keys), s.ignored_keys,
               s.config_path.empty() ? std::string("no --config") : s.config_path);
  for (const auto& it : p->estimate.items)
    facts.put_ok(fact_keys::plan::memory(it.key + "_bytes"), it.bytes, "derived: " + it.basis);
  // With plan --measure the fit is judged by the measured peak (reserved + context), not the
  // estimate: the estimate's items stay as facts beside it.
  if (const auto& mm = p->measured; mm && mm->status == "ok") {
    const std::string src =
        fmt::format("measured: plan --measure, {} on {} (torch {}){}", mm->python, mm->device,
                    mm->torch, mm->reduced ? ", 2/4-layer copies extrapolated" : "");
    facts.put_ok(std::string(fact_keys::plan::measure_status), mm->status, src);
    facts.put_ok(std::string(fact_keys::plan::measure_device_bytes), mm->device_bytes, src);
    facts.put_ok(fact_keys::plan::memory("required_bytes"), mm->device_bytes, src);
    facts.put_ok(fact_keys::plan::memory("required_high_bytes"), mm->device_bytes, src);
    facts.put_ok(fact_keys::plan::memory("required_low_bytes"),
                 mm->peak_allocated + mm->context_bytes, src);
    facts.put_ok(fact_keys::plan::memory("estimate_bytes"), p->estimate.required_bytes,
                 "derived: the estimate (docs/plan.md)");
    facts.put_ok(fact_keys::plan::memory("allocated_bytes"), mm->peak_allocated, src);
  } else {
    if (mm) {
      facts.put_ok(std::string(fact_keys::plan::measure_status), mm->status,
                   "plan --measure: " + mm->python);
      facts.put_status(std::string(fact_keys::plan::measure_device_bytes), Status::missing,
                       "plan --measure", "not measured: " + mm->reason);
    } else {
      facts.put_status(std::string(fact_keys::plan::measure_status), Status::missing,
                       "halo-doctor plan", "run plan --measure to measure the run on this GPU");
      facts.put_status(std::string(fact_keys::plan::measure_device_bytes), Status::missing,
                       "halo-doctor plan", "run plan --measure to measure the run on this GPU");
    }
    facts.put_ok(fact_keys::plan::memory("required_bytes"), p->estimate.required_bytes,
                 "derived: the sum of plan.memory.*_bytes, peak at " + p->estimate.peak_phase +
                     " (docs/plan.md)");
    facts.put_ok(fact_keys::plan::memory("required_low_bytes"), p->estimate.low_bytes,
                 "derived: allocated at the peak + the smallest GPU context (docs/plan.md)");
    facts.put_ok(fact_keys::plan::memory("required_high_bytes"), p->estimate.high_bytes,
                 "derived: the estimate + the larger replayed allocator reserve, one more segment "
                 "of the largest request, the largest context and the regimes not measured "
                 "(docs/plan.md \"The allocator model\")");
    facts.put_ok(fact_keys::plan::memory("allocated_bytes"), p->estimate.allocated_bytes,
                 "derived: torch.cuda.max_memory_allocated() at the peak (docs/plan.md)");
  }
  facts.put_ok(fact_keys::plan::memory("lora_required_bytes"), p->lora_required_bytes,
               "derived: the same run as bf16 LoRA (docs/plan.md)");
  facts.put_ok(std::string(fact_keys::plan::trainable_parameters), p->estimate.trainable_params,
               "derived: all parameters (full) or the LoRA adapters");
}

} // namespace

std::unique_ptr<Probe> make_plan_probe() {
  return std::make_unique<BasicDerivation>(
      "plan", [](const DeriveContext& ctx, FactSet& facts) { collect(ctx, facts); });
}

} // namespace halo::probes

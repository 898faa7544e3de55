// SPDX-License-Identifier: MIT
// The plan of a training run (include/halo/plan.hpp make_plan, find_limits; docs/plan.md): the
// memory estimate (src/plan/estimate.cpp) of the configured run, of the same run with LoRA, and
// of each change that would need less memory (gradient checkpointing, micro-batch 1 with more
// gradient accumulation, fused or 8-bit AdamW, LoRA, QLoRA), and the largest micro-batch and
// sequence length whose estimate fits a budget.
#include <halo/plan.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

namespace halo::plan {
namespace {

/// TrainingArguments' bitsandbytes and torchao low-bit optimizers (OptimizerNames in
/// training_args.py: adamw_bnb_8bit, paged_adamw_8bit, adamw_torch_4bit, ...).
bool is_8bit_optim(const std::string& optim) {
  return optim.find("8bit") != std::string::npos || optim.find("4bit") != std::string::npos;
}

} // namespace

Plan make_plan(const std::string& model_path, const std::vector<std::string>& config_paths,
               const Overrides& overrides) {
  Plan plan;
  plan.model = load_model(model_path);
  plan.params = count_parameters(plan.model);
  plan.settings = load_train_settings(config_paths, overrides);
  TrainSettings& s = plan.settings;
  if (s.load_dtype.value == "auto")
    s.load_dtype = {plan.model.torch_dtype == "float32" || plan.model.torch_dtype.empty()
                        ? "float32"
                    : plan.model.torch_dtype == "float16" ? "float16"
                                                          : "bfloat16",
                    Origin{Origin::Kind::file, plan.model.path + " (torch_dtype)"}};
  // PEFT's default targets per architecture (peft/utils/constants.py
  // TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING): GPT-2 c_attn, Phi-3 qkv_proj.
  if (s.lora_targets.origin.kind == Origin::Kind::default_value) {
    if (plan.model.model_type == "gpt2") s.lora_targets.value = {"c_attn"};
    if (plan.model.model_type == "phi3") s.lora_targets.value = {"qkv_proj"};
  }
  plan.estimate = estimate_memory(plan.model, plan.params, s);

  TrainSettings lora = s;
  lora.method.value = Method::lora;
  if (lora.load_dtype.value == "float32") lora.load_dtype.value = "bfloat16";
  plan.lora_required_bytes = estimate_memory(plan.model, plan.params, lora).required_bytes;

  // What would need less memory, each change on top of the previous one.
  TrainSettings alt = s;
  auto push = [&](std::string change) {
    plan.alternatives.push_back(Alternative{
        std::move(change), estimate_memory(plan.model, plan.params, alt).required_bytes});
  };
  if (!alt.gradient_checkpointing.value) {
    alt.gradient_checkpointing.value = true;
    push("gradient_checkpointing: true");
  }
  if (alt.micro_batch.value > 1) {
    const std::int64_t accum = alt.grad_accum.value * alt.micro_batch.value;
    alt.micro_batch.value = 1;
    alt.grad_accum.value = accum;
    push(fmt::format("micro-batch 1 with gradient_accumulation_steps {} (same effective batch)",
                     accum));
  }
  // foreach AdamW's _foreach_sqrt temporary (one state's size) is gone with the fused kernel
  // (torch/optim/adamw.py _fused_adamw); worth it when the optimizer step is the peak.
  if (alt.method.value == Method::full && alt.optim.value == "adamw_torch" &&
      estimate_memory(plan.model, plan.params, alt).peak_phase == "the optimizer step") {
    alt.optim.value = "adamw_torch_fused";
    push("optim: adamw_torch_fused (no foreach temporaries in the optimizer step)");
  }
  if (alt.method.value == Method::full && !is_8bit_optim(alt.optim.value)) {
    alt.optim.value = "adamw_bnb_8bit";
    push("optim: adamw_bnb_8bit (bitsandbytes 8-bit AdamW)");
  }
  if (alt.method.value == Method::full) {
    alt.method.value = Method::lora;
    alt.lora_r.value = 16;
    alt.lora_targets.value = {"all-linear"};
    if (alt.load_dtype.value == "float32") alt.load_dtype.value = "bfloat16";
    push("LoRA r=16 on all linear layers, base in bf16");
  }
  if (alt.method.value == Method::lora) {
    alt.method.value = Method::qlora;
    push("QLoRA: the base in 4-bit NF4");
  }
  return plan;
}

Limits find_limits(const Plan& plan, std::int64_t budget_bytes) {
  // The largest value in [0, hi] of one setting whose estimate stays within the budget: the
  // estimate grows with the micro-batch and the sequence, so bisect. The high end of the band is
  // held to the budget, as the verdict "fits" holds it (rules/plan.json plan-memory-fit).
  auto largest = [&](Setting<std::int64_t> TrainSettings::*field, std::int64_t hi) {
    TrainSettings s = plan.settings;
    std::int64_t lo = 0;
    while (lo < hi) {
      const std::int64_t mid = lo + (hi - lo + 1) / 2;
      (s.*field).value = mid;
      if (estimate_memory(plan.model, plan.params, s).high_bytes <= budget_bytes)
        lo = mid;
      else
        hi = mid - 1;
    }
    return lo;
  };
  Limits lim;
  lim.max_micro_batch = largest(&TrainSettings::micro_batch, 4096);
  const std::int64_t positions =
      plan.model.max_positions > 0 ? plan.model.max_positions : std::int64_t{1} << 20;
  lim.max_seq_len = largest(&TrainSettings::seq_len, std::max<std::int64_t>(positions, 64));
  return lim;
}

} // namespace halo::plan

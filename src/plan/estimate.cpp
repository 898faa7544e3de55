// SPDX-License-Identifier: MIT
// The memory estimate of a training run (include/halo/plan.hpp; docs/plan.md "Memory" gives every
// formula with its source).
//   - Weights, gradients, optimizer states: Hugging Face, "Model training anatomy"
//     (docs/source/en/model_memory_anatomy.md): mixed precision keeps fp32 weights and 16-bit
//     copies (6 B/param), fp32 gradients (4 B), AdamW two fp32 states (8 B), 8-bit AdamW 2 B;
//     torch.optim keeps states in the parameter's dtype, so a model trained in bf16 throughout
//     needs 2+2+4 B.
//   - Activations: Korthikanti et al. 2022, "Reducing Activation Recomputation in Large
//     Transformer Models" (arXiv:2205.05198), section 4.1, per layer s*b*h*(34 + 5*a*s/h) bytes,
//     of which 5*a*s^2*b is the attention matrix that FlashAttention and memory-efficient SDPA
//     never store; here counted tensor by tensor for grouped-query attention and gated MLPs.
//   - QLoRA: Dettmers et al. 2023 (arXiv:2305.14314), NF4 weights at 4 bit with one fp32 absmax
//     per 64 weights, double quantisation 8-bit absmax plus one fp32 per 256 blocks (0.127 bit).
#include <halo/error.hpp>
#include <halo/plan.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>

namespace halo::plan {
namespace {

/// HF's anatomy measured the CUDA context and kernels at about 1.3 GB; ROCm's HIP runtime,
/// rocBLAS and hipBLASLt workspaces are of the same order.
constexpr double kRuntimeBytes = 1.3e9;
/// The caching allocator's fragmentation: 10 % of what is allocated and freed during the step
/// (gradients, optimizer states, activations); the range seen is 10 to 20 %.
constexpr double kFragmentation = 0.10;

/// One linear projection of a decoder layer: its PEFT/transformers module name, in and out
/// features, and how many a layer has (experts).
struct Linear {
  std::string name;
  std::int64_t in = 0;
  std::int64_t out = 0;
  std::int64_t count = 1;
};

/// The linear projections of one decoder layer (modeling_<model_type>.py).
std::vector<Linear> layer_linears(const ModelConfig& m) {
  const std::int64_t h = m.hidden_size;
  const std::int64_t q = m.num_heads * m.head_dim;
  const std::int64_t kv = m.num_kv_heads * m.head_dim;
  const std::int64_t I = m.intermediate_size;
  if (m.model_type == "gpt2")
    return {{"c_attn", h, 3 * h}, {"c_proj", h, h}, {"c_fc", h, I}, {"c_proj", I, h}};
  std::vector<Linear> l;
  if (m.model_type == "phi3") {
    l = {{"qkv_proj", h, q + 2 * kv},
         {"o_proj", q, h},
         {"gate_up_proj", h, 2 * I},
         {"down_proj", I, h}};
    return l;
  }
  l = {{"q_proj", h, q}, {"k_proj", h, kv}, {"v_proj", h, kv}, {"o_proj", q, h}};
  if (m.num_experts == 0) {
    l.insert(l.end(), {{"gate_proj", h, I}, {"up_proj", h, I}, {"down_proj", I, h}});
  } else if (m.model_type == "mixtral") {
    const std::int64_t E = m.num_experts;
    l.insert(l.end(), {{"gate", h, E}, {"w1", h, I, E}, {"w3", h, I, E}, {"w2", I, h, E}});
  } else {
    const std::int64_t E = m.num_experts;
    const std::int64_t Ie = m.moe_intermediate_size;
    l.insert(
        l.end(),
        {{"gate", h, E}, {"gate_proj", h, Ie, E}, {"up_proj", h, Ie, E}, {"down_proj", Ie, h, E}});
    if (const std::int64_t Is = m.shared_expert_intermediate_size; Is > 0)
      l.insert(l.end(), {{"gate_proj", h, Is},
                         {"up_proj", h, Is},
                         {"down_proj", Is, h},
                         {"shared_expert_gate", h, 1}});
  }
  return l;
}

/// Bytes of one element of a dtype name.
double dtype_bytes(const std::string& dtype) {
  if (dtype == "float32") return 4;
  return 2; // bfloat16, float16
}

/// Optimizer states per parameter and bytes per state: torch.optim keeps states in the
/// parameter's dtype; bitsandbytes' 8-bit optimizers one byte per state (block-wise quantised),
/// torchao's 4-bit half a byte. TrainingArguments' OptimizerNames (training_args.py) name them.
struct OptimizerShape {
  int states = 2;
  double bytes_per_state = 0; ///< 0: the parameter's (or master copy's) dtype
  bool known = true;
};
OptimizerShape optimizer_shape(const std::string& optim) {
  OptimizerShape o;
  const auto has = [&](std::string_view s) { return optim.find(s) != std::string::npos; };
  if (has("ademamix"))
    o.states = 3;
  else if (has("lion") || has("adagrad") || has("rmsprop") || has("adafactor"))
    o.states = 1; // adafactor factors its second moment: about 4 B/param in fp32 (HF anatomy)
  else if (optim == "sgd")
    o.states = 0; // Trainer's "sgd" is torch.optim.SGD without momentum
  else if (!has("adam"))
    o.known = false;
  if (has("8bit"))
    o.bytes_per_state = 1;
  else if (has("4bit"))
    o.bytes_per_state = 0.5;
  return o;
}

bool is_8bit_optim(const std::string& optim) {
  return optim.find("8bit") != std::string::npos || optim.find("4bit") != std::string::npos;
}

std::int64_t to_bytes(double v) {
  if (!std::isfinite(v) || v > 9.0e18) throw InputError("the memory estimate overflows 64 bits");
  return static_cast<std::int64_t>(std::llround(v));
}

/// LoRA's trainable parameters: r*(in+out) for each adapted projection of every layer
/// (peft/tuners/lora/layer.py: lora_A in->r, lora_B r->out). "all-linear" adapts every linear
/// projection of the layers (PEFT excludes the output layer).
std::int64_t lora_params(const ModelConfig& m, std::int64_t r,
                         const std::vector<std::string>& targets) {
  const bool all = std::find(targets.begin(), targets.end(), "all-linear") != targets.end();
  const std::set<std::string> wanted(targets.begin(), targets.end());
  double per_layer = 0;
  for (const auto& l : layer_linears(m))
    if (all || wanted.contains(l.name))
      per_layer +=
          static_cast<double>(r) * static_cast<double>(l.in + l.out) * static_cast<double>(l.count);
  return to_bytes(per_layer * static_cast<double>(m.num_layers));
}

/// Activation elements one token leaves per decoder layer for the backward pass (16-bit each
/// when training in mixed precision), with attention kept out of the s*s matrix (SDPA, flash).
/// Korthikanti et al. Table 2 counts 34*s*b*h bytes for GPT-3; this splits it by tensor:
/// two norm inputs; q/k/v input, Q, K, V and the attention output; the MLP input and, gated,
/// gate, up, act(gate) and their product (GPT-2: the GELU input and output).
double layer_elements_per_token(const ModelConfig& m, const TrainSettings& s) {
  const auto h = static_cast<double>(m.hidden_size);
  const auto q = static_cast<double>(m.num_heads * m.head_dim);
  const auto kv = static_cast<double>(m.num_kv_heads * m.head_dim);
  const double norms = (m.model_type == "gemma2" || m.model_type == "gemma3_text") ? 4 * h : 2 * h;
  double attn = h + q + 2 * kv + q;
  if (s.attention.value == Attention::eager)
    // Korthikanti's 5*a*s^2*b bytes (softmax input and output, dropout mask) at 2 B/element.
    attn += 2.5 * static_cast<double>(m.num_heads) * static_cast<double>(s.seq_len.value);
  double mlp = 0;
  if (m.model_type == "gpt2") {
    mlp = h + 2 * static_cast<double>(m.intermediate_size);
  } else if (m.num_experts > 0) {
    const auto Ie = static_cast<double>(m.model_type == "mixtral" ? m.intermediate_size
                                                                  : m.moe_intermediate_size);
    mlp = h + static_cast<double>(m.experts_per_token) * 4 * Ie +
          4 * static_cast<double>(m.shared_expert_intermediate_size) +
          static_cast<double>(m.num_experts);
  } else {
    mlp = h + 4 * static_cast<double>(m.intermediate_size);
  }
  return norms + attn + mlp;
}

} // namespace

Estimate estimate_memory(const ModelConfig& m, const ParamCount& p, const TrainSettings& s) {
  Estimate e;
  const auto P = static_cast<double>(p.total);
  const double wb = dtype_bytes(s.load_dtype.value);
  const bool mixed = s.bf16.value || s.fp16.value;
  const OptimizerShape opt = optimizer_shape(s.optim.value);
  const std::string dname = s.load_dtype.value;
  auto add = [&](std::string key, std::string what, double bytes, std::string basis) {
    e.items.push_back(Item{std::move(key), std::move(what), to_bytes(bytes), std::move(basis)});
  };

  if (s.method.value == Method::full) {
    e.trainable_params = p.total;
    if (wb == 4 && mixed) {
      add("weights", "weights (fp32 master + 16-bit copies)", 6 * P,
          "6 B/param: fp32 weights and the 16-bit copies autocast makes (HF anatomy)");
    } else {
      add("weights", fmt::format("weights ({})", dname), wb * P, fmt::format("{} B/param", wb));
    }
    add("gradients", fmt::format("gradients ({})", wb == 4 ? "float32" : dname), wb * P,
        fmt::format("{} B/param, the parameter's dtype", wb));
    const double sb = opt.bytes_per_state > 0 ? opt.bytes_per_state : wb;
    add("optimizer", fmt::format("optimizer states ({})", s.optim.value), opt.states * sb * P,
        fmt::format("{} state(s) x {} B/param", opt.states, sb));
  } else {
    const auto A = static_cast<double>(lora_params(m, s.lora_r.value, s.lora_targets.value));
    e.trainable_params = static_cast<std::int64_t>(A);
    if (s.method.value == Method::qlora) {
      const auto lin = static_cast<double>(p.linear);
      // NF4 (4 bit) + double-quantised block constants: 8-bit absmax per 64 weights and an fp32
      // constant per 256 blocks = 0.127 bit/param (QLoRA section 3).
      const double per = 0.5 + 1.0 / 64 + 4.0 / (64.0 * 256.0);
      add("weights", "base weights (linear layers NF4, the rest 16-bit)", lin * per + (P - lin) * 2,
          "0.516 B/param of the layers' linear weights (NF4 + double-quantised absmax); 2 B/param "
          "for embeddings, norms and the LM head");
    } else if (s.load_in_8bit.value) {
      // LLM.int8 (bitsandbytes Linear8bitLt): int8 weights and one fp32 scale per output row.
      const auto lin = static_cast<double>(p.linear);
      add("weights", "base weights (linear layers int8, the rest 16-bit)", lin + (P - lin) * 2,
          "1 B/param of the layers' linear weights (LLM.int8); 2 B/param for the rest");
    } else {
      add("weights", fmt::format("base weights ({}, frozen)", dname), wb * P,
          fmt::format("{} B/param", wb));
    }
    const double sb = opt.bytes_per_state > 0 ? opt.bytes_per_state : 4;
    add("adapters", fmt::format("LoRA adapters r={} (fp32) and their gradients", s.lora_r.value),
        8 * A,
        "r*(in+out) per adapted projection; 4 B weight + 4 B gradient (PEFT keeps adapters in "
        "fp32)");
    add("optimizer", fmt::format("optimizer states ({}, adapters only)", s.optim.value),
        opt.states * sb * A,
        fmt::format("{} state(s) x {} B per adapter parameter", opt.states, sb));
  }

  // Sharding (ZeRO stages; FSDP) divides the static items by the processes; offloading moves
  // them to host memory. Stage 3 gathers one layer's full weights at a time, and prefetches the
  // next: two layers' weights come back on top.
  const double n = static_cast<double>(std::max<std::int64_t>(1, s.num_processes.value));
  const std::int64_t stage = s.num_processes.value > 1 ? s.shard_stage.value : 0;
  for (auto& it : e.items) {
    const bool weights = it.key == "weights";
    const bool grads = it.key == "gradients" || it.key == "adapters";
    const bool optim = it.key == "optimizer";
    if ((optim && s.offload_optimizer.value) ||
        (s.offload_params.value && (weights || grads || optim))) {
      it.what += " (offloaded)";
      it.basis += "; offloaded: 0 on the GPU";
      it.bytes = 0;
    } else if ((optim && stage >= 1) || (grads && stage >= 2) || (weights && stage >= 3)) {
      it.what += fmt::format(" (1/{} shard)", s.num_processes.value);
      it.basis += fmt::format("; / {} (ZeRO stage {})", s.num_processes.value, stage);
      it.bytes = to_bytes(static_cast<double>(it.bytes) / n);
    }
  }
  if (stage >= 3 || s.offload_params.value) {
    const auto layer =
        static_cast<double>(p.per_layer_attention + p.per_layer_mlp + p.per_layer_norms);
    const double gathered_b = s.method.value == Method::qlora ? 0.516 : wb;
    add("gathered", "two layers' weights gathered at a time", 2 * layer * gathered_b,
        "stage 3 / offload: a layer's full weights during its forward and backward, and the next "
        "prefetched");
  }

  // Activations of one micro-batch.
  const double ab = mixed ? 2 : wb;
  const auto sl = static_cast<double>(s.seq_len.value);
  const auto b = static_cast<double>(s.micro_batch.value);
  const auto h = static_cast<double>(m.hidden_size);
  const auto L = static_cast<double>(m.num_layers);
  const double per_layer = layer_elements_per_token(m, s) * sl * ab;
  double per_seq = 0;
  std::string basis;
  if (s.gradient_checkpointing.value) {
    // Each layer keeps its input; the backward pass recomputes one layer at a time.
    per_seq = L * h * sl * ab + per_layer + 2 * h * sl * ab;
    basis = "checkpointing: L*s*h layer inputs + one layer's activations, per sequence";
  } else {
    per_seq = L * per_layer + 2 * h * sl * ab;
    basis =
        s.attention.value == Attention::eager
            ? "L layers x (norms, q/k/v/o, MLP tensors + 2.5*a*s attention scores) per token"
            : "L layers x (norms, q/k/v/o and MLP tensors) per token; no s*s matrix (SDPA/flash)";
  }
  e.activations_per_sequence_bytes = to_bytes(per_seq);
  add("activations",
      fmt::format("activations (micro-batch {} x {} tokens)", s.micro_batch.value, s.seq_len.value),
      per_seq * b, basis);
  // The LM head's logits in the activation dtype and the fp32 copy the loss makes
  // (transformers loss_utils.py ForCausalLMLoss: logits.float()).
  // A chunked loss (torchtune) holds one of its 8 chunks at a time.
  const double chunks = s.chunked_loss.value ? 8 : 1;
  const double logits = sl * b * static_cast<double>(m.vocab_size) * (ab + 4) / chunks;
  add("logits",
      s.chunked_loss.value ? "logits, one chunk of 8 at a time"
                           : "logits and their fp32 copy in the loss",
      logits,
      s.chunked_loss.value ? fmt::format("s*b*vocab*({}+4)/8 B", ab)
                           : fmt::format("s*b*vocab*({}+4) B", ab));
  double dynamic = 0;
  for (const auto& it : e.items)
    if (it.key != "weights") dynamic += static_cast<double>(it.bytes);
  add("runtime", "HIP runtime, kernels and library workspaces", kRuntimeBytes,
      "about 1.3 GB (HF anatomy measured the kernels at 1.3 GB)");
  add("fragmentation", "caching allocator fragmentation", kFragmentation * dynamic,
      "10 % of gradients, optimizer states, activations and logits");
  for (const auto& it : e.items)
    e.required_bytes += it.bytes;
  if (!opt.known)
    e.items.back().basis +=
        fmt::format("; optimizer '{}' not known, counted as AdamW", s.optim.value);
  return e;
}

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
  // estimate grows with the micro-batch and the sequence, so bisect.
  auto largest = [&](Setting<std::int64_t> TrainSettings::*field, std::int64_t hi) {
    TrainSettings s = plan.settings;
    std::int64_t lo = 0;
    while (lo < hi) {
      const std::int64_t mid = lo + (hi - lo + 1) / 2;
      (s.*field).value = mid;
      if (estimate_memory(plan.model, plan.params, s).required_bytes <= budget_bytes)
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

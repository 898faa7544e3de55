// SPDX-License-Identifier: MIT
// halo-doctor plan (issue 15): will this training run fit on this machine, and is its
// configuration right for the GPU? The model comes from a Hugging Face config.json, the run from a
// training configuration (TrainingArguments JSON, axolotl YAML, torchtune YAML, accelerate YAML)
// and the command line. Nothing here touches the machine: the plan probe (checks/plan.cpp) turns a
// Plan into `plan.*` facts, the derive stage sets them against the GPU's usable memory, and the
// rules in rules/plan.json judge them. docs/plan.md states every formula and its source.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace halo::plan {

/// The rule area of rules/plan.json: `check` evaluates those rules only with a training run.
inline constexpr std::string_view kRuleArea = "plan";

/// Where a setting's value came from: a file and line ("train.yaml:12"), a command-line option
/// ("--batch"), or a framework default or an assumption, said in words ("default of
/// TrainingArguments.per_device_train_batch_size").
struct Origin {
  enum class Kind { file, command_line, default_value, assumed };
  Kind kind = Kind::default_value;
  std::string text;
};

/// One setting of the run with its origin.
template <class T> struct Setting {
  T value{};
  Origin origin;
};

/// What a Hugging Face model's config.json says about its shape (transformers'
/// configuration_<model_type>.py names the fields; GPT-2 spells them n_embd, n_layer, n_head,
/// n_inner, n_positions). Counts are plain integers; sizes of tensors are in parameters.
struct ModelConfig {
  std::string path;         ///< the config.json that was read
  std::string name;         ///< `_name_or_path`, else the directory's name
  std::string model_type;   ///< `model_type` ("llama", "qwen2", "gpt2", ...)
  std::string architecture; ///< `architectures[0]` ("LlamaForCausalLM"), may be empty
  std::int64_t hidden_size = 0;
  std::int64_t num_layers = 0;
  std::int64_t intermediate_size = 0;
  std::int64_t num_heads = 0;
  std::int64_t num_kv_heads = 0;
  std::int64_t head_dim = 0; ///< `head_dim`, else hidden_size / num_heads
  std::int64_t vocab_size = 0;
  std::int64_t max_positions = 0; ///< `max_position_embeddings` / `n_positions`, 0 if absent
  bool tie_word_embeddings = false;
  bool tie_from_default = false; ///< absent from the file: the model class's default
  std::string torch_dtype;       ///< "bfloat16", "float16", "float32" or empty
  // Mixture of experts (Mixtral: num_local_experts/num_experts_per_tok; Qwen2-MoE/Qwen3-MoE:
  // num_experts, moe_intermediate_size, shared_expert_intermediate_size).
  std::int64_t num_experts = 0;
  std::int64_t experts_per_token = 0;
  std::int64_t moe_intermediate_size = 0;
  std::int64_t shared_expert_intermediate_size = 0;
  /// Parameters and bytes from `model.safetensors.index.json` beside the config
  /// (`metadata.total_size`, bytes of all stored tensors), when present.
  std::optional<std::int64_t> index_total_bytes;
  std::string index_path;
};

/// Reads a model: a directory holding config.json, the config.json itself, or a Hugging Face hub
/// cache directory (`models--ORG--NAME`, whose refs/main names the snapshot). Local only; links
/// are followed only while they stay inside the model's directory (the hub cache's
/// snapshots/ -> blobs/ links do). Throws InputError (exit 2) naming the file (and line) for a
/// missing file, invalid JSON, or a JSON document that is not a decoder model's config.
ModelConfig load_model(const std::string& path);

/// The parameter count, by part. Formulas in docs/plan.md ("Parameters"), from the modules of
/// transformers' modeling_<model_type>.py: attention q/k/v/o, the MLP (gated: gate/up/down;
/// GPT-2: c_fc/c_proj), norms, embeddings and the LM head (counted once when tied).
struct ParamCount {
  std::int64_t total = 0;
  std::int64_t embedding = 0; ///< token (and GPT-2's position) embeddings
  std::int64_t lm_head = 0;   ///< 0 when tied to the embedding
  std::int64_t layers = 0;    ///< all decoder layers together
  std::int64_t per_layer_attention = 0;
  std::int64_t per_layer_mlp = 0; ///< all experts and the router for MoE
  std::int64_t per_layer_norms = 0;
  /// Parameters of the layers' linear projections (what LoRA adapts and QLoRA stores in 4 bit).
  std::int64_t linear = 0;
  /// Parameters one token passes through (MoE: experts_per_token of num_experts), for display.
  std::int64_t active = 0;
  bool exact = true;   ///< false: unknown model_type, counted as a Llama-style decoder
  std::string formula; ///< one line naming the family formula used
};

/// Counts the parameters of `m`.
ParamCount count_parameters(const ModelConfig& m);

/// Fine-tuning method.
enum class Method { full, lora, qlora };
std::string to_string(Method m);

/// Which attention kernel the run uses (transformers' `attn_implementation`; axolotl's
/// flash_attention / sdp_attention; torchtune uses SDPA).
enum class Attention { eager, sdpa, flash_attention_2 };
std::string to_string(Attention a);

/// The training run as the doctor understands it, normalised across the configuration formats.
struct TrainSettings {
  std::string config_path;   ///< the training configuration file, empty if none
  std::string config_format; ///< "transformers", "axolotl", "torchtune", "accelerate", "none"
  Setting<Method> method;
  Setting<std::int64_t> micro_batch; ///< per-device train batch (sequences per step)
  Setting<std::int64_t> eval_batch;
  Setting<std::int64_t> grad_accum;
  Setting<std::int64_t> seq_len; ///< tokens per sequence
  Setting<bool> bf16;
  Setting<bool> fp16;
  Setting<bool> tf32;
  Setting<std::string> load_dtype; ///< dtype the base weights are loaded in
  /// LoRA on a base quantised to 8 bit (bitsandbytes LLM.int8: `load_in_8bit`).
  Setting<bool> load_in_8bit;
  /// The loss computes the logits a chunk at a time and never holds all of them (torchtune's
  /// LinearCrossEntropyLoss and CEWithChunkedOutputLoss, 8 chunks by default).
  Setting<bool> chunked_loss;
  Setting<bool> gradient_checkpointing;
  Setting<std::string> optim; ///< TrainingArguments.optim spelling ("adamw_torch", ...)
  Setting<std::int64_t> lora_r;
  Setting<std::vector<std::string>> lora_targets; ///< module names, or {"all-linear"}
  Setting<Attention> attention;
  Setting<std::int64_t> dataloader_workers;
  Setting<bool> pin_memory;
  Setting<bool> torch_compile;
  Setting<std::int64_t> num_processes; ///< processes (GPUs) the launcher starts
  /// What data parallelism shards across the processes (ZeRO, Rajbhandari et al. 2020,
  /// arXiv:1910.02054): 0 nothing (DDP), 1 optimizer states, 2 and gradients, 3 and weights
  /// (DeepSpeed zero_stage; FSDP SHARD_GRAD_OP = 2, FULL_SHARD and HYBRID_SHARD = 3).
  Setting<std::int64_t> shard_stage;
  /// Optimizer states (DeepSpeed offload_optimizer) or weights, gradients and optimizer states
  /// (DeepSpeed offload_param, FSDP fsdp_offload_params) kept in host memory instead of the GPU's.
  Setting<bool> offload_optimizer;
  Setting<bool> offload_params;
  /// Keys the file has that the doctor does not know and that are close to no known key.
  std::vector<std::string> ignored_keys;
};

/// True when the run loads or optimises through bitsandbytes: 4-bit QLoRA through transformers'
/// BitsAndBytesConfig (axolotl, TrainingArguments; torchtune quantises with torchao instead),
/// LLM.int8 (`load_in_8bit`), or one of TrainingArguments' bitsandbytes optimizers
/// (training_args.py OptimizerNames: adamw_bnb_8bit, adamw_8bit, paged_*, lion_*, rmsprop_bnb*,
/// ademamix*; torchao's adamw_torch_8bit/4bit are not).
bool uses_bitsandbytes(const TrainSettings& s);

/// What the command line sets; each present value overrides the file.
struct Overrides {
  std::optional<Method> method;
  std::optional<std::int64_t> micro_batch;
  std::optional<std::int64_t> seq_len;
  std::optional<std::int64_t> grad_accum;
  std::optional<bool> gradient_checkpointing;
  std::optional<std::string> optim;
  std::optional<std::int64_t> lora_r;
  std::optional<std::string> load_dtype;
};

/// Reads the training configurations in order (a later file's values win; none: defaults and
/// overrides only) and applies `overrides`. The format is recognised by its keys (docs/plan.md
/// lists them). A key that is not the format's but within two edits of one is a misspelling:
/// InputError "FILE:LINE: unknown key 'gradient_checkpoint' (did you mean
/// 'gradient_checkpointing'?)" (exit 2), as is a value of the wrong type or out of range.
TrainSettings load_train_settings(const std::vector<std::string>& paths,
                                  const Overrides& overrides);

/// One line of the memory estimate, in bytes.
struct Item {
  std::string key;  ///< fact suffix: "weights", "gradients", "optimizer", ...
  std::string what; ///< for people: "weights (bf16, 2 B/param)"
  std::int64_t bytes = 0;
  std::string basis; ///< the formula, in one line
};

/// The itemised memory one GPU needs for the run (per device: data-parallel replicas each hold
/// the whole model). `required_bytes` is the sum of `items`.
struct Estimate {
  std::vector<Item> items;
  std::int64_t required_bytes = 0;
  std::int64_t trainable_params = 0;
  std::int64_t activations_per_sequence_bytes = 0;
};

/// The memory estimate (docs/plan.md "Memory"): HF's model-memory anatomy for weights,
/// gradients and optimizer states; Korthikanti et al. 2022 for activations; QLoRA (Dettmers et
/// al. 2023) for NF4 with its block constants.
Estimate estimate_memory(const ModelConfig& m, const ParamCount& p, const TrainSettings& s);

/// One change that would make the run need less memory, with the estimate after it.
struct Alternative {
  std::string change; ///< "gradient_checkpointing: true"
  std::int64_t required_bytes = 0;
};

/// Everything `plan` reads and computes before it sees the machine.
struct Plan {
  ModelConfig model;
  ParamCount params;
  TrainSettings settings;
  Estimate estimate;
  /// The run with one change each (checkpointing, micro-batch 1, 8-bit AdamW, LoRA, QLoRA),
  /// for those that apply, each cumulative on the previous one.
  std::vector<Alternative> alternatives;
  /// The estimate of the same run as bf16 LoRA (used to tell whether QLoRA is needed).
  std::int64_t lora_required_bytes = 0;
};

/// Reads the model and the training configuration and computes the estimate.
Plan make_plan(const std::string& model_path, const std::vector<std::string>& config_paths,
               const Overrides& overrides);

/// The largest micro-batch (1..4096) and sequence length (64..max positions, or 1,048,576) whose
/// estimate stays within `budget_bytes`; 0 when even the smallest does not.
struct Limits {
  std::int64_t max_micro_batch = 0;
  std::int64_t max_seq_len = 0;
};
Limits find_limits(const Plan& plan, std::int64_t budget_bytes);

} // namespace halo::plan

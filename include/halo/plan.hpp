// SPDX-License-Identifier: MIT
// halo-doctor plan (issue 15): will this training run fit on this machine, and is its
// configuration right for the GPU? The model comes from a Hugging Face config.json, the run from a
// training configuration (TrainingArguments JSON, axolotl YAML, torchtune YAML, accelerate YAML)
// and the command line. Nothing here touches the machine: the plan probe (checks/plan/plan.cpp)
// turns a Plan into `plan.*` facts, the derive stage sets them against the GPU's usable memory, and
// the rules in rules/plan.json judge them. docs/plan.md states every formula and its source.
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
  /// `final_logit_softcapping` (Gemma 2), 0 when absent or null.
  double final_logit_softcapping = 0;
  /// `attn_logit_softcapping` (Gemma 2: Gemma2Config default 50.0 when absent; Gemma 3:
  /// Gemma3TextConfig default None), 0 when absent for other types or null. Eager attention
  /// applies it as scores / cap, tanh, * cap (modeling_gemma2.py eager_attention_forward).
  double attn_logit_softcapping = 0;
  /// Dropout probabilities active in training (model.train()): `attention_dropout` (GPT-2:
  /// `attn_pdrop`, GPT2Config default 0.1) on eager attention's probabilities, and `resid_pdrop`
  /// (GPT-2 default 0.1, Phi-3 default 0.0) after the attention and MLP outputs. 0 when absent.
  double attention_dropout = 0;
  double resid_dropout = 0;
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

/// True when `model_type`'s forward has been audited for the tensors it keeps for the backward
/// (docs/plan.md, "Saved tensors by architecture": one table per type, from its transformers
/// modeling file). The same list as the types whose parameters are counted exactly; any other
/// type is estimated as a Llama-style decoder and its band widens (EstimateResult::unmeasured).
bool audited_type(std::string_view model_type);

/// One weight matrix a token passes through in the forward pass, as `halo-doctor bench --model`
/// times it (docs/bench.md "Model"). Names are the modules of transformers' modeling_<type>.py.
struct Projection {
  std::string name;              ///< "q_proj", "qkv_proj" (Phi-3), "c_attn" (GPT-2), "lm_head"
  std::int64_t out_features = 0; ///< rows of the nn.Linear weight (N of the GEMM)
  std::int64_t in_features = 0;  ///< columns (K of the GEMM, the reduction)
  std::int64_t count = 0;        ///< occurrences per forward pass: num_layers, 1 for lm_head
  /// false where bitsandbytes keeps the module in bf16 under load_in_4bit: the LM head
  /// (transformers integrations/bitsandbytes.py get_keys_to_not_convert keeps the output
  /// embedding unquantized).
  bool quantized = true;
};

/// The projections of a dense decoder, per modeling_<model_type>.py: Llama-style q/k/v/o_proj and
/// gate/up/down_proj; Phi-3 fused qkv_proj and gate_up_proj; GPT-2 c_attn, c_proj, c_fc and the
/// MLP's c_proj (Conv1D, same GEMM shapes); then lm_head (vocab x hidden, computed also when tied
/// to the embedding). Throws InputError for a mixture-of-experts model (its experts see a share
/// of the tokens each; not modelled yet).
std::vector<Projection> projections(const ModelConfig& m);

/// The halo-bench argument for `projections`: "NAME:NxK:COUNT[:bf16],..." with N rounded up to a
/// multiple of 16 and K to a multiple of 32 (the kernels' tiles; `padded` says whether any was).
std::string bench_linears_argument(const std::vector<Projection>& projections, bool& padded);

/// Tokens of one training GEMM: micro_batch x seq_len rounded up to a multiple of 16, at most
/// 1,048,576 (InputError beyond).
std::int64_t training_gemm_tokens(std::int64_t micro_batch, std::int64_t seq_len);

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
  /// LoRA dropout probability (PEFT LoraConfig.lora_dropout, default 0.0): above 0 each adapted
  /// module keeps a dropout mask of its input for the backward (torch native_dropout).
  Setting<double> lora_dropout;
  Setting<std::vector<std::string>> lora_targets; ///< module names, or {"all-linear"}
  /// PEFT's modules_to_save (axolotl lora_modules_to_save): modules trained in full beside the
  /// adapters; embed_tokens and lm_head are counted (peft/utils/other.py ModulesToSaveWrapper: a
  /// trainable copy in the base dtype, with its gradient and optimizer states). Default empty.
  Setting<std::vector<std::string>> modules_to_save;
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
  /// Things the reader did that the user should know: a key given twice ("FILE:LINE: duplicate
  /// key 'bf16' (also at line 3): the last value is used, ..."), as PyYAML and json do.
  std::vector<std::string> notes;
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

/// One line of the memory estimate, in bytes: what the item holds at the run's peak (an item
/// that exists but is not alive at the peak, e.g. gradients during the loss of step 2, shows 0
/// bytes and says so in `basis`), so that the items add up to the peak.
struct Item {
  std::string key;  ///< fact suffix: "weights", "gradients", "optimizer", ...
  std::string what; ///< for people: "weights (bf16, 2 B/param)"
  std::int64_t bytes = 0;
  std::string basis;  ///< the formula, in one line
  std::string source; ///< the upstream source file and function the item follows
};

/// The itemised memory one GPU needs for the run (per device: data-parallel replicas each hold
/// the whole model), modelled as the frameworks allocate (docs/plan.md "Memory"): the peak is
/// the largest of the step's phases (the loss backward, the attention backward, the end of the
/// backward, the optimizer step), in step 2, when the optimizer states made in step 1 exist.
/// `required_bytes` is the sum of `items`: the device-level peak (allocated + the caching
/// allocator's reserve + the GPU context). `low_bytes`..`high_bytes` is its band.
struct Estimate {
  std::vector<Item> items;
  std::int64_t required_bytes = 0;
  /// The band of `required_bytes` (the total): low = what PyTorch allocates at the peak plus the
  /// smallest context (the caching allocator frees its cached blocks and retries before it
  /// reports out of memory, CUDACachingAllocator.cpp); high = the larger replayed reserve of the
  /// default allocator and expandable segments, one more segment of the largest request, the
  /// largest context, the K/V repeat of a padded batch, and once more each item of a regime no
  /// measurement checked (`unmeasured`).
  std::int64_t low_bytes = 0;
  std::int64_t high_bytes = 0;
  /// The regimes of this run that no measurement in tests/plan/plantruth checked ("MoE routing
  /// and experts", "ZeRO/FSDP sharding", "8-bit, 4-bit or paged optimizer states", "Adafactor",
  /// "4-bit or 8-bit weights", "an unknown model_type"), each with the items that widen the band.
  std::vector<std::string> unmeasured;
  /// torch.cuda.max_memory_allocated() at the peak (the items less reserve and context).
  std::int64_t allocated_bytes = 0;
  std::string peak_phase; ///< "the loss backward of step 2", ...
  std::int64_t trainable_params = 0;
  std::int64_t activations_per_sequence_bytes = 0;
};

/// The memory estimate (docs/plan.md "Memory").
Estimate estimate_memory(const ModelConfig& m, const ParamCount& p, const TrainSettings& s);

/// One change that would make the run need less memory, with the estimate after it.
struct Alternative {
  std::string change; ///< "gradient_checkpointing: true"
  std::int64_t required_bytes = 0;
};

/// `plan --measure`: the run measured on this machine's GPU 0 by the user's own torch,
/// transformers and peft (checks/plan/plan_measure.py, run in a child with a time limit). Bytes.
struct Measurement {
  /// "ok", "not_measured" (no torch, transformers, peft or GPU; the reason says which), "oom",
  /// "error" (the child crashed, hung, or answered nonsense).
  std::string status;
  std::string reason;      ///< why it is not "ok", in words
  std::string python;      ///< the interpreter that ran it and how it was chosen
  std::string torch;       ///< torch.__version__
  std::string device;      ///< torch.cuda.get_device_name(0)
  bool hip = false;        ///< torch.version.hip is set (ROCm)
  bool reduced = false;    ///< measured as 2- and 4-layer copies and extrapolated
  std::int64_t layers = 0; ///< the model's decoder layers
  /// torch.cuda.max_memory_allocated() of the full model; extrapolated linearly in the layer
  /// count from the 2- and 4-layer copies when `reduced`.
  std::int64_t peak_allocated = 0;
  /// torch.cuda.max_memory_reserved(): measured for the full model; when `reduced` the
  /// allocated figure plus the estimate's allocator reserve (reserved memory does not scale
  /// with depth, so it is never extrapolated).
  std::int64_t peak_reserved = 0;
  std::int64_t context_bytes = 0; ///< mem_get_info's used less reserved: context, kernels
  std::int64_t device_bytes = 0;  ///< peak_reserved + context_bytes: what the run needs
  double step_s = 0;              ///< the last step's time (full model only)
  std::string detail;             ///< the per-depth figures, for the report
};

/// Everything `plan` reads and computes before it sees the machine.
struct Plan {
  ModelConfig model;
  ParamCount params;
  TrainSettings settings;
  Estimate estimate;
  /// The run with one change each (checkpointing, micro-batch 1, fused AdamW when foreach AdamW's
  /// temporaries set the peak, 8-bit AdamW, LoRA, QLoRA),
  /// for those that apply, each cumulative on the previous one.
  std::vector<Alternative> alternatives;
  /// The estimate of the same run as bf16 LoRA (used to tell whether QLoRA is needed).
  std::int64_t lora_required_bytes = 0;
  /// `plan --measure`'s result; absent without --measure.
  std::optional<Measurement> measured;
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

// SPDX-License-Identifier: MIT
// The memory estimate of a training run (include/halo/plan.hpp; docs/plan.md "Memory" gives every
// item with its source). Item by item as the frameworks allocate, read from their source:
//   - weights, gradients, optimizer states and the optimizer step's temporaries: torch.optim
//     (adamw.py _multi_tensor_adamw / _fused_adamw), transformers' Adafactor, bitsandbytes;
//   - activations: the tensors autograd keeps in transformers' decoder layers (modeling_llama.py
//     and the families that copy it), PEFT's LoRA layers (peft/tuners/lora/layer.py), SDPA's
//     kernels against eager attention, torch.utils.checkpoint;
//   - logits and loss: transformers loss/loss_utils.py ForCausalLMLoss (fp32 log-softmax) and its
//     backward;
//   - the peak: the largest of the step's phases, in step 2 (the states are made in step 1);
//   - the caching allocator's reserve (c10/cuda/CUDACachingAllocator.cpp) and the GPU context.
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

/// What the caching allocator, the context and the loss path need, as named constants with
/// their source.
/// The GPU context outside the caching allocator (CUDA or HIP context, loaded kernels, library
/// handles): the band of what torch.cuda.mem_get_info() shows beyond max_memory_reserved().
/// CUDA with lazy module loading (CUDA_MODULE_LOADING=LAZY, the default since CUDA 11.7 and
/// torch 1.13) keeps it under 1 GiB; Hugging Face's anatomy measured 1.3 GB for the kernels with
/// eager loading. HIP loads code objects per module too; its context is of the same order.
constexpr double kContextLow = 512.0 * 1024 * 1024;
constexpr double kContext = 768.0 * 1024 * 1024;
constexpr double kContextHigh = 1.3e9;
/// torch.cuda's caching allocator rounds a large request up to 2 MiB and asks the driver for a
/// segment of that size when no cached block fits (c10/cuda/CUDACachingAllocator.cpp
/// round_size, get_allocation_size: kRoundLarge = 2 MiB above kMinLargeAlloc = 10 MiB).
constexpr double kRoundLarge = 2.0 * 1024 * 1024;

double round_large(double bytes) {
  return std::ceil(bytes / kRoundLarge) * kRoundLarge;
}

/// Bytes one token leaves per decoder layer for the backward pass, tensor by tensor, as autograd
/// saves them in transformers' modeling_llama.py-style layers (Qwen2, Mistral, Gemma and Phi-3
/// follow the same pattern). `ab`: bytes of an activation (2 under bf16/fp16 autocast or a 16-bit
/// model, 4 in fp32). `full`: the layer's weights train (full fine-tuning), so every linear keeps
/// its input; a frozen base layer keeps nothing for its own weight (autograd saves a matmul's
/// input only when the weight needs a gradient: tools/autograd/derivatives.yaml mm/addmm).
struct LayerSaved {
  double per_token = 0;           ///< bytes per token, all tensors
  double attention_per_token = 0; ///< of which eager attention's s-dependent matrices
  std::string detail;
};
LayerSaved layer_saved(const ModelConfig& m, const TrainSettings& s, double ab, bool full,
                       const std::set<std::string>& adapted, bool all_linear) {
  LayerSaved r;
  const auto h = static_cast<double>(m.hidden_size);
  const auto q = static_cast<double>(m.num_heads * m.head_dim);
  const auto kv = static_cast<double>(m.num_kv_heads * m.head_dim);
  const auto I = static_cast<double>(m.intermediate_size);
  const auto a = static_cast<double>(m.num_heads);
  const auto sl = static_cast<double>(s.seq_len.value);
  const bool gpt2 = m.model_type == "gpt2";
  const bool gemma = m.model_type.rfind("gemma", 0) == 0;
  // Norms. LlamaRMSNorm.forward: hidden_states.to(torch.float32) -> pow(2) keeps the fp32 copy
  // (4 B); weight * hidden.to(input_dtype) keeps the normalised tensor when the weight trains.
  // Gemma's RMSNorm keeps the fp32 normalised tensor (x.float() * (1 + weight.float())).
  // GPT-2's LayerNorm (native_layer_norm) keeps its input. Gemma 2 and 3 have four norms.
  const double norms_per_layer =
      (m.model_type == "gemma2" || m.model_type == "gemma3_text") ? 4 : 2;
  double norm = 0;
  if (gpt2)
    norm = ab * h;
  else
    norm = 4 * h + (full ? (gemma ? 4 : ab) * h : 0);
  r.per_token += norms_per_layer * norm;
  // LoRA adapters (peft/tuners/lora/layer.py Linear.forward): x is cast to the adapter's dtype
  // (_cast_input_dtype, fp32), lora_dropout applied (nn.Dropout keeps a 1-byte mask when p > 0;
  // nn.Identity when 0), then lora_A: under autocast F.linear casts its input back to bf16 and
  // keeps that copy (2 B), without autocast it keeps the fp32 tensor (4 B); lora_B keeps lora_A's
  // r-wide output. Each adapted module does this for its own input: q, k and v adapted
  // separately keep the same input three times.
  const bool autocast = s.bf16.value || s.fp16.value;
  const double lora_in = (autocast ? 2 : 4) + (s.lora_dropout.value > 0 ? 1 : 0);
  const auto r_rank = static_cast<double>(s.lora_r.value);
  double lora = 0;
  int adapted_count = 0;
  if (!full) {
    for (const auto& l : layer_linears(m))
      if (all_linear || adapted.contains(l.name)) {
        lora += static_cast<double>(l.count) *
                (lora_in * static_cast<double>(l.in) + (autocast ? 2 : 4) * r_rank);
        ++adapted_count;
      }
  }
  r.per_token += lora;
  // Attention. SDPA's flash and memory-efficient kernels keep Q (after RoPE), K, V, the output
  // and a log-sum-exp per head and row: O(s) (aten/src/ATen/native/transformers
  // _scaled_dot_product_flash_attention / _efficient_attention saved tensors). transformers passes
  // K and V unrepeated when there is no mask (integrations/sdpa_attention.py use_gqa_in_sdpa; an
  // all-ones mask is dropped by masking_utils' causal skip). The o_proj input is the kernel's
  // output viewed back (no copy). A trained q/k/v keeps the norm output once.
  double attn = 0;
  if (full) attn += ab * h; // q/k/v input (shared)
  if (s.attention.value == Attention::eager) {
    // modeling_llama.py eager_attention_forward: repeat_kv materialises K and V at all heads,
    // matmul(Q, K^T) keeps Q and K, softmax(dtype=float32) keeps its fp32 output, .to(bf16)
    // makes the copy matmul(P, V) keeps with V; the output is transposed and made contiguous
    // for o_proj (kept when o_proj trains).
    attn += ab * (q + q + q);
    r.attention_per_token = (4 + ab) * a * sl;
    attn += r.attention_per_token;
    if (full) attn += ab * q;
  } else {
    attn += ab * (q + 2 * kv + q);
  }
  if (m.model_type == "qwen3" || m.model_type == "gemma3_text" || m.model_type == "olmo2")
    attn += (4 + (full ? ab : 0)) * (q + kv); // q_norm/k_norm over the heads
  r.per_token += attn;
  // MLP. Gated (LlamaMLP: down(act(gate(x)) * up(x))): act keeps gate's output, the product keeps
  // act(gate) and up, down keeps the product when it trains; the input is kept when gate/up
  // train. GPT-2 (GPT2MLP with NewGELU): c_fc keeps its input, gelu_new's tanh formula keeps its
  // input, its cube and the tanh output, c_proj keeps the GELU output.
  double mlp = 0;
  if (gpt2) {
    mlp = (full ? ab * h : 0) + 4 * ab * I + (full ? ab * I : 0);
  } else if (m.num_experts > 0) {
    const auto Ie = static_cast<double>(m.model_type == "mixtral" ? m.intermediate_size
                                                                  : m.moe_intermediate_size);
    const auto k = static_cast<double>(m.experts_per_token);
    mlp = (full ? ab * h : 0) + k * (ab * h + 3 * ab * Ie + (full ? ab * Ie : 0)) +
          4 * static_cast<double>(m.num_experts) +
          4 * ab * static_cast<double>(m.shared_expert_intermediate_size);
  } else {
    mlp = (full ? ab * h : 0) + 3 * ab * I + (full ? ab * I : 0);
  }
  r.per_token += mlp;
  r.detail =
      fmt::format("per token and layer: norms {:.0f} B, attention {:.0f} B, MLP {:.0f} B{}",
                  norms_per_layer * norm, attn, mlp,
                  adapted_count > 0 ? fmt::format(", LoRA inputs of {} adapted modules {:.0f} B",
                                                  adapted_count, lora)
                                    : std::string());
  return r;
}

} // namespace

Estimate estimate_memory(const ModelConfig& m, const ParamCount& p, const TrainSettings& s) {
  Estimate e;
  const auto P = static_cast<double>(p.total);
  const double wb = dtype_bytes(s.load_dtype.value);
  const bool mixed = s.bf16.value || s.fp16.value;
  const OptimizerShape opt = optimizer_shape(s.optim.value);
  const std::string dname = s.load_dtype.value;
  const bool full = s.method.value == Method::full;
  const std::string& optim = s.optim.value;
  auto has = [&](std::string_view k) { return optim.find(k) != std::string::npos; };

  // ---- what exists all step long: weights, adapters, optimizer states --------------------------
  double W = 0; // weights (and LoRA adapters' weights)
  std::string w_what;
  std::string w_basis;
  std::string w_source;
  double G = 0;     // gradients once the backward has made them all
  double S = 0;     // optimizer states (made in step 1's optimizer.step())
  double T_opt = 0; // the optimizer step's own temporaries
  std::string opt_basis;
  double A = 0;   // LoRA parameters
  double pb = wb; // bytes of one trained parameter
  // Weights loaded in `load_dtype` as they are.
  const auto dtype_weights = [&](std::string what) {
    W = wb * P;
    w_what = std::move(what);
    w_basis = fmt::format("{} B/param", wb);
    w_source = "transformers modeling_utils.py from_pretrained (dtype)";
  };
  // Bytes of one optimizer state element: the optimizer's own (8-bit states), else those of a
  // trained parameter (the load dtype in full training; fp32 LoRA adapters).
  const double sb = opt.bytes_per_state > 0 ? opt.bytes_per_state : (full ? wb : 4);
  if (full) {
    e.trainable_params = p.total;
    if (wb == 4 && mixed) {
      // fp32 weights under autocast: the autocast weight cache keeps a 16-bit copy of each
      // weight for the forward and backward (aten/src/ATen/autocast_mode.cpp cached_cast).
      W = 6 * P;
      w_what = "weights (fp32) and autocast's 16-bit copies";
      w_basis = "4 B/param + 2 B/param cached cast";
      w_source = "aten/src/ATen/autocast_mode.cpp cached_cast";
    } else {
      dtype_weights(fmt::format("weights ({})", dname));
    }
    G = wb * P;
  } else {
    A = static_cast<double>(lora_params(m, s.lora_r.value, s.lora_targets.value));
    e.trainable_params = static_cast<std::int64_t>(A);
    pb = 4; // PEFT keeps adapters in fp32 (peft/tuners/tuners_utils.py _cast_adapter_dtype)
    if (s.method.value == Method::qlora) {
      const auto lin = static_cast<double>(p.linear);
      // NF4 (4 bit) + double-quantised block constants: 8-bit absmax per 64 weights and an fp32
      // constant per 256 blocks = 0.127 bit/param (QLoRA section 3).
      const double per = 0.5 + 1.0 / 64 + 4.0 / (64.0 * 256.0);
      W = lin * per + (P - lin) * 2;
      w_what = "base weights (linear layers NF4, the rest 16-bit)";
      w_basis = "0.516 B/param of the linear weights (NF4 + double-quantised absmax), 2 B/param "
                "for the rest";
      w_source = "bitsandbytes nn.Linear4bit / QLoRA arXiv:2305.14314 section 3";
    } else if (s.load_in_8bit.value) {
      const auto lin = static_cast<double>(p.linear);
      W = lin + (P - lin) * 2;
      w_what = "base weights (linear layers int8, the rest 16-bit)";
      w_basis = "1 B/param of the linear weights (LLM.int8), 2 B/param for the rest";
      w_source = "bitsandbytes nn.Linear8bitLt";
    } else {
      dtype_weights(fmt::format("base weights ({}, frozen)", dname));
    }
    G = 4 * A;
  }
  const double Ptrain = full ? P : A;
  S = opt.states * sb * Ptrain;
  opt_basis = fmt::format("{} state(s) x {} B{}", opt.states, sb,
                          full ? "/param" : " per adapter parameter");
  // bitsandbytes' paged optimizers keep their states in CUDA/HIP managed memory
  // (bitsandbytes/functional.py get_paged, cudaMallocManaged): on the GPU until the driver pages
  // them out under pressure, outside torch's caching allocator. Counted on the GPU.
  if (has("paged")) opt_basis += "; paged (managed memory, evictable under pressure)";
  // The optimizer step's temporaries (torch/optim/adamw.py): the foreach implementation
  // (TrainingArguments adamw_torch: foreach by default on CUDA/ROCm) computes
  // exp_avg_sq_sqrt = torch._foreach_sqrt(device_exp_avg_sqs) for all parameters at once, a
  // temporary of one state's size (_multi_tensor_adamw); adamw_torch_fused does the update in
  // one kernel without one (_fused_adamw_). Adafactor (transformers optimization.py
  // Adafactor.step) works one parameter at a time in fp32: grad.float(), p.float() and the
  // update, about 12 B per element of the largest parameter. SGD without momentum and the
  // bitsandbytes 8-bit optimizers (block-wise kernels, bitsandbytes/functional.py
  // optimizer_update_8bit_blockwise) have none of note.
  std::string t_basis;
  if (has("fused") || optim == "sgd" || has("8bit") || has("4bit") || has("bnb") || has("paged") ||
      has("lion")) {
    T_opt = 0;
    t_basis = "none: a fused or block-wise kernel updates in place";
  } else if (has("adafactor")) {
    const double largest =
        std::max(static_cast<double>(p.embedding), static_cast<double>(p.lm_head)) *
        (full ? 1.0 : 0.0);
    T_opt = 12 * largest;
    t_basis = "12 B per element of the largest parameter (fp32 grad, weight and update)";
  } else if (opt.states >= 2) {
    T_opt = sb * Ptrain;
    t_basis = "_foreach_sqrt of exp_avg_sq: one state's size";
  }
  if (has("adafactor")) {
    // Adafactor factors the second moment into a row and a column vector (no first moment with
    // TrainingArguments' beta1=None): a few bytes per row and column, not per parameter.
    S = full ? 4.0 *
                   (static_cast<double>(m.hidden_size) +
                    static_cast<double>(std::max(m.intermediate_size, m.vocab_size))) *
                   static_cast<double>(std::max<std::int64_t>(1, m.num_layers)) * 7
             : 4.0 * A * 0.05;
    opt_basis = "factored second moment: a row and a column vector per matrix";
  }

  // ---- the micro-batch: activations, logits -----------------------------------------------------
  const double ab = mixed ? 2 : wb;
  const auto sl = static_cast<double>(s.seq_len.value);
  const auto b = static_cast<double>(s.micro_batch.value);
  const double tokens = b * sl;
  const auto h = static_cast<double>(m.hidden_size);
  const auto L = static_cast<double>(m.num_layers);
  const auto V = static_cast<double>(m.vocab_size);
  const bool all_linear = std::find(s.lora_targets.value.begin(), s.lora_targets.value.end(),
                                    "all-linear") != s.lora_targets.value.end();
  const std::set<std::string> adapted(s.lora_targets.value.begin(), s.lora_targets.value.end());
  const LayerSaved layer = layer_saved(m, s, ab, full, adapted, all_linear);
  // The final norm and the LM head's input (kept when the head trains).
  const double final_norm = (4 * h + (full ? 2 * ab * h : 0)) * tokens;
  double act = 0;
  double recompute = 0;
  std::string act_basis;
  if (s.gradient_checkpointing.value) {
    // torch.utils.checkpoint (transformers 5: use_reentrant=False) keeps each decoder layer's
    // input; the backward recomputes one layer at a time and keeps its tensors until that
    // layer's backward is done (torch/utils/checkpoint.py _checkpoint_without_reentrant).
    act = L * ab * h * tokens + final_norm;
    recompute = layer.per_token * tokens;
    act_basis = fmt::format("checkpointing: L x b x s x h x {} B layer inputs; one layer "
                            "recomputed in the backward ({})",
                            ab, layer.detail);
  } else {
    act = L * layer.per_token * tokens + final_norm;
    act_basis = fmt::format("L x b x s x ({}); the final norm and LM-head input", layer.detail);
  }
  if (s.attention.value == Attention::eager)
    act += ab * b * sl * sl; // the causal mask (masking_utils eager_mask), one for all layers
  e.activations_per_sequence_bytes = to_bytes(b > 0 ? act / b : 0);
  // Logits and loss (transformers loss/loss_utils.py ForCausalLMLoss -> fixed_cross_entropy ->
  // F.cross_entropy = log_softmax + nll_loss). The forward makes the logits in the activation
  // dtype, logits.float() an fp32 copy, log_softmax an fp32 output that it keeps for the
  // backward. The backward of nll_loss makes an fp32 gradient of that size, and
  // log_softmax_backward its fp32 result while both are alive: 3 x 4 B per element at the loss
  // backward, the largest transient of the step (the 16-bit logits are gone by then: Trainer's
  // compute_loss returns the loss only). With final-logit soft-capping (Gemma 2) the tanh output
  // is kept too. torchtune's chunked losses keep the 16-bit output chunks and upcast one of 8
  // chunks at a time.
  const double elems = tokens * V;
  double logits = 0;
  std::string logits_basis;
  if (s.chunked_loss.value) {
    logits = elems * (ab + 12.0 / 8);
    logits_basis = fmt::format("b x s x V x ({} B output chunks + 3 x 4 B for one chunk of 8)", ab);
  } else {
    logits = elems * 12;
    logits_basis = "b x s x V x 3 x 4 B: log_softmax output, its gradient and "
                   "log_softmax_backward's result, fp32";
  }
  if (m.final_logit_softcapping > 0) {
    logits += elems * ab;
    logits_basis += "; + the soft-capping tanh output";
  }
  // Eager attention's backward of one layer: the gradient of the 16-bit probabilities, its
  // fp32 cast and softmax_backward's fp32 result (b x heads x s x s each), on top of all kept
  // activations.
  const double attn_bwd = s.attention.value == Attention::eager
                              ? (ab + 4 + 4) * b * static_cast<double>(m.num_heads) * sl * sl
                              : 0;
  // Tied input and output embeddings (tie_word_embeddings, trained): the LM head's gradient waits
  // in the autograd input buffer while the embedding's backward makes a second one; the buffer
  // adds them out of place (torch/csrc/autograd/input_buffer.cpp InputBuffer::add), so two more
  // V x h gradients exist at the end of the backward.
  const double tied_extra =
      full && m.tie_word_embeddings ? 2 * pb * static_cast<double>(p.embedding) : 0;
  // Gradient accumulation: with more than one micro-batch per step the gradients (.grad) live
  // across the next micro-batches' forward and backward (Trainer.training_step accumulates;
  // zero_grad only after optimizer.step()).
  const double grads_in_forward = s.grad_accum.value > 1 ? G : 0;

  // ---- sharding and offload (ZeRO stages; FSDP) ------------------------------------------------
  const double n = static_cast<double>(std::max<std::int64_t>(1, s.num_processes.value));
  const std::int64_t stage = s.num_processes.value > 1 ? s.shard_stage.value : 0;
  std::string shard_note;
  double gathered = 0;
  auto shard = [&](double& v, bool offloaded, int from_stage) {
    if (offloaded)
      v = 0;
    else if (stage >= from_stage)
      v /= n;
  };
  double Wg = W;
  double Gs = G;
  double Ss = S;
  shard(Ss, s.offload_optimizer.value || s.offload_params.value, 1);
  shard(Gs, s.offload_params.value, 2);
  shard(Wg, s.offload_params.value, 3);
  if (stage >= 3 || s.offload_params.value) {
    const auto layerp =
        static_cast<double>(p.per_layer_attention + p.per_layer_mlp + p.per_layer_norms);
    gathered = 2 * layerp * (s.method.value == Method::qlora ? 0.516 : wb);
  }
  const double T =
      s.offload_optimizer.value || s.offload_params.value ? 0 : T_opt / n * (stage >= 1 ? 1 : n);
  const double Gacc = grads_in_forward > 0 ? Gs : 0;

  // ---- the phases of a step (step 2: the states exist) -----------------------------------------
  struct Phase {
    std::string name;
    double grads, act, recomp, logit, attn, tied, temp;
  };
  const std::vector<Phase> phases = {
      {"the loss backward (step 2)", Gacc, act, 0, logits, 0, 0, 0},
      {"the backward of the last layer (step 2)", Gacc, act, recompute, 0, attn_bwd, 0, 0},
      {"the end of the backward (step 2)", Gs, 0, 0, 0, 0, tied_extra, 0},
      {"the optimizer step", Gs, 0, 0, 0, 0, 0, T},
  };
  const Phase* peak = &phases.front();
  double peak_bytes = -1;
  for (const auto& ph : phases) {
    const double v =
        Wg + gathered + Ss + ph.grads + ph.act + ph.recomp + ph.logit + ph.attn + ph.tied + ph.temp;
    if (v > peak_bytes) {
      peak_bytes = v;
      peak = &ph;
    }
  }
  e.peak_phase = peak->name;
  auto add = [&](std::string key, std::string what, double bytes, std::string basis,
                 std::string source) {
    e.items.push_back(Item{std::move(key), std::move(what), to_bytes(bytes), std::move(basis),
                           std::move(source)});
  };
  auto at_peak = [&](double v, double full_size) {
    return v == full_size ? std::string()
           : v == 0       ? fmt::format("not alive at the peak ({:.2f} GiB when alive); ",
                                        full_size / (1024.0 * 1024 * 1024))
                          : std::string();
  };
  auto shard_text = [&](double orig, double now) {
    if (orig > 0 && now == 0) return std::string("; offloaded: 0 on the GPU");
    if (now < orig)
      return fmt::format("; 1/{} shard (ZeRO stage {})", s.num_processes.value, stage);
    return std::string();
  };
  add("weights", w_what, Wg, w_basis + shard_text(W, Wg), w_source);
  if (gathered > 0)
    add("gathered", "two layers' weights gathered at a time", gathered,
        "stage 3 / offload: a layer's full weights during its forward and backward, and the next "
        "prefetched",
        "deepspeed/runtime/zero/partitioned_param_coordinator.py; torch FSDP");
  const std::string gkey = full ? "gradients" : "adapters";
  const std::string gwhat =
      full ? fmt::format("gradients ({})", wb == 4 ? "float32" : dname)
           : fmt::format("LoRA adapters r={} (fp32) and their gradients", s.lora_r.value);
  {
    const double g_at = peak->grads;
    const double adapters_w = full ? 0 : 4 * A;
    add(gkey, gwhat, adapters_w + g_at,
        (full        ? at_peak(g_at, Gs)
         : g_at == 0 ? std::string("gradients not alive at the peak; ")
                     : std::string()) +
            (full ? fmt::format(
                        "{} B/param; alive from the backward to zero_grad(set_to_none){}", pb,
                        s.grad_accum.value > 1 ? ", across accumulated micro-batches" : "") +
                        shard_text(G, Gs)
                  : fmt::format("r x (in+out) per adapted module; 4 B weight + 4 B gradient when "
                                "alive{}",
                                shard_text(G, Gs))),
        full ? "torch/optim/optimizer.py zero_grad(set_to_none=True); transformers Trainer "
               "training_step"
             : "peft/tuners/lora/layer.py LoraLayer.update_layer (lora_A, lora_B)");
  }
  add("optimizer", fmt::format("optimizer states ({}{})", optim, full ? "" : ", adapters only"), Ss,
      opt_basis + "; made in step 1's optimizer.step(), so the peak is in step 2" +
          shard_text(S, Ss),
      has("8bit")        ? "bitsandbytes optim/optimizer.py Optimizer8bit (block-wise states)"
      : has("adafactor") ? "transformers optimization.py Adafactor._get_options/step"
                         : "torch/optim/adamw.py AdamW._init_group (exp_avg, exp_avg_sq)");
  if (T_opt > 0 || peak->temp > 0)
    add("optimizer_step", "optimizer step temporaries", peak->temp,
        at_peak(peak->temp, T) + t_basis,
        has("adafactor") ? "transformers optimization.py Adafactor.step"
                         : "torch/optim/adamw.py _multi_tensor_adamw");
  add("activations",
      fmt::format("activations (micro-batch {} x {} tokens)", s.micro_batch.value, s.seq_len.value),
      peak->act + peak->recomp, at_peak(peak->act, act) + act_basis,
      "transformers models/llama/modeling_llama.py (LlamaDecoderLayer); autograd saved tensors");
  add("logits",
      std::string(s.chunked_loss.value ? "logits and loss, one chunk of 8 upcast at a time"
                                       : "logits and loss: fp32 log-softmax, its backward"),
      peak->logit, at_peak(peak->logit, logits) + logits_basis,
      s.chunked_loss.value ? "torchtune modules/loss/ce_chunked_output_loss.py"
                           : "transformers loss/loss_utils.py ForCausalLMLoss; aten "
                             "log_softmax_backward_data");
  if (attn_bwd > 0)
    add("attention_backward", "eager attention backward of one layer", peak->attn,
        at_peak(peak->attn, attn_bwd) +
            "b x heads x s x s x (2 + 4 + 4) B: probability gradient, fp32 cast, "
            "softmax_backward result",
        "transformers modeling_llama.py eager_attention_forward (softmax dtype=float32)");
  if (tied_extra > 0)
    add("tied_embedding_grads", "tied embedding gradients summed", peak->tied,
        at_peak(peak->tied, tied_extra) +
            "2 x V x h: the embedding's gradient and the out-of-place sum with the LM head's",
        "torch/csrc/autograd/input_buffer.cpp InputBuffer::add");
  const double allocated = peak_bytes;
  e.allocated_bytes = to_bytes(allocated);

  // ---- the caching allocator's reserve and the context ----------------------------------------
  // Freed blocks stay cached (reserved) for reuse; a request no cached block fits gets a new
  // segment (c10/cuda/CUDACachingAllocator.cpp malloc -> get_free_block, best fit, else
  // alloc_block). The loss path's fp32 blocks (b x s x V x 4 B) are the step's largest requests:
  // over a step it allocates the 16-bit logits, their fp32 copy, the log-softmax output, the
  // nll gradient and log_softmax_backward's result, at most three fp32 ones at a time, and the
  // last fp32 request finds only the freed 16-bit block (half its size): one block of the
  // largest transient is reserved beyond what is allocated. With checkpointing in a full
  // fine-tune the gradients are made while the only large free blocks are the loss path's (the
  // kept activations are layer inputs, the recomputed ones are reused layer after layer); best
  // fit fills a split block's remainder before it splits another, and the optimizer states made
  // in step 1 stay where the gradients were, so the next step's loss path needs a new segment for
  // about one more block (at most the gradients' size). Before it reports out of memory the
  // allocator frees every unsplit cached block and retries (release_cached_blocks): the low end of
  // the band.
  const double block = s.chunked_loss.value ? elems * 4 / 8 : elems * 4;
  double reserve = round_large(block);
  std::string reserve_basis =
      fmt::format("one block of the largest transient ({:.2f} GiB: b x s x V x 4 B{})",
                  block / (1024.0 * 1024 * 1024), s.chunked_loss.value ? " / 8" : "");
  if (s.gradient_checkpointing.value && full) {
    const double pinned = std::min(Gs, block);
    reserve += round_large(pinned);
    reserve_basis += fmt::format(" + {:.2f} GiB of loss blocks split by gradients made during the "
                                 "checkpointed backward (min(gradients, one block))",
                                 pinned / (1024.0 * 1024 * 1024));
  }
  if (attn_bwd > 0) {
    const double attn_block = 4 * b * static_cast<double>(m.num_heads) * sl * sl;
    if (attn_block > block) {
      reserve += round_large(attn_block - block);
      reserve_basis += "; eager attention's fp32 probabilities are the larger block";
    }
  }
  add("allocator_reserve", "caching allocator reserve beyond allocated", reserve, reserve_basis,
      "c10/cuda/CUDACachingAllocator.cpp (get_free_block best fit, alloc_block, "
      "release_cached_blocks)");
  add("runtime", "GPU context (HIP or CUDA), kernels, libraries", kContext,
      "outside the caching allocator: 0.5 to 1.3 GB; lazy module loading keeps it under 1 GiB",
      "CUDA_MODULE_LOADING=LAZY (CUDA 11.7+); HIP code objects; HF model_memory_anatomy.md");
  for (const auto& it : e.items)
    e.required_bytes += it.bytes;
  e.low_bytes = to_bytes(allocated + kContextLow);
  // High: a padded batch makes transformers pass a mask to SDPA, which then gets K and V repeated
  // to all heads (use_gqa_in_sdpa is false with a mask), and the allocator may need one more
  // block of the largest transient.
  double high_extra = round_large(block) + (kContextHigh - kContext);
  if (s.attention.value != Attention::eager && m.num_kv_heads < m.num_heads)
    high_extra += (s.gradient_checkpointing.value ? 1 : L) * 2 * ab * tokens *
                  static_cast<double>((m.num_heads - m.num_kv_heads) * m.head_dim);
  e.high_bytes = e.required_bytes + to_bytes(high_extra);
  if (!opt.known)
    e.items.back().basis +=
        fmt::format("; optimizer '{}' not known, counted as AdamW", s.optim.value);
  return e;
}

} // namespace halo::plan

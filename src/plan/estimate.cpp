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
#include <halo/plan_allocator.hpp>

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

/// The GPU context outside the caching allocator (CUDA or HIP context, loaded kernels, library
/// handles): what torch.cuda.mem_get_info() shows in use beyond memory_reserved(). Per platform:
///   - CUDA: measured, 804,061,184 B (767 MiB) on an NVIDIA H200 with CUDA 13.0 and torch 2.11
///     (`non_allocator_bytes` in tests/plan/plantruth/measured/h200-2026-11-27.jsonl; 785 to
///     808 MB in the expandable-segments run): kContext. Lazy module loading
///     (CUDA_MODULE_LOADING=LAZY, the default since CUDA 11.7 and torch 1.13) keeps it under
///     1 GiB; Hugging Face's model_memory_anatomy.md measured 1.3 GB with eager loading:
///     kContextHigh.
///   - the smallest: "~300MB" for a context with lazy loading, before a step's kernels and
///     library handles load (NVIDIA's ptrblck, pytorch/pytorch#107667, 2023-08-28): kContextLow.
///   - ROCm (HIP, discrete or APU): not measured. HIP loads code objects per module too, and on
///     an APU the context comes from the same GTT pool as the tensors; vLLM measured ROCm's
///     initialisation overhead larger than CUDA's (vllm-project/vllm#43236). The band keeps the
///     CUDA range (kContextLow .. kContextHigh) around it, and the report says it is not measured.
constexpr double kContextLow = 300e6;
constexpr double kContext = 768.0 * 1024 * 1024;
constexpr double kContextHigh = 1.3e9;

/// Bytes one token leaves per decoder layer for the backward pass, tensor by tensor, as autograd
/// saves them in transformers' modeling_llama.py-style layers, with what each audited
/// model_type's forward keeps beyond them (docs/plan.md, "Saved tensors by architecture", gives
/// the table per model_type with its modeling-file lines). `ab`: bytes of an activation (2 under
/// bf16/fp16 autocast or a 16-bit model, 4 in fp32). `full`: the layer's weights train (full
/// fine-tuning), so every linear keeps its input; a frozen base layer keeps nothing for its own
/// weight (autograd saves a matmul's input only when the weight needs a gradient:
/// tools/autograd/derivatives.yaml mm/addmm).
struct LayerSaved {
  double per_token = 0;           ///< bytes per token, all tensors
  double attention_per_token = 0; ///< of which eager attention's s-dependent matrices
  std::string detail;
  /// The same bytes per token, tensor by tensor in the order the forward allocates them (the
  /// allocator simulation replays them: each is one request of b x s x bytes).
  std::vector<double> tensors;
  /// Eager attention: the index in `tensors` of the fp32 probabilities (the 16-bit copy follows);
  /// -1 with SDPA.
  int probs_at = -1;
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
  const std::string& t = m.model_type;
  const bool gpt2 = t == "gpt2";
  const bool gemma = t.rfind("gemma", 0) == 0;
  const bool autocast = s.bf16.value || s.fp16.value;
  // Norms. LlamaRMSNorm.forward: hidden_states.to(torch.float32) -> pow(2) keeps the fp32 copy
  // (4 B); weight * hidden.to(input_dtype) keeps the normalised tensor when the weight trains.
  // Norms that multiply the weight in fp32 keep the fp32 normalised tensor instead:
  // GemmaRMSNorm (modeling_gemma.py: output * (1.0 + self.weight.float()), then type_as(x);
  // Gemma 2 and Gemma 3 inherit it) and Olmo2RMSNorm (modeling_olmo2.py:
  // (self.weight * hidden_states).to(input_dtype), hidden_states fp32). Gemma 2 and 3 have four
  // norms per layer (input, post-attention, pre- and post-feedforward); Olmo 2 two (post-attention
  // and post-feedforward, none before).
  // GPT-2's LayerNorm (native_layer_norm) keeps its input and fp32 mean and rstd per row
  // (derivatives.yaml native_layer_norm: input, mean, rstd); under autocast layer_norm runs in
  // fp32 (aten/src/ATen/autocast_mode.cpp fp32 list), so the kept input is the fp32 cast.
  const bool fp32_weight_mul = gemma || t == "olmo2";
  const double norms_per_layer = (t == "gemma2" || t == "gemma3_text") ? 4 : 2;
  double norm = 0;
  std::vector<double> norm_tensors;
  if (gpt2) {
    norm = (autocast ? 4 : ab) * h + 8;
    norm_tensors = {norm};
  } else {
    norm = 4 * h + (full ? (fp32_weight_mul ? 4 : ab) * h : 0);
    norm_tensors = {4 * h};
    if (full) norm_tensors.push_back((fp32_weight_mul ? 4 : ab) * h);
  }
  r.per_token += norms_per_layer * norm;
  const auto keep_norm = [&] {
    r.tensors.insert(r.tensors.end(), norm_tensors.begin(), norm_tensors.end());
  };
  keep_norm();
  // LoRA adapters (peft/tuners/lora/layer.py Linear.forward): x is cast to the adapter's dtype
  // (_cast_input_dtype, fp32), lora_dropout applied (nn.Dropout keeps a 1-byte mask when p > 0;
  // nn.Identity when 0), then lora_A: under autocast F.linear casts its input back to bf16 and
  // keeps that copy (2 B), without autocast it keeps the fp32 tensor (4 B); lora_B keeps lora_A's
  // r-wide output. Each adapted module does this for its own input: q, k and v adapted
  // separately keep the same input three times.
  const double lora_in = (autocast ? 2 : 4) + (s.lora_dropout.value > 0 ? 1 : 0);
  const auto r_rank = static_cast<double>(s.lora_r.value);
  double lora = 0;
  int adapted_count = 0;
  std::vector<double> lora_tensors;
  if (!full) {
    for (const auto& l : layer_linears(m))
      if (all_linear || adapted.contains(l.name)) {
        lora += static_cast<double>(l.count) *
                (lora_in * static_cast<double>(l.in) + (autocast ? 2 : 4) * r_rank);
        ++adapted_count;
        // (a layer's experts as one request each: their sum)
        const auto c = static_cast<double>(l.count);
        if (s.lora_dropout.value > 0) lora_tensors.push_back(c * static_cast<double>(l.in));
        lora_tensors.push_back(c * (autocast ? 2 : 4) * static_cast<double>(l.in));
        lora_tensors.push_back(c * (autocast ? 2 : 4) * r_rank);
      }
  }
  r.per_token += lora;
  r.tensors.insert(r.tensors.end(), lora_tensors.begin(), lora_tensors.end());
  // Attention. SDPA's flash and memory-efficient kernels keep Q (after RoPE), K, V, the output
  // and a log-sum-exp per head and row: O(s) (aten/src/ATen/native/transformers
  // _scaled_dot_product_flash_attention / _efficient_attention saved tensors). transformers passes
  // K and V unrepeated when there is no mask (integrations/sdpa_attention.py use_gqa_in_sdpa; an
  // all-ones mask is dropped by masking_utils' causal skip). The o_proj input is the kernel's
  // output viewed back (no copy). A trained q/k/v keeps the norm output once.
  double attn = 0;
  const auto keep = [&](double v) {
    attn += v;
    r.tensors.push_back(v);
  };
  // Phi-3's fused projection (modeling_phi3.py Phi3Attention.forward: qkv = self.qkv_proj(...);
  // query/key/value_states = qkv[..., slices]): RoPE makes new Q and K, but V stays a view of
  // qkv, so whatever keeps V keeps all of qkv, b x s x (q + 2 kv) x ab: SDPA (V passed as is)
  // and eager when repeat_kv returns V itself (num_key_value_groups == 1).
  const double qkv = ab * (q + 2 * kv);
  const bool phi3 = t == "phi3";
  if (full) keep(ab * h); // q/k/v input (shared)
  if (s.attention.value == Attention::eager) {
    // modeling_llama.py eager_attention_forward: repeat_kv materialises K and V at all heads,
    // matmul(Q, K^T) keeps Q and K, softmax(dtype=float32) keeps its fp32 output, .to(bf16)
    // makes the copy matmul(P, V) keeps with V; the output is transposed and made contiguous
    // for o_proj (kept when o_proj trains).
    keep(ab * q);
    keep(ab * q);
    keep(phi3 && m.num_kv_heads == m.num_heads ? qkv : ab * q);
    // Soft-capping (modeling_gemma2.py eager_attention_forward: attn_weights / softcap,
    // torch.tanh, * softcap): tanh keeps its output (derivatives.yaml tanh: result), b x heads x
    // s x s in the scores' dtype; the divisions and products by a Python float keep nothing.
    double capped = 0;
    if (m.attn_logit_softcapping > 0) {
      capped = ab * a * sl;
      keep(capped);
    }
    // The probabilities. softmax(dtype=float32) keeps its fp32 output and .to(query.dtype) makes
    // the 16-bit copy matmul(P, V) keeps. GPT-2 (modeling_gpt2.py eager_attention_forward:
    // softmax(attn_weights, dim=-1), then .type(value.dtype)) has no dtype argument: under
    // autocast softmax runs in fp32 (autocast fp32 list) and the cast makes the copy; without
    // autocast it keeps one tensor in the model's dtype. Dropout with p > 0
    // (nn.functional.dropout -> native_dropout) keeps a 1-byte mask, and matmul(P, V) keeps
    // the dropped copy instead of the cast (which is then freed); p == 0 returns its input
    // (aten/src/ATen/native/Dropout.cpp).
    const double probs = gpt2 && !autocast ? ab : 4;
    const double copy = gpt2 && !autocast && m.attention_dropout <= 0 ? 0 : ab;
    const double mask = m.attention_dropout > 0 ? 1 : 0;
    r.attention_per_token = capped + (probs + copy + mask) * a * sl;
    r.probs_at = static_cast<int>(r.tensors.size());
    keep(probs * a * sl);
    if (copy > 0) keep(copy * a * sl);
    if (mask > 0) keep(mask * a * sl);
    if (full) keep(ab * q);
  } else {
    keep(ab * q);
    keep(ab * kv);
    keep(phi3 ? qkv : ab * kv);
    keep(ab * q);
  }
  // q_norm/k_norm (RMSNorms over the projections' outputs before RoPE): Qwen3 and Qwen3-MoE
  // (modeling_qwen3.py / modeling_qwen3_moe.py Qwen3Attention: q_norm(q_proj(x).view(...)),
  // over head_dim, Llama-style), Gemma 3 (Gemma3RMSNorm, fp32 weight multiply), Olmo 2
  // (Olmo2RMSNorm over the whole q and k width, fp32 weight multiply). Each keeps the fp32
  // copy of its input and, when its weight trains, the normalised tensor.
  if (t == "qwen3" || t == "qwen3_moe" || t == "gemma3_text" || t == "olmo2")
    keep((4 + (full ? (fp32_weight_mul ? 4 : ab) : 0)) * (q + kv));
  // Residual dropout after the attention output (GPT-2 attn.resid_dropout, Phi-3
  // resid_attn_dropout) with p > 0: the 1-byte mask.
  if (m.resid_dropout > 0) keep(h);
  r.per_token += attn;
  keep_norm();
  // MLP. Gated (LlamaMLP: down(act(gate(x)) * up(x))): act keeps gate's output, the product keeps
  // act(gate) and up, down keeps the product when it trains; the input is kept when gate/up
  // train. Phi-3's gate_up_proj (modeling_phi3.py Phi3MLP.forward: chunk(2)) keeps the same
  // bytes: gate and up are the two halves of one output. GPT-2 (GPT2MLP with gelu_new,
  // activations.py NewGELUActivation: 0.5 * x * (1 + tanh(c * (x + 0.044715 * pow(x, 3))))):
  // c_fc keeps its input; pow keeps x, tanh its output, the last product 0.5 x and 1 + tanh;
  // under autocast pow runs in fp32 (autocast fp32 list), so x, tanh and 1 + tanh are kept in
  // fp32 and 0.5 x in 16 bits; c_proj keeps the GELU output (cast to 16 bits under autocast).
  double mlp = 0;
  double moe_route = 0;
  double moe_router = 0;
  double moe_shared = 0;
  if (gpt2) {
    mlp = (full ? ab * h : 0) + (autocast ? 12 + ab : 4 * ab) * I + (full ? ab * I : 0);
  } else if (m.num_experts > 0) {
    // Mixtral, Qwen2-MoE, Qwen3-MoE (modeling_mixtral.py MixtralSparseMoeBlock.forward and the
    // same block in modeling_qwen2_moe.py / modeling_qwen3_moe.py):
    //   - the router: gate(x) keeps x when it trains; softmax(router_logits, dtype=float) keeps
    //     its fp32 output (E x 4 B); topk keeps its int64 indices (k x 8 B);
    //   - per routed token and expert (k per token): torch.where gives two int64 indices that
    //     hidden_states[top_x], routing_weights[top_x, idx] and index_add_ keep (16 B); the
    //     gathered input (a new tensor) kept by w1/w3 when they train; w1's and w3's outputs
    //     (act and the product keep them), act's output, the product kept by w2 when it trains;
    //     w2's output and the gathered routing weight, which multiply and keep each other;
    //   - Qwen2-MoE's shared expert (Qwen2MoeSparseMoeBlock: shared_expert(x) *
    //     sigmoid(shared_expert_gate(x))): a gated MLP of shared_expert_intermediate_size, the
    //     sigmoid's one-wide output and the shared expert's output, kept by the product.
    const auto Ie =
        static_cast<double>(t == "mixtral" ? m.intermediate_size : m.moe_intermediate_size);
    const auto k = static_cast<double>(m.experts_per_token);
    const auto Is = static_cast<double>(m.shared_expert_intermediate_size);
    moe_router = (full ? ab * h : 0) + 4 * static_cast<double>(m.num_experts) + 8 * k;
    moe_route = 16 + (full ? ab * h : 0) + 3 * ab * Ie + (full ? ab * Ie : 0) + ab * h + ab;
    moe_shared = Is > 0 ? 3 * ab * Is + (full ? ab * Is : 0) + ab * h + ab : 0;
    mlp = moe_router + k * moe_route + moe_shared;
  } else {
    mlp = (full ? ab * h : 0) + 3 * ab * I + (full ? ab * I : 0);
  }
  if (m.resid_dropout > 0) mlp += h; // the MLP output's residual dropout mask (GPT-2, Phi-3)
  r.per_token += mlp;
  // The MLP's kept tensors as separate requests: its input (when gate/up train), then the
  // I-wide ones (gate output, act(gate), up, and the product when down trains); Phi-3's gate and
  // up as the one 2I-wide output they are; MoE: the router's, then each route's as one request
  // per routed token (k of them), the shared expert's.
  {
    double rest = mlp;
    if (full && !gpt2 && m.num_experts == 0) {
      r.tensors.push_back(ab * h);
      rest -= ab * h;
    }
    if (phi3) {
      r.tensors.push_back(2 * ab * I);
      rest -= 2 * ab * I;
    }
    if (m.num_experts > 0) {
      r.tensors.push_back(moe_router);
      rest -= moe_router;
      for (std::int64_t i = 0; i < m.experts_per_token; ++i) {
        r.tensors.push_back(moe_route);
        rest -= moe_route;
      }
    }
    const double width = gpt2 ? I : (m.num_experts > 0 ? 0 : I);
    if (width > 0) {
      while (rest > ab * width * 0.5) {
        r.tensors.push_back(ab * width);
        rest -= ab * width;
      }
    }
    if (rest > 0.5) r.tensors.push_back(rest);
  }
  if (norms_per_layer == 4) { // Gemma 2/3's post-attention and post-feedforward norms
    keep_norm();
    keep_norm();
  }
  {
    double listed = 0;
    for (const double v : r.tensors)
      listed += v;
    if (r.per_token - listed > 0.5) r.tensors.push_back(r.per_token - listed);
  }
  r.detail =
      fmt::format("per token and layer: norms {:.0f} B, attention {:.0f} B, MLP {:.0f} B{}",
                  norms_per_layer * norm, attn, mlp,
                  adapted_count > 0 ? fmt::format(", LoRA inputs of {} adapted modules {:.0f} B",
                                                  adapted_count, lora)
                                    : std::string());
  return r;
}

/// What the allocator simulation needs to replay a training step (the same quantities the
/// estimate's items use).
struct StepShape {
  double tokens = 0;            ///< b x s
  double ab = 2;                ///< bytes of an activation
  double wb = 2;                ///< bytes of a weight element as loaded
  double gb = 2;                ///< bytes of a gradient / optimizer-state element
  double state_b = 2;           ///< bytes of an optimizer state element
  int states = 2;               ///< optimizer states per trained element
  bool states_on_device = true; ///< false: paged (managed memory, outside the allocator)
  bool foreach_temp = false;    ///< _multi_tensor_adamw's _foreach_sqrt temporaries
  bool full = true;             ///< the base weights train
  bool checkpointing = false;
  bool chunked_loss = false;
  bool tied = false; ///< tied embeddings that train
  double vocab = 0;
  double hidden = 0;
  double rope = 0; ///< head_dim (cos and sin per token)
  std::int64_t grad_accum = 1;
  double scores = 0;                 ///< eager attention's b x heads x s x s elements, 0 with SDPA
  std::vector<double> layer_weights; ///< one decoder layer's parameter tensors, module order
  std::vector<double> layer_trainable; ///< the trained ones (full: the same; LoRA: adapters)
  std::vector<double> other_weights;   ///< embedding, final norm, LM head (module order)
  std::vector<double> other_trainable;
  std::int64_t layers = 0;
  std::vector<double> saved; ///< LayerSaved::tensors (bytes per token)
  int probs_at = -1;         ///< LayerSaved::probs_at
  /// The step's largest single request: the loss path's fp32 block, eager attention's fp32
  /// scores, or the largest kept tensor, weight or gradient.
  [[nodiscard]] double largest_request() const {
    double v = tokens * vocab * 4 / (chunked_loss ? 8 : 1);
    v = std::max(v, 4 * scores);
    for (const double t : saved)
      v = std::max(v, t * tokens);
    for (const double w : other_weights)
      v = std::max(v, w);
    return std::ceil(v / (2.0 * 1024 * 1024)) *
           (2.0 * 1024 * 1024); // kRoundLarge, get_allocation_size
  }
  bool autocast = false; ///< bf16/fp16 autocast (Trainer's bf16=True / fp16=True)
};

/// Replays three training steps (Trainer.training_step: forward, loss, backward, clip, optimizer
/// step, zero_grad(set_to_none=True)) through the caching allocator simulation and returns its
/// peak reserved and peak allocated bytes. The sequence, request by request:
///   - the weights, as nn.Module.to / from_config create them, one tensor at a time;
///   - the forward: per decoder layer the tensors autograd keeps (LayerSaved::tensors), and the
///     residual stream's two new b x s x h tensors, the previous one freed; with checkpointing
///     the layer's tensors are freed at its end and only its input stays
///     (torch/utils/checkpoint.py _checkpoint_without_reentrant);
///   - the loss (loss_utils.py ForCausalLMLoss): 16-bit logits, logits.float(), log_softmax's
///     output (kept); the fp32 copy and the 16-bit logits are freed when compute_loss returns;
///     its backward: nll_loss_backward's fp32 gradient, log_softmax_backward's fp32 result, the
///     16-bit gradient of .float(); with chunked loss one chunk of 8 at a time;
///   - the backward, layer by layer from the last: (with checkpointing the layer's tensors
///     recomputed first) a gradient of each kept tensor's size made as the one before it is freed,
///     the kept tensor freed, each trained weight's gradient made (kept until zero_grad);
///   - the optimizer step: in step 1 the states per parameter (AdamW._init_group: exp_avg,
///     exp_avg_sq), the foreach temporaries (one per parameter, freed together), zero_grad frees
///     the gradients.
struct SimResult {
  double peak_reserved = 0;
  double peak_allocated = 0;
};
SimResult simulate_step(const StepShape& k, bool expandable) {
  CachingAllocatorSim a(expandable);
  const auto req = [&](double bytes) {
    return a.malloc(static_cast<std::int64_t>(std::llround(bytes)));
  };
  const double T = k.tokens;
  // Weights, then the LoRA adapters (module order: embedding, layers, norm, head).
  if (!k.other_weights.empty()) req(k.other_weights.front());
  for (std::int64_t l = 0; l < k.layers; ++l)
    for (const double w : k.layer_weights)
      req(w);
  for (std::size_t i = 1; i < k.other_weights.size(); ++i)
    req(k.other_weights[i]);
  if (!k.full)
    for (std::int64_t l = 0; l < k.layers; ++l)
      for (const double w : k.layer_trainable)
        req(w);
  std::vector<std::int64_t> grads;  // alive until zero_grad
  std::vector<std::int64_t> states; // alive from step 1's optimizer.step()
  const double hb = k.ab * k.hidden * T;
  for (int step = 1; step <= 3; ++step) {
    // Micro-steps after the first make the same requests (gradients accumulate in place), and
    // everything a micro-step allocates it frees, so one that leaves the cache as the one before
    // it left it is followed by identical ones with identical peaks: the rest are skipped. With
    // gradient_accumulation_steps in the thousands, the replay stays a few micro-steps long.
    std::vector<std::int64_t> before_micro;
    for (std::int64_t micro = 0; micro < k.grad_accum; ++micro) {
      if (micro >= 2) {
        std::vector<std::int64_t> now = a.cache_state();
        if (now == before_micro) break;
        before_micro = std::move(now);
      } else if (micro == 1) {
        before_micro = a.cache_state();
      }
      // Trainer moves input_ids, attention_mask and labels (int64) to the device.
      std::vector<std::int64_t> inputs = {req(8 * T), req(8 * T), req(8 * T)};
      const std::int64_t cos = req(k.ab * k.rope * T);
      const std::int64_t sin = req(k.ab * k.rope * T);
      std::int64_t residual = req(hb); // the embedding's output
      std::vector<std::vector<std::int64_t>> kept(static_cast<std::size_t>(k.layers));
      std::vector<std::int64_t> layer_inputs;
      for (std::int64_t l = 0; l < k.layers; ++l) {
        auto& mine = kept[static_cast<std::size_t>(l)];
        for (std::size_t i = 0; i < k.saved.size(); ++i) {
          if (static_cast<int>(i) == k.probs_at) {
            // eager_attention_forward: matmul(Q, K^T), * scaling, + causal mask (16-bit, not
            // kept), then softmax(dtype=float32), whose output is kept. Under autocast softmax
            // is on the fp32 cast list (aten/src/ATen/autocast_mode.cpp; the AMP docs' "CUDA
            // ops that can autocast to float32"), so the masked scores are first copied to fp32.
            const std::int64_t qk = req(k.ab * k.scores);
            const std::int64_t scaled = req(k.ab * k.scores);
            a.free(qk);
            const std::int64_t masked = req(k.ab * k.scores);
            a.free(scaled);
            const std::int64_t masked32 = k.autocast ? req(4 * k.scores) : -1;
            mine.push_back(req(k.saved[i] * T));
            a.free(masked32);
            if (i + 1 < k.saved.size()) mine.push_back(req(k.saved[++i] * T)); // the 16-bit copy
            a.free(masked);
            continue;
          }
          mine.push_back(req(k.saved[i] * T));
        }
        const std::int64_t mid = req(hb);
        if (!k.checkpointing)
          a.free(residual);
        else
          layer_inputs.push_back(residual);
        const std::int64_t out = req(hb);
        a.free(mid);
        residual = out;
        if (k.checkpointing) {
          for (const std::int64_t h : mine)
            a.free(h);
          mine.clear();
        }
      }
      // The final norm's fp32 copy and its output (the LM head's input).
      const std::int64_t fn32 = req(4 * k.hidden * T);
      const std::int64_t fn = req(hb);
      a.free(residual);
      const double e4 = T * k.vocab * 4 / (k.chunked_loss ? 8 : 1);
      const double e2 = T * k.vocab * k.ab;
      const std::int64_t logits = req(e2);
      std::int64_t lsm = -1;
      if (k.chunked_loss) {
        lsm = req(e4);
      } else {
        const std::int64_t f32 = req(e4);
        lsm = req(e4);
        a.free(f32);
      }
      if (!k.chunked_loss) a.free(logits);
      // loss.backward()
      const std::int64_t g_nll = req(e4);
      const std::int64_t g_lsm = req(e4);
      a.free(g_nll);
      a.free(lsm);
      const std::int64_t g_logits = k.chunked_loss ? -1 : req(e2);
      a.free(g_lsm);
      if (k.chunked_loss) a.free(logits);
      const auto make_grad = [&](double bytes) {
        if (micro == 0) {
          grads.push_back(req(bytes));
        } else { // AccumulateGrad adds a new gradient in place and frees it
          const std::int64_t g = req(bytes);
          a.free(g);
        }
      };
      std::int64_t g_hidden = req(hb); // the LM head's input gradient
      a.free(g_logits);
      for (std::size_t i = k.other_trainable.size(); i-- > 1;)
        make_grad(k.other_trainable[i]);
      a.free(fn);
      a.free(fn32);
      for (std::int64_t l = k.layers; l-- > 0;) {
        auto& mine = kept[static_cast<std::size_t>(l)];
        if (k.checkpointing) { // recompute the layer's forward
          for (const double t : k.saved)
            mine.push_back(req(t * T));
        }
        std::int64_t g_prev = -1;
        std::size_t w = k.layer_trainable.size();
        for (std::size_t i = mine.size(); i-- > 0;) {
          if (static_cast<int>(i) == k.probs_at) {
            // eager attention's backward: ToCopyBackward makes the fp32 gradient of the
            // probabilities, _softmax_backward_data its result (fp32 under autocast, whose cast
            // to fp32 is undone by one more ToCopyBackward; else in the scores' dtype), the
            // scaling's backward one more 16-bit copy.
            const std::int64_t g32 = req(4 * k.scores);
            a.free(g_prev);
            std::int64_t r = req((k.autocast ? 4 : k.ab) * k.scores);
            a.free(g32);
            a.free(mine[i]);
            if (k.autocast) {
              const std::int64_t r16 = req(k.ab * k.scores);
              a.free(r);
              r = r16;
            }
            g_prev = req(k.ab * k.scores);
            a.free(r);
            continue;
          }
          const std::int64_t g = req(k.saved[i] * T);
          a.free(g_prev);
          a.free(mine[i]);
          g_prev = g;
          // the trained weights' gradients, spread over the layer's backward
          if (w > 0 && (i * k.layer_trainable.size()) / std::max<std::size_t>(1, mine.size()) < w) {
            --w;
            make_grad(k.layer_trainable[w]);
          }
        }
        while (w > 0)
          make_grad(k.layer_trainable[--w]);
        a.free(g_prev);
        mine.clear();
        const std::int64_t g_next = req(hb);
        a.free(g_hidden);
        g_hidden = g_next;
        if (k.checkpointing) {
          a.free(layer_inputs.back());
          layer_inputs.pop_back();
        }
      }
      if (!k.other_trainable.empty()) {
        // The embedding's gradient; tied to the LM head, the two are summed out of place
        // (InputBuffer::add) and the parts freed.
        if (k.tied) {
          const std::int64_t e = req(k.other_trainable[0]);
          const std::int64_t sum = req(k.other_trainable[0]);
          a.free(e);
          if (micro == 0)
            grads.push_back(sum);
          else
            a.free(sum);
        } else {
          make_grad(k.other_trainable[0]);
        }
      }
      a.free(g_hidden);
      a.free(cos);
      a.free(sin);
      for (const std::int64_t h : inputs)
        a.free(h);
    }
    // optimizer.step()
    if (step == 1 && k.states_on_device && k.states > 0) {
      const auto init = [&](double n) {
        for (int st = 0; st < k.states; ++st)
          states.push_back(req(n / k.gb * k.state_b));
      };
      for (const double n : {k.other_trainable.empty() ? 0.0 : k.other_trainable[0]})
        if (n > 0) init(n);
      for (std::int64_t l = 0; l < k.layers; ++l)
        for (const double n : k.layer_trainable)
          init(n);
      for (std::size_t i = 1; i < k.other_trainable.size(); ++i)
        init(k.other_trainable[i]);
    }
    if (k.foreach_temp) {
      std::vector<std::int64_t> temps;
      for (const double n : {k.other_trainable.empty() ? 0.0 : k.other_trainable[0]})
        if (n > 0) temps.push_back(req(n / k.gb * k.state_b));
      for (std::int64_t l = 0; l < k.layers; ++l)
        for (const double n : k.layer_trainable)
          temps.push_back(req(n / k.gb * k.state_b));
      for (std::size_t i = 1; i < k.other_trainable.size(); ++i)
        temps.push_back(req(k.other_trainable[i] / k.gb * k.state_b));
      for (const std::int64_t t : temps)
        a.free(t);
    }
    for (const std::int64_t g : grads)
      a.free(g);
    grads.clear();
  }
  return {static_cast<double>(a.reserved()), static_cast<double>(a.peak_allocated())};
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
  // modules_to_save beside LoRA (peft/utils/other.py ModulesToSaveWrapper): a trainable deepcopy
  // of the module in the base dtype (PEFT's fp32 cast, tuners_utils.py _cast_adapter_dtype,
  // touches only tuner layers), so its weights, gradient and optimizer states in that dtype.
  double save_emb = 0;  // elements of a trained copy of the token embedding
  double save_head = 0; // of the LM head
  std::string save_note;
  if (!full) {
    for (const auto& name : s.modules_to_save.value) {
      if (name == "embed_tokens" || name == "wte")
        save_emb = static_cast<double>(m.vocab_size) * static_cast<double>(m.hidden_size);
      else if (name == "lm_head")
        save_head = static_cast<double>(m.vocab_size) * static_cast<double>(m.hidden_size);
    }
  }
  const double save = save_emb + save_head;
  // QLoRA and LLM.int8 quantise only the layers' linear weights: the embedding and the head,
  // and so their copies, stay in the load dtype.
  const double save_wb = full ? 0 : wb;
  if (save > 0) {
    W += save * save_wb;
    G += save * save_wb;
    e.trainable_params += to_bytes(save);
    save_note = fmt::format("; + trainable copies of {} (modules_to_save): {:.0f} M parameters",
                            save_emb > 0 && save_head > 0 ? "embed_tokens and lm_head"
                            : save_emb > 0                ? "embed_tokens"
                                                          : "lm_head",
                            save / 1e6);
    w_basis += save_note;
  }
  const double Ptrain = full ? P : A;
  const double save_sb = opt.bytes_per_state > 0 ? opt.bytes_per_state : save_wb;
  S = opt.states * sb * Ptrain + opt.states * save_sb * save;
  opt_basis = fmt::format("{} state(s) x {} B{}{}", opt.states, sb,
                          full ? "/param" : " per adapter parameter", save_note);
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
    T_opt = sb * Ptrain + save_sb * save;
    t_basis = "_foreach_sqrt of exp_avg_sq: one state's size";
  }
  if (has("adafactor")) {
    // transformers optimization.py Adafactor.step: the gradient is cast to fp32 first
    // (grad.float() for 16-bit grads), then a parameter of two or more dimensions keeps
    // exp_avg_sq_row (its shape without the last dimension) and exp_avg_sq_col (without the one
    // before it), a 1-D parameter a full exp_avg_sq, all `.to(grad)`: 4 B each; no exp_avg with
    // TrainingArguments' beta1=None. So 4 x (rows + columns) per matrix, 4 B per element of a
    // vector.
    const auto hh = static_cast<double>(m.hidden_size);
    double per_layer = 0;
    const double norms = (m.model_type == "gemma2" || m.model_type == "gemma3_text") ? 4 : 2;
    for (const auto& l : layer_linears(m)) {
      const auto c = static_cast<double>(l.count);
      const auto in = static_cast<double>(l.in);
      const auto out = static_cast<double>(l.out);
      const auto rr = static_cast<double>(s.lora_r.value);
      if (full)
        per_layer += c * 4 * (in + out);
      else if (std::find(s.lora_targets.value.begin(), s.lora_targets.value.end(), "all-linear") !=
                   s.lora_targets.value.end() ||
               std::find(s.lora_targets.value.begin(), s.lora_targets.value.end(), l.name) !=
                   s.lora_targets.value.end())
        per_layer += c * 4 * ((rr + in) + (out + rr)); // lora_A r x in, lora_B out x r
    }
    if (full) per_layer += norms * 4 * hh;
    S = per_layer * static_cast<double>(m.num_layers);
    if (full) {
      const auto V = static_cast<double>(m.vocab_size);
      S += 4 * (V + hh) * (p.lm_head > 0 ? 2 : 1) + 4 * hh; // embedding, LM head, final norm
    }
    opt_basis = "factored second moment, fp32: a row and a column vector per matrix, the full "
                "size for vectors; no first moment (beta1=None)";
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
  // The final norm and the LM head's input (kept when the head trains): as the layers' norms
  // (layer_saved): GemmaRMSNorm and Olmo2RMSNorm keep the fp32 normalised tensor for their
  // weight, GPT-2's ln_f its input and fp32 mean and rstd.
  const bool fp32_norm = m.model_type.rfind("gemma", 0) == 0 || m.model_type == "olmo2";
  double final_norm_per_token = 4 * h + (full ? 2 * ab * h : 0);
  if (fp32_norm) final_norm_per_token = 4 * h + (full ? 4 * h + ab * h : 0);
  if (m.model_type == "gpt2") final_norm_per_token = (mixed ? 4 : ab) * h + 8 + (full ? ab * h : 0);
  const double final_norm = final_norm_per_token * tokens;
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
        "prefetched (FSDP's default BackwardPrefetch.BACKWARD_PRE holds the current and the next "
        "unit); not measured",
        "torch/distributed/fsdp/api.py BackwardPrefetch; "
        "deepspeed/runtime/zero/partitioned_param_coordinator.py");
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
  // The reserve is what the caching allocator holds beyond what is allocated at the peak: freed
  // blocks it keeps cached, and the parts of segments that the step's requests could not use
  // (c10/cuda/CUDACachingAllocator.cpp: best fit, splitting only above 1 MiB of remainder,
  // segments never merged). It depends on the order and sizes of the step's requests, so it is
  // read from a simulation of the allocator replaying them (simulate_step,
  // src/plan/allocator.cpp), once with the default allocator and once with expandable segments.
  StepShape k;
  {
    k.tokens = tokens;
    k.ab = ab;
    k.wb = wb;
    k.gb = pb;
    k.state_b = sb;
    k.states = opt.states;
    k.states_on_device = !has("paged") && !s.offload_optimizer.value && !s.offload_params.value;
    k.foreach_temp = T_opt > 0 && !has("adafactor");
    k.full = full;
    k.checkpointing = s.gradient_checkpointing.value;
    k.chunked_loss = s.chunked_loss.value;
    k.tied = full && m.tie_word_embeddings;
    k.vocab = V;
    k.hidden = h;
    k.rope = static_cast<double>(m.head_dim);
    k.grad_accum = std::max<std::int64_t>(1, s.grad_accum.value);
    k.scores =
        s.attention.value == Attention::eager ? b * static_cast<double>(m.num_heads) * sl * sl : 0;
    k.layers = m.num_layers;
    k.saved = layer.tensors;
    k.probs_at = layer.probs_at;
    k.autocast = mixed;
    const double lin_b = s.method.value == Method::qlora ? 0.5 + 1.0 / 64 + 4.0 / (64.0 * 256.0)
                         : s.load_in_8bit.value && !full ? 1.0
                                                         : wb;
    const double norms = (m.model_type == "gemma2" || m.model_type == "gemma3_text") ? 4 : 2;
    // A layer's experts are one request per projection: transformers 5 keeps them as one 3-D
    // parameter (E x out x in) per projection in its MoE experts modules, and the replay stays
    // linear in the layer count rather than in layers x experts.
    for (const auto& l : layer_linears(m)) {
      const auto c = static_cast<double>(l.count);
      const double ne = static_cast<double>(l.in) * static_cast<double>(l.out);
      k.layer_weights.push_back(c * ne * lin_b);
      if (full) {
        k.layer_trainable.push_back(c * ne * pb);
      } else if (all_linear || adapted.contains(l.name)) {
        k.layer_trainable.push_back(c * 4 * static_cast<double>(s.lora_r.value * l.in));
        k.layer_trainable.push_back(c * 4 * static_cast<double>(s.lora_r.value * l.out));
      }
    }
    for (int i = 0; i < static_cast<int>(norms); ++i) {
      k.layer_weights.push_back(h * wb);
      if (full) k.layer_trainable.push_back(h * pb);
    }
    k.other_weights = {static_cast<double>(p.embedding) * wb, h * wb};
    if (p.lm_head > 0) k.other_weights.push_back(static_cast<double>(p.lm_head) * wb);
    if (full) {
      k.other_trainable = {static_cast<double>(p.embedding) * pb, h * pb};
      if (p.lm_head > 0) k.other_trainable.push_back(static_cast<double>(p.lm_head) * pb);
    } else if (save > 0) { // the modules_to_save copies
      k.other_trainable = {save_emb * save_wb, 0, save_head * save_wb};
      k.other_weights.push_back(save * save_wb);
    }
  }
  const SimResult sim_default = simulate_step(k, false);
  const SimResult sim_expandable = simulate_step(k, true);
  const double reserve_default =
      std::max(0.0, sim_default.peak_reserved - sim_default.peak_allocated);
  const double reserve_expandable =
      std::max(0.0, sim_expandable.peak_reserved - sim_expandable.peak_allocated);
  const double reserve = reserve_default;
  const std::string reserve_basis = fmt::format(
      "the step's requests replayed through the caching allocator (3 steps): peak reserved {:.2f} "
      "GiB less peak allocated {:.2f} GiB; with expandable_segments:True {:.2f} GiB",
      sim_default.peak_reserved / 1073741824.0, sim_default.peak_allocated / 1073741824.0,
      reserve_expandable / 1073741824.0);
  add("allocator_reserve", "caching allocator reserve beyond allocated", reserve, reserve_basis,
      "c10/cuda/CUDACachingAllocator.cpp (round_size, get_allocation_size, get_free_block, "
      "should_split, free_block; Note [Expandable Segments]), replayed by src/plan/allocator.cpp");
  add("runtime", "GPU context (HIP or CUDA), kernels, libraries", kContext,
      "outside the caching allocator: measured 767 MiB for CUDA 13 on an H200; HIP's not "
      "measured (the band: 0.3 to 1.3 GB)",
      "tests/plan/plantruth/measured (non_allocator_bytes); CUDA_MODULE_LOADING=LAZY; HF "
      "model_memory_anatomy.md; pytorch/pytorch#107667");
  for (const auto& it : e.items)
    e.required_bytes += it.bytes;
  // The band, on the total. Low: what is allocated and the smallest context; the reserve can
  // shrink to nothing on a full GPU, because before it reports out of memory the allocator frees
  // its unsplit cached blocks and retries (release_cached_blocks), and with expandable segments
  // unmaps its free pages (release_expandable_segment). High: the larger of the two allocators'
  // replayed reserves, the largest context, and what the replay cannot know:
  //   - it replays the tensors autograd keeps and the step's large transients, not every
  //     request inside an op (RMSNorm's fp32 intermediates, RoPE's, kernel workspaces). One of
  //     those can split a cached block that the next step needed whole, so that the next step
  //     asks the device for one more segment of the largest request (get_free_block finds no
  //     block large enough, alloc_block); measured on the H200, c04 (eager attention) reserved
  //     exactly one more fp32 loss block in step 2 than in step 1;
  //   - a padded batch makes transformers pass a mask to SDPA, which then gets K and V repeated
  //     to all heads (integrations/sdpa_attention.py: use_gqa_in_sdpa is false with a mask).
  e.low_bytes = to_bytes(allocated + kContextLow);
  double high_extra = std::max(reserve_default, reserve_expandable) - reserve +
                      (kContextHigh - kContext) + k.largest_request();
  if (s.attention.value != Attention::eager && m.num_kv_heads < m.num_heads)
    high_extra += (s.gradient_checkpointing.value ? 1 : L) * 2 * ab * tokens *
                  static_cast<double>((m.num_heads - m.num_kv_heads) * m.head_dim);
  // Regimes no measurement checked (tests/plan/plantruth holds dense Llama/Qwen2 decoders with
  // AdamW, bf16 weights, one GPU): no measured error bounds their items, so the high end counts
  // each such item once more.
  const auto unmeasured = [&](std::string what, double bytes) {
    e.unmeasured.push_back(fmt::format("{} (+{:.2f} GiB)", what, bytes / (1024.0 * 1024 * 1024)));
    high_extra += bytes;
  };
  // Activations no measurement bounds: counted once more in whichever phase that makes the
  // largest (at an optimizer-step peak the activation phases may overtake it), less the peak.
  double act_doubled = peak_bytes;
  for (const auto& ph : phases)
    act_doubled = std::max(act_doubled, Wg + gathered + Ss + ph.grads + 2 * (ph.act + ph.recomp) +
                                            ph.logit + ph.attn + ph.tied + ph.temp);
  const double act_growth = act_doubled - peak_bytes;
  if (m.num_experts > 0) unmeasured("MoE routing and experts: the activations", act_growth);
  // A model_type whose forward docs/plan.md does not audit ("Saved tensors by architecture")
  // is estimated as a Llama-style decoder, even when its weights index counts its parameters
  // exactly: what it keeps for the backward is not known.
  if (!audited_type(m.model_type))
    unmeasured("a model_type whose forward has not been audited (estimated as a Llama-style "
               "decoder): the activations",
               act_growth);
  if (stage >= 1 || s.offload_optimizer.value || s.offload_params.value)
    unmeasured("ZeRO/FSDP sharding: the gathered weights and the states", gathered + Ss);
  if (has("8bit") || has("4bit") || has("paged") || has("adafactor"))
    unmeasured(has("adafactor") ? "Adafactor: the states and step temporaries"
                                : "8-bit, 4-bit or paged optimizer: the states",
               Ss + peak->temp);
  if (s.method.value == Method::qlora || (s.load_in_8bit.value && !full)) {
    // bitsandbytes' matmuls (MatMul4Bit: dequantize_4bit; MatMul8bitLt: the fp16 outlier
    // columns and int8 casts) make a 16-bit copy of a layer's weight for the forward and again
    // for the backward: the largest one, twice.
    double largest = 0;
    for (const auto& l : layer_linears(m))
      largest = std::max(largest, static_cast<double>(l.in) * static_cast<double>(l.out));
    unmeasured("4-bit or 8-bit weights: a dequantized 16-bit copy of the largest weight, forward "
               "and backward",
               2 * 2 * largest);
  }
  e.high_bytes = e.required_bytes + to_bytes(high_extra);
  if (!opt.known)
    e.items.back().basis +=
        fmt::format("; optimizer '{}' not known, counted as AdamW", s.optim.value);
  return e;
}

} // namespace halo::plan

// SPDX-License-Identifier: MIT
// The GEMM shapes of a model's forward pass (include/halo/plan.hpp `projections`), for
// `halo-doctor bench --model` (docs/bench.md "Model").
#include <halo/error.hpp>
#include <halo/plan.hpp>

#include <fmt/format.h>

namespace halo::plan {
namespace {

std::int64_t round_up(std::int64_t v, std::int64_t multiple) {
  return (v + multiple - 1) / multiple * multiple;
}

} // namespace

std::vector<Projection> projections(const ModelConfig& m) {
  if (m.num_experts > 0)
    throw InputError(fmt::format("{}: bench --model does not model mixture-of-experts layers yet "
                                 "({} experts, {} per token: each expert's GEMM sees a share of "
                                 "the tokens); use halo-bench --sizes for chosen shapes",
                                 m.path, m.num_experts, m.experts_per_token));
  const std::int64_t h = m.hidden_size;
  const std::int64_t L = m.num_layers;
  const std::int64_t I = m.intermediate_size;
  std::vector<Projection> out;
  if (m.model_type == "gpt2") {
    // modeling_gpt2.py GPT2Attention: c_attn Conv1D(3h, h), c_proj Conv1D(h, h); GPT2MLP: c_fc
    // Conv1D(I, h), c_proj Conv1D(h, I). Conv1D stores the weight transposed; the GEMM is the same.
    out = {{"attn_c_attn", 3 * h, h, L},
           {"attn_c_proj", h, h, L},
           {"mlp_c_fc", I, h, L},
           {"mlp_c_proj", h, I, L}};
  } else {
    const std::int64_t q = m.num_heads * m.head_dim;
    const std::int64_t kv = m.num_kv_heads * m.head_dim;
    if (m.model_type == "phi3") {
      // modeling_phi3.py Phi3Attention: qkv_proj (h -> a*d + 2*kv*d), o_proj; Phi3MLP:
      // gate_up_proj (h -> 2I), down_proj.
      out = {{"qkv_proj", q + 2 * kv, h, L},
             {"o_proj", h, q, L},
             {"gate_up_proj", 2 * I, h, L},
             {"down_proj", h, I, L}};
    } else {
      // modeling_llama.py LlamaAttention / LlamaMLP (Mistral, Qwen2/3, Gemma, OLMo 2 alike).
      out = {{"q_proj", q, h, L},   {"k_proj", kv, h, L},   {"v_proj", kv, h, L},
             {"o_proj", h, q, L},   {"gate_proj", I, h, L}, {"up_proj", I, h, L},
             {"down_proj", h, I, L}};
    }
  }
  out.push_back({"lm_head", m.vocab_size, h, 1, false});
  return out;
}

std::string bench_linears_argument(const std::vector<Projection>& projections, bool& padded) {
  padded = false;
  std::string arg;
  for (const Projection& p : projections) {
    const std::int64_t n = round_up(p.out_features, 16);
    const std::int64_t k = round_up(p.in_features, 32);
    padded = padded || n != p.out_features || k != p.in_features;
    arg += fmt::format("{}{}:{}x{}:{}{}", arg.empty() ? "" : ",", p.name, n, k, p.count,
                       p.quantized ? "" : ":bf16");
  }
  return arg;
}

std::int64_t training_gemm_tokens(std::int64_t micro_batch, std::int64_t seq_len) {
  std::int64_t tokens = 0;
  if (micro_batch < 1 || seq_len < 1 || __builtin_mul_overflow(micro_batch, seq_len, &tokens) ||
      tokens > (std::int64_t{1} << 20))
    throw InputError(fmt::format("micro-batch {} x sequence length {} is not a token count from 1 "
                                 "to 1048576 that bench --model can time",
                                 micro_batch, seq_len));
  return round_up(tokens, 16);
}

} // namespace halo::plan

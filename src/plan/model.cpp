// SPDX-License-Identifier: MIT
// A Hugging Face model's shape from its config.json, and its parameter count
// (include/halo/plan.hpp). The field names and their defaults are those of transformers'
// configuration_<model_type>.py; the modules counted are those of modeling_<model_type>.py
// (docs/plan.md, "Parameters").
#include <halo/error.hpp>
#include <halo/io.hpp>
#include <halo/plan.hpp>
#include <halo/schema.hpp>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <optional>
#include <string_view>
#include <vector>

namespace halo::plan {
namespace fs = std::filesystem;
namespace {

/// A config.json is a few KiB; a safetensors index lists every tensor (DeepSeek-V3: ~9 MiB).
constexpr std::size_t kMaxConfigBytes = std::size_t{1} << 20;
constexpr std::size_t kMaxIndexBytes = std::size_t{32} << 20;

/// Upper bounds far above any published model (Llama-3.1-405B: hidden 16384, 126 layers;
/// vocabularies reach 262,144; DeepSeek-V3 has 256 routed experts). A value beyond them is not a
/// model this estimate is meant for, and keeps every product below below 2^63.
constexpr std::int64_t kMaxHidden = std::int64_t{1} << 20;
constexpr std::int64_t kMaxLayers = 4096;
constexpr std::int64_t kMaxVocab = std::int64_t{1} << 24;
constexpr std::int64_t kMaxHeads = std::int64_t{1} << 14;
constexpr std::int64_t kMaxExperts = 4096;
constexpr std::int64_t kMaxPositions = std::int64_t{1} << 26;

/// True when `child` (canonical) lies inside `root` (canonical).
bool inside(const fs::path& root, const fs::path& child) {
  auto r = root.begin();
  auto c = child.begin();
  for (; r != root.end(); ++r, ++c)
    if (c == child.end() || *r != *c) return false;
  return true;
}

/// The directory a model's links may point into: the hub cache's `models--ORG--NAME` when `dir`
/// is one of its snapshots (its files link to ../../blobs/), else `dir` itself.
fs::path containment_root(const fs::path& dir) {
  const fs::path snapshots = dir.parent_path();
  fs::path repo = snapshots.parent_path();
  if (snapshots.filename() == "snapshots" && repo.filename().string().rfind("models--", 0) == 0)
    return repo;
  return dir;
}

/// Reads `file`, refusing a link that leads outside `root`.
std::string read_contained(const fs::path& root, const fs::path& file, std::size_t max_bytes) {
  std::error_code ec;
  const fs::path croot = fs::canonical(root, ec);
  if (ec) throw InputError(fmt::format("{}: {}", root.string(), ec.message()));
  const fs::path cfile = fs::canonical(file, ec);
  if (ec) throw InputError(fmt::format("{}: {}", file.string(), ec.message()));
  if (!inside(croot, cfile))
    throw InputError(fmt::format("{}: a link that leads outside {} ({}); not followed",
                                 file.string(), root.string(), cfile.string()));
  return read_input_file(cfile.string(), max_bytes);
}

/// The Hugging Face hub caches to look in, in huggingface_hub's order (constants.py): HF_HUB_CACHE
/// (and its older name HUGGINGFACE_HUB_CACHE), else HF_HOME/hub, else
/// $XDG_CACHE_HOME/huggingface/hub, else ~/.cache/huggingface/hub.
std::vector<fs::path> hub_caches() {
  std::vector<fs::path> out;
  const auto env = [](const char* name) {
    const char* v = std::getenv(name);
    return v != nullptr && *v != '\0' ? std::string(v) : std::string();
  };
  for (const char* k : {"HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"})
    if (const auto v = env(k); !v.empty()) out.emplace_back(v);
  if (const auto v = env("HF_HOME"); !v.empty())
    out.push_back(fs::path(v) / "hub");
  else if (const auto x = env("XDG_CACHE_HOME"); !x.empty())
    out.push_back(fs::path(x) / "huggingface" / "hub");
  if (const auto home = env("HOME"); !home.empty())
    out.push_back(fs::path(home) / ".cache" / "huggingface" / "hub");
  return out;
}

/// A hub repository id, ORG/NAME or NAME (huggingface_hub validate_repo_id: letters, digits,
/// '-', '_', '.', no '--' or '..', at most one '/'), as its cache directory models--ORG--NAME in
/// the first cache that holds it; nothing is downloaded.
std::optional<fs::path> cached_repo(const std::string& id) {
  if (id.empty() || id.size() > 96 || id.front() == '/' || id.back() == '/' ||
      id.find("--") != std::string::npos || id.find("..") != std::string::npos ||
      std::count(id.begin(), id.end(), '/') > 1 || id.front() == '.' || id.front() == '-')
    return std::nullopt;
  for (const char c : id)
    if (std::isalnum(static_cast<unsigned char>(c)) == 0 && c != '-' && c != '_' && c != '.' &&
        c != '/')
      return std::nullopt;
  std::string dir = "models--" + id;
  if (const auto slash = dir.find('/'); slash != std::string::npos) dir.replace(slash, 1, "--");
  std::error_code ec;
  for (const auto& cache : hub_caches())
    if (fs::is_directory(cache / dir / "snapshots", ec)) return cache / dir;
  return std::nullopt;
}

/// Resolves MODEL to (config.json, containment root): a file, a directory with config.json, a
/// hub cache repository directory (refs/main names the snapshot), one of its snapshots, or a hub
/// repository id (ORG/NAME) found in the local hub cache.
std::pair<fs::path, fs::path> locate(const std::string& path) {
  std::error_code ec;
  const fs::path p(path);
  if (!fs::exists(p, ec)) {
    if (const auto repo = cached_repo(path)) return locate(repo->string());
    std::string tried;
    for (const auto& c : hub_caches())
      tried += (tried.empty() ? "" : ", ") + c.string();
    throw InputError(fmt::format("{}: no such file or directory, and no such ORG/NAME in the "
                                 "Hugging Face cache ({}) (--model takes a model directory, its "
                                 "config.json or a cached ORG/NAME; nothing is downloaded)",
                                 path, tried.empty() ? "none set" : tried));
  }
  if (!fs::is_directory(p, ec))
    return {p, containment_root(p.parent_path().empty() ? "." : p.parent_path())};
  if (fs::exists(p / "config.json", ec)) return {p / "config.json", containment_root(p)};
  if (fs::is_directory(p / "snapshots", ec)) {
    // huggingface_hub's cache layout: refs/main holds the commit hash of the snapshot.
    std::string ref;
    if (fs::exists(p / "refs" / "main", ec)) ref = read_contained(p, p / "refs" / "main", 256);
    while (!ref.empty() && (ref.back() == '\n' || ref.back() == '\r'))
      ref.pop_back();
    const bool hex = !ref.empty() && ref.find_first_not_of("0123456789abcdef") == std::string::npos;
    if (hex && fs::exists(p / "snapshots" / ref / "config.json", ec))
      return {p / "snapshots" / ref / "config.json", p};
    throw InputError(fmt::format(
        "{}: a Hugging Face cache directory without a usable refs/main snapshot holding "
        "config.json; pass the snapshot directory (snapshots/HASH)",
        path));
  }
  throw InputError(fmt::format("{}: no config.json in this directory", path));
}

/// Reads an integer field; absent: std::nullopt. A present field that is not a whole number in
/// [lo, hi] is an InputError naming the file and line.
std::optional<std::int64_t> int_field(const nlohmann::json& j, std::string_view key,
                                      std::int64_t lo, std::int64_t hi, const std::string& origin,
                                      const JsonPositions& pos, const std::string& prefix) {
  const auto it = j.find(key);
  if (it == j.end() || it->is_null()) return std::nullopt;
  std::optional<std::int64_t> v;
  if (it->is_number_integer())
    v = it->get<std::int64_t>();
  else if (it->is_number_unsigned() &&
           it->get<std::uint64_t>() <= std::uint64_t{std::numeric_limits<std::int64_t>::max()})
    v = static_cast<std::int64_t>(it->get<std::uint64_t>());
  if (!v || *v < lo || *v > hi)
    throw InputError(fmt::format("{}:{}: {}: {} is not a whole number from {} to {}", origin,
                                 pos.line(prefix + "/" + std::string(key)), key, it->dump(), lo,
                                 hi));
  return v;
}

/// The first of `keys` that is present (GPT-2 spells hidden_size n_embd).
std::optional<std::int64_t> first_int(const nlohmann::json& j,
                                      std::initializer_list<std::string_view> keys, std::int64_t lo,
                                      std::int64_t hi, const std::string& origin,
                                      const JsonPositions& pos, const std::string& prefix) {
  for (auto k : keys)
    if (auto v = int_field(j, k, lo, hi, origin, pos, prefix)) return v;
  return std::nullopt;
}

/// The `tie_word_embeddings` default of each model class, where the file leaves it out:
/// transformers writes only values that differ from PretrainedConfig's (True), so an absent
/// value is the class default (configuration_llama.py: False; configuration_gemma.py: True;
/// configuration_gpt2.py: inherits True).
bool default_tie(std::string_view model_type) {
  constexpr std::array<std::string_view, 9> untied = {
      "llama", "mistral", "mixtral", "qwen2", "qwen2_moe", "qwen3", "qwen3_moe", "phi3", "olmo2"};
  return std::ranges::none_of(untied, [&](std::string_view t) { return t == model_type; });
}

/// Model types counted exactly (their modules are listed in docs/plan.md).
constexpr std::array<std::string_view, 13> kKnownTypes = {
    "llama", "mistral", "mixtral", "qwen2", "qwen2_moe",   "qwen3", "qwen3_moe",
    "gemma", "gemma2",  "phi3",    "gpt2",  "gemma3_text", "olmo2"};

bool known_type(std::string_view t) {
  return std::ranges::find(kKnownTypes, t) != kKnownTypes.end();
}

/// a*b with a check (the bounds above keep real models far from it).
std::int64_t mul(std::int64_t a, std::int64_t b) {
  std::int64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r)) throw InputError("model size overflows 64 bits");
  return r;
}
std::int64_t add(std::int64_t a, std::int64_t b) {
  std::int64_t r = 0;
  if (__builtin_add_overflow(a, b, &r)) throw InputError("model size overflows 64 bits");
  return r;
}

} // namespace

ModelConfig load_model(const std::string& path) {
  const auto [file, root] = locate(path);
  const std::string origin = file.string();
  const std::string text = read_contained(root, file, kMaxConfigBytes);
  const nlohmann::json doc = parse_json_input(text, origin);
  const JsonPositions pos(text);
  if (!doc.is_object())
    throw InputError(fmt::format("{}:1: not a model config (not a JSON object)", origin));

  // Multimodal configs (Gemma 3, Llama 4, Qwen2-VL) keep the language model in text_config.
  const nlohmann::json* j = &doc;
  std::string prefix;
  if (!doc.contains("hidden_size") && !doc.contains("n_embd") && doc.contains("text_config") &&
      doc["text_config"].is_object()) {
    j = &doc["text_config"];
    prefix = "/text_config";
  }
  ModelConfig m;
  m.path = origin;
  auto str = [&](std::string_view key) -> std::string {
    const auto it = j->find(key);
    if (it != j->end() && it->is_string()) return it->get<std::string>();
    const auto top = doc.find(key);
    return top != doc.end() && top->is_string() ? top->get<std::string>() : std::string();
  };
  m.model_type = str("model_type");
  if (doc.contains("architectures") && doc["architectures"].is_array() &&
      !doc["architectures"].empty() && doc["architectures"][0].is_string())
    m.architecture = doc["architectures"][0].get<std::string>();
  m.name = str("_name_or_path");
  if (m.name.empty()) m.name = file.parent_path().filename().string();
  m.torch_dtype = str("torch_dtype");
  if (m.torch_dtype.empty()) m.torch_dtype = str("dtype"); // transformers 5 spells it dtype

  auto req = [&](std::initializer_list<std::string_view> keys, std::int64_t hi) {
    auto v = first_int(*j, keys, 1, hi, origin, pos, prefix);
    if (!v)
      throw InputError(fmt::format(
          "{}:1: not a decoder model's config: no {} (a Hugging Face config.json names the "
          "model's hidden_size, num_hidden_layers, num_attention_heads and vocab_size)",
          origin, *keys.begin()));
    return *v;
  };
  if (m.model_type.empty() && m.architecture.empty())
    throw InputError(fmt::format("{}:1: not a model config: it has neither model_type nor "
                                 "architectures",
                                 origin));
  m.hidden_size = req({"hidden_size", "n_embd", "d_model"}, kMaxHidden);
  m.num_layers = req({"num_hidden_layers", "n_layer", "num_layers"}, kMaxLayers);
  m.num_heads = req({"num_attention_heads", "n_head"}, kMaxHeads);
  m.vocab_size = req({"vocab_size"}, kMaxVocab);
  const bool gpt2 = m.model_type == "gpt2";
  // GPT-2's MLP is 4*n_embd wide unless n_inner says otherwise (modeling_gpt2.py GPT2Block).
  auto inter = first_int(*j, {"intermediate_size", "n_inner", "ffn_dim"}, 1, kMaxHidden * 16,
                         origin, pos, prefix);
  if (!inter && gpt2) inter = 4 * m.hidden_size;
  if (!inter)
    throw InputError(
        fmt::format("{}:1: not a decoder model's config: no intermediate_size", origin));
  m.intermediate_size = *inter;
  m.num_kv_heads = first_int(*j, {"num_key_value_heads"}, 1, kMaxHeads, origin, pos, prefix)
                       .value_or(m.num_heads);
  if (m.num_heads % m.num_kv_heads != 0)
    throw InputError(fmt::format("{}:{}: num_key_value_heads {} does not divide "
                                 "num_attention_heads {}",
                                 origin, pos.line(prefix + "/num_key_value_heads"), m.num_kv_heads,
                                 m.num_heads));
  if (auto d = int_field(*j, "head_dim", 1, kMaxHidden, origin, pos, prefix))
    m.head_dim = *d;
  else if (m.hidden_size % m.num_heads == 0)
    m.head_dim = m.hidden_size / m.num_heads;
  else
    throw InputError(fmt::format("{}:1: hidden_size {} is not a multiple of "
                                 "num_attention_heads {} and no head_dim is given",
                                 origin, m.hidden_size, m.num_heads));
  m.max_positions = first_int(*j, {"max_position_embeddings", "n_positions"}, 1, kMaxPositions,
                              origin, pos, prefix)
                        .value_or(0);
  if (gpt2 && m.max_positions == 0) m.max_positions = 1024; // GPT2Config default n_positions
  const auto tie = j->find("tie_word_embeddings");
  const auto tie_top = doc.find("tie_word_embeddings");
  if (tie != j->end() && tie->is_boolean()) {
    m.tie_word_embeddings = tie->get<bool>();
  } else if (tie_top != doc.end() && tie_top->is_boolean()) {
    m.tie_word_embeddings = tie_top->get<bool>();
  } else {
    m.tie_word_embeddings = default_tie(m.model_type);
    m.tie_from_default = true;
  }
  // Gemma 2's final-logit soft-capping (modeling_gemma2.py Gemma2ForCausalLM.forward: logits /
  // cap, tanh, * cap): three more b x s x V tensors, one of them kept for the backward.
  if (const auto cap = j->find("final_logit_softcapping");
      cap != j->end() && cap->is_number() && cap->get<double>() > 0)
    m.final_logit_softcapping = cap->get<double>();
  // A number in [lo, hi] at `key`; `fallback` when the key is absent; 0 when it is null (None).
  const auto number = [&](const char* key, double fallback, double lo, double hi) {
    const auto it = j->find(key);
    if (it == j->end()) return fallback;
    if (it->is_number()) {
      const double v = it->get<double>();
      if (std::isfinite(v) && v >= lo && v <= hi) return v;
    }
    return 0.0;
  };
  // Attention soft-capping: Gemma2Config(attn_logit_softcapping=50.0); Gemma3TextConfig(None).
  if (m.model_type == "gemma2" || m.model_type == "gemma3_text")
    m.attn_logit_softcapping =
        number("attn_logit_softcapping", m.model_type == "gemma2" ? 50.0 : 0.0, 0.0, 1.0e9);
  // Dropout (configuration_gpt2.py GPT2Config(attn_pdrop=0.1, resid_pdrop=0.1);
  // configuration_phi3.py Phi3Config(resid_pdrop=0.0, attention_dropout=0.0); the Llama-style
  // configs attention_dropout=0.0).
  m.attention_dropout = number(gpt2 ? "attn_pdrop" : "attention_dropout", gpt2 ? 0.1 : 0.0, 0, 1);
  if (gpt2 || m.model_type == "phi3")
    m.resid_dropout = number("resid_pdrop", gpt2 ? 0.1 : 0.0, 0, 1);
  m.num_experts = first_int(*j, {"num_local_experts", "num_experts", "n_routed_experts"}, 0,
                            kMaxExperts, origin, pos, prefix)
                      .value_or(0);
  // Without num_experts_per_tok the model class's default applies (transformers
  // configuration_<model_type>.py): MixtralConfig 2, Qwen2MoeConfig 4, Qwen3MoeConfig 8. For
  // another model_type no default is known here, so every expert is counted as active (the upper
  // bound).
  {
    std::int64_t fallback = m.num_experts;
    if (m.model_type == "mixtral")
      fallback = 2;
    else if (m.model_type == "qwen2_moe")
      fallback = 4;
    else if (m.model_type == "qwen3_moe")
      fallback = 8;
    m.experts_per_token =
        first_int(*j, {"num_experts_per_tok"}, 0, kMaxExperts, origin, pos, prefix)
            .value_or(m.num_experts > 0 ? std::min(fallback, m.num_experts) : 0);
  }
  m.moe_intermediate_size =
      first_int(*j, {"moe_intermediate_size"}, 1, kMaxHidden * 16, origin, pos, prefix)
          .value_or(m.intermediate_size);
  m.shared_expert_intermediate_size =
      first_int(*j, {"shared_expert_intermediate_size"}, 0, kMaxHidden * 16, origin, pos, prefix)
          .value_or(0);

  // model.safetensors.index.json beside the config: metadata.total_size is the byte size of all
  // stored tensors (huggingface_hub's save_torch_state_dict writes it).
  const fs::path dir = file.parent_path();
  for (const char* name : {"model.safetensors.index.json", "pytorch_model.bin.index.json"}) {
    std::error_code ec;
    if (!fs::exists(dir / name, ec)) continue;
    const std::string idx_origin = (dir / name).string();
    const std::string idx = read_contained(root, dir / name, kMaxIndexBytes);
    const nlohmann::json ij = parse_json_input(idx, idx_origin);
    const auto meta = ij.is_object() ? ij.find("metadata") : ij.end();
    if (meta != ij.end() && meta->is_object()) {
      const auto ts = meta->find("total_size");
      if (ts != meta->end() && ts->is_number_unsigned() &&
          ts->get<std::uint64_t>() <= std::uint64_t{1} << 50) {
        m.index_total_bytes = static_cast<std::int64_t>(ts->get<std::uint64_t>());
        m.index_path = idx_origin;
      }
    }
    break;
  }
  return m;
}

ParamCount count_parameters(const ModelConfig& m) {
  ParamCount p;
  const std::int64_t h = m.hidden_size;
  const std::int64_t d = m.head_dim;
  const std::int64_t q = mul(m.num_heads, d);
  const std::int64_t kv = mul(m.num_kv_heads, d);
  const std::int64_t I = m.intermediate_size;
  const std::string& t = m.model_type;
  p.exact = known_type(t);

  if (t == "gpt2") {
    // modeling_gpt2.py: c_attn (h -> 3h) and c_proj (h -> h), mlp c_fc (h -> I) and c_proj
    // (I -> h), all Conv1D with bias; ln_1, ln_2 and ln_f are LayerNorms (weight and bias); wte
    // and wpe embeddings; lm_head tied to wte.
    p.per_layer_attention = add(mul(h, 3 * h) + 3 * h, mul(h, h) + h);
    p.per_layer_mlp = add(mul(h, I) + I, mul(I, h) + h);
    p.per_layer_norms = 4 * h;
    p.linear = mul(m.num_layers, add(mul(h, 3 * h) + mul(h, h), 2 * mul(h, I)));
    p.embedding = add(mul(m.vocab_size, h), mul(m.max_positions, h));
    p.lm_head = m.tie_word_embeddings ? 0 : mul(m.vocab_size, h);
    p.layers = mul(m.num_layers, p.per_layer_attention + p.per_layer_mlp + p.per_layer_norms);
    p.total = add(add(p.embedding, p.lm_head), add(p.layers, 2 * h));
    p.active = p.total;
    p.formula = "GPT-2: L*(4h^2+4h + 2hI+I+h + 4h) + V*h + n_positions*h + 2h";
    return p;
  }

  // Llama-style decoder (modeling_llama.py LlamaDecoderLayer): q_proj h->a*d, k_proj and v_proj
  // h->kv*d, o_proj a*d->h; Qwen2 adds q/k/v biases (modeling_qwen2.py: bias=True on q,k,v);
  // Qwen3 and Gemma 3 add q_norm and k_norm over head_dim.
  const std::int64_t attn_linear = add(add(mul(h, q), 2 * mul(h, kv)), mul(q, h));
  std::int64_t attn = attn_linear;
  if (t == "qwen2" || t == "qwen2_moe") attn = add(attn, q + 2 * kv);
  if (t == "qwen3" || t == "qwen3_moe" || t == "gemma3_text" || t == "olmo2")
    attn = add(attn, t == "olmo2" ? q + kv : 2 * d);
  // Gated MLP (gate_proj, up_proj: h->I; down_proj: I->h).
  const std::int64_t dense_mlp = mul(3, mul(h, I));
  std::int64_t mlp = dense_mlp;
  std::int64_t mlp_active = dense_mlp;
  if (m.num_experts > 0) {
    // Mixtral (modeling_mixtral.py): a router (gate, h->E, no bias) and E experts w1/w3 (h->I),
    // w2 (I->h). Qwen2-MoE and Qwen3-MoE: E experts of moe_intermediate_size; Qwen2-MoE adds a
    // shared expert and its one-output gate.
    const std::int64_t E = m.num_experts;
    const std::int64_t Ie = t == "mixtral" ? I : m.moe_intermediate_size;
    const std::int64_t expert = mul(3, mul(h, Ie));
    const std::int64_t shared = m.shared_expert_intermediate_size > 0
                                    ? add(mul(3, mul(h, m.shared_expert_intermediate_size)), h)
                                    : 0;
    mlp = add(add(mul(h, E), mul(E, expert)), shared);
    mlp_active = add(add(mul(h, E), mul(m.experts_per_token, expert)), shared);
  }
  // RMSNorm weights: input_layernorm and post_attention_layernorm; Gemma 2 and 3 add
  // pre_feedforward_layernorm and post_feedforward_layernorm.
  const std::int64_t norms = (t == "gemma2" || t == "gemma3_text") ? 4 * h : 2 * h;
  p.per_layer_attention = attn;
  p.per_layer_mlp = mlp;
  p.per_layer_norms = norms;
  p.layers = mul(m.num_layers, add(add(attn, mlp), norms));
  p.linear =
      mul(m.num_layers, add(attn_linear, mlp - (m.num_experts > 0 ? mul(h, m.num_experts) : 0)));
  p.embedding = mul(m.vocab_size, h);
  p.lm_head = m.tie_word_embeddings ? 0 : p.embedding;
  p.total = add(add(p.embedding, p.lm_head), add(p.layers, h)); // + the final norm
  p.active = add(add(p.embedding, p.lm_head),
                 add(mul(m.num_layers, add(add(attn, mlp_active), norms)), h));
  // An architecture the formulas do not know: the weights index beside the config, when there,
  // counts its stored parameters exactly (total_size / bytes per element of torch_dtype).
  if (!p.exact && m.index_total_bytes &&
      (m.torch_dtype == "bfloat16" || m.torch_dtype == "float16" || m.torch_dtype == "float32")) {
    const std::int64_t per = m.torch_dtype == "float32" ? 4 : 2;
    p.total = *m.index_total_bytes / per;
    p.active = p.total;
    p.exact = true;
    p.formula = fmt::format("unknown model_type: total_size of {} / {} B ({})", m.index_path, per,
                            m.torch_dtype);
    return p;
  }
  p.formula =
      m.num_experts > 0
          ? "MoE decoder: L*(attention + router h*E + E*3*h*I_expert + norms) + V*h*(1 or 2) + h"
          : "decoder: L*(h*a*d + 2*h*kv*d + a*d*h + 3*h*I + norms) + V*h*(1 or 2) + h";
  return p;
}

bool audited_type(std::string_view model_type) {
  // One list: the types whose modules are counted are the types whose forward docs/plan.md
  // audits ("Saved tensors by architecture"), so the two cannot disagree.
  return known_type(model_type);
}

} // namespace halo::plan

// SPDX-License-Identifier: MIT
// Training configurations, read the way the frameworks read them (include/halo/plan.hpp):
// transformers' TrainingArguments (training_args.py), axolotl's YAML (src/axolotl/utils/schemas),
// torchtune's recipe YAML (recipes/configs), accelerate's config YAML (`accelerate config`).
// docs/plan.md lists the keys read and the defaults taken when a file leaves them out.
#include <halo/error.hpp>
#include <halo/io.hpp>
#include <halo/plan.hpp>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <array>
#include <filesystem>
#include <initializer_list>
#include <map>
#include <set>
#include <string_view>

namespace halo::plan {

std::string_view known_keys_text(std::string_view format); // generated/plan_keys.cpp

std::string to_string(Method m) {
  switch (m) {
  case Method::lora:
    return "lora";
  case Method::qlora:
    return "qlora";
  case Method::full:
    break;
  }
  return "full";
}

std::string to_string(Attention a) {
  switch (a) {
  case Attention::eager:
    return "eager";
  case Attention::flash_attention_2:
    return "flash_attention_2";
  case Attention::sdpa:
    break;
  }
  return "sdpa";
}

namespace {

/// Training configurations are a few KiB; the bound keeps a stray dataset file out.
constexpr std::size_t kMaxTrainConfigBytes = std::size_t{1} << 20;

Origin from_default(std::string text) {
  return Origin{Origin::Kind::default_value, std::move(text)};
}
Origin assumed(std::string text) {
  return Origin{Origin::Kind::assumed, std::move(text)};
}

/// Optimal string alignment distance (Damerau-Levenshtein without repeated edits of a substring),
/// for "did you mean": a swap of two letters counts once.
std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::vector<std::size_t>> d(a.size() + 1, std::vector<std::size_t>(b.size() + 1));
  for (std::size_t i = 0; i <= a.size(); ++i)
    d[i][0] = i;
  for (std::size_t j = 0; j <= b.size(); ++j)
    d[0][j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i)
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[a.size()][b.size()];
}

/// The keys a format knows (src/plan/keys/FORMAT.txt).
std::set<std::string, std::less<>> known_keys(std::string_view format) {
  std::set<std::string, std::less<>> keys;
  std::string_view text = known_keys_text(format);
  while (!text.empty()) {
    const auto nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    while (!line.empty() && (line.back() == ' ' || line.back() == '\r'))
      line.remove_suffix(1);
    if (!line.empty() && line.front() != '#') keys.emplace(line);
  }
  return keys;
}

/// A parsed document and where it came from. JSON is read by nlohmann first (its errors name the
/// line), then by yaml-cpp like YAML files, so every value has a line (YAML::Mark).
struct Doc {
  std::string path;
  YAML::Node root;
  std::string format;
  std::vector<std::string> notes; ///< duplicate keys (note_duplicates)

  std::string at(const YAML::Node& n) const {
    const YAML::Mark m = n.Mark();
    return m.is_null() ? path : fmt::format("{}:{}", path, m.line + 1);
  }
  Origin origin(const YAML::Node& n) const { return Origin{Origin::Kind::file, at(n)}; }
  [[noreturn]] void fail(const YAML::Node& n, const std::string& what) const {
    throw InputError(fmt::format("{}: {}", at(n), what));
  }
};

/// A child of a mapping, or an undefined node. A key given twice takes its last value, as the
/// frameworks' own readers do: PyYAML's SafeLoader (constructor.py construct_mapping fills a dict
/// key by key, so a later key overwrites; axolotl and torchtune load with yaml.safe_load) and
/// Python's json module (json.loads builds a dict: HfArgumentParser.parse_json_file). yaml-cpp
/// keeps both entries, so the last match is returned; read_doc notes the duplicate.
YAML::Node child(const YAML::Node& map, std::string_view key) {
  YAML::Node found(YAML::NodeType::Undefined);
  if (!map.IsMap()) return found;
  for (const auto& kv : map)
    if (kv.first.IsScalar() && kv.first.Scalar() == key) found = kv.second;
  return found;
}

/// Notes a key that a mapping (or a mapping inside it) gives more than once: "FILE:LINE:
/// duplicate key 'bf16' (also at line 3): the last value is used, as PyYAML and Python's json do".
void note_duplicates(const std::string& path, const YAML::Node& map, const std::string& prefix,
                     int depth, std::vector<std::string>& notes) {
  if (!map.IsMap() || depth > 4) return;
  std::map<std::string, int, std::less<>> first_line;
  for (const auto& kv : map) {
    if (!kv.first.IsScalar()) continue;
    const std::string& k = kv.first.Scalar();
    const int line = kv.first.Mark().is_null() ? 0 : kv.first.Mark().line + 1;
    if (auto [it, fresh] = first_line.emplace(k, line); !fresh)
      notes.push_back(fmt::format("{}:{}: duplicate key '{}{}' (also at line {}): the last value "
                                  "is used, as PyYAML and Python's json do",
                                  path, line, prefix, k, it->second));
    if (kv.second.IsMap()) note_duplicates(path, kv.second, prefix + k + ".", depth + 1, notes);
  }
}

bool present(const YAML::Node& n) {
  return n.IsDefined() && !n.IsNull();
}

bool as_bool(const Doc& doc, const YAML::Node& n, std::string_view key) {
  if (n.IsScalar()) {
    // YAML 1.1 booleans as yaml-cpp reads them (true/false/yes/no/on/off in any case).
    bool b = false;
    if (YAML::convert<bool>::decode(n, b)) return b;
  }
  doc.fail(n, fmt::format("{}: '{}' is not true or false", key, n.IsScalar() ? n.Scalar() : "?"));
}

std::int64_t as_int(const Doc& doc, const YAML::Node& n, std::string_view key, std::int64_t lo,
                    std::int64_t hi) {
  long long v = 0;
  if (!n.IsScalar() || !YAML::convert<long long>::decode(n, v) || v < lo || v > hi)
    doc.fail(n, fmt::format("{}: '{}' is not a whole number from {} to {}", key,
                            n.IsScalar() ? n.Scalar() : "?", lo, hi));
  return v;
}

double as_probability(const Doc& doc, const YAML::Node& n, std::string_view key) {
  double v = 0;
  if (!n.IsScalar() || !YAML::convert<double>::decode(n, v) || !(v >= 0.0) || !(v < 1.0))
    doc.fail(n, fmt::format("{}: '{}' is not a probability from 0 to below 1", key,
                            n.IsScalar() ? n.Scalar() : "?"));
  return v;
}

std::string as_string(const Doc& doc, const YAML::Node& n, std::string_view key) {
  if (!n.IsScalar()) doc.fail(n, fmt::format("{}: expected a string", key));
  return n.Scalar();
}

/// Reads and recognises one configuration file.
Doc read_doc(const std::string& path) {
  Doc doc;
  doc.path = path;
  const std::string text = read_input_file(path, kMaxTrainConfigBytes);
  const bool json = std::filesystem::path(path).extension() == ".json";
  if (json) (void)parse_json_input(text, path); // its errors name the line
  try {
    doc.root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    throw InputError(fmt::format("{}:{}: not valid {}: {}", path, e.mark.line + 1,
                                 json ? "JSON" : "YAML", e.msg));
  }
  if (!doc.root.IsMap())
    throw InputError(fmt::format("{}:1: not a training configuration (expected a mapping of "
                                 "keys to values)",
                                 path));
  note_duplicates(path, doc.root, "", 0, doc.notes);
  // The format, from keys only that format has.
  auto has = [&](std::string_view k) { return child(doc.root, k).IsDefined(); };
  bool torchtune = false;
  for (const auto& kv : doc.root)
    if (kv.second.IsMap() && child(kv.second, "_component_").IsDefined()) torchtune = true;
  if (has("compute_environment") || has("distributed_type"))
    doc.format = "accelerate";
  else if (has("peft_type") && (has("r") || has("target_modules")))
    doc.format = "peft"; // PEFT's adapter_config.json (LoraConfig.save_pretrained)
  else if (has("train_micro_batch_size_per_gpu") || has("zero_optimization") ||
           has("train_batch_size"))
    doc.format = "deepspeed"; // DeepSpeed's config JSON (deepspeed.ai/docs/config-json)
  else if (torchtune)
    doc.format = "torchtune";
  else if (has("base_model") || has("sequence_len") || has("micro_batch_size") || has("adapter"))
    doc.format = "axolotl";
  else if (has("per_device_train_batch_size") || has("output_dir") ||
           has("gradient_accumulation_steps"))
    doc.format = "transformers";
  else
    throw InputError(fmt::format(
        "{}:1: not a training configuration halo-doctor knows: expected TrainingArguments JSON "
        "(per_device_train_batch_size), an axolotl YAML (base_model, sequence_len), a torchtune "
        "YAML (_component_), an accelerate YAML (compute_environment), a DeepSpeed config "
        "(train_micro_batch_size_per_gpu) or a PEFT adapter_config.json (peft_type)",
        path));
  return doc;
}

/// The known key `k` misspells, or empty: a key within two edits of a known key (one edit for
/// keys of up to five letters), or a key of eight letters or more that a known key extends or
/// shortens by up to three ("gradient_checkpoint").
std::string near_miss(const std::string& k, const std::set<std::string, std::less<>>& keys) {
  const std::size_t limit = k.size() <= 5 ? 1 : 2;
  std::string best;
  std::size_t best_d = limit + 1;
  for (const auto& known : keys) {
    const std::size_t diff =
        known.size() > k.size() ? known.size() - k.size() : k.size() - known.size();
    const bool affix =
        k.size() >= 8 && diff <= 3 && (known.rfind(k, 0) == 0 || k.rfind(known, 0) == 0);
    if (diff > limit && !affix) continue;
    const std::size_t d = affix ? limit : edit_distance(k, known);
    if (d < best_d) {
      best_d = d;
      best = known;
    }
  }
  return best;
}

/// Keys the format does not know. A near miss of a known key is refused (InputError naming the
/// line), other unknown keys are listed as ignored. A TrainingArguments file read by
/// HfArgumentParser also holds the script's own dataclasses' fields (`lora_rank` beside
/// `local_rank`), which the doctor cannot know: there a near miss is listed with its suggestion,
/// not refused.
void check_keys(const Doc& doc, const YAML::Node& map, std::string_view format,
                const std::string& prefix, std::vector<std::string>& ignored,
                std::initializer_list<std::string_view> also_read = {}) {
  auto keys = known_keys(format);
  if (keys.empty()) return;
  // Keys of a neighbouring format that this reader reads too (TRL's SFTConfig fields in a
  // TrainingArguments file) are known: they are not "not read".
  for (const auto k : also_read)
    keys.emplace(k);
  const bool refuse = format != "transformers";
  for (const auto& kv : map) {
    if (!kv.first.IsScalar()) doc.fail(kv.first, "a key that is not a string");
    const std::string& k = kv.first.Scalar();
    if (keys.contains(k)) continue;
    const std::string best = near_miss(k, keys);
    if (!best.empty() && refuse)
      doc.fail(kv.first, fmt::format("unknown {} key '{}{}' (did you mean '{}{}'?)", format, prefix,
                                     k, prefix, best));
    ignored.push_back(best.empty()
                          ? prefix + k
                          : fmt::format("{}{} (did you mean {}{}?)", prefix, k, prefix, best));
  }
}

std::vector<std::string> string_list(const Doc& doc, const YAML::Node& n, std::string_view key) {
  std::vector<std::string> out;
  if (n.IsScalar()) {
    out.push_back(n.Scalar());
  } else if (n.IsSequence()) {
    for (const auto& e : n)
      out.push_back(as_string(doc, e, key));
  } else {
    doc.fail(n, fmt::format("{}: expected a list of module names", key));
  }
  return out;
}

constexpr std::int64_t kMaxBatch = 1 << 20;
constexpr std::int64_t kMaxSeq = std::int64_t{1} << 26;
constexpr std::int64_t kMaxRank = 1 << 16;
constexpr std::int64_t kMaxWorkers = 1 << 16;

/// The `dtype` names the frameworks accept, normalised to torch's.
std::string normal_dtype(const Doc& doc, const YAML::Node& n, std::string_view key) {
  const std::string v = as_string(doc, n, key);
  if (v == "bf16" || v == "bfloat16" || v == "torch.bfloat16") return "bfloat16";
  if (v == "fp16" || v == "float16" || v == "half" || v == "torch.float16") return "float16";
  if (v == "fp32" || v == "float32" || v == "float" || v == "torch.float32") return "float32";
  if (v == "auto") return "auto";
  doc.fail(n, fmt::format("{}: '{}' is not a dtype (bfloat16, float16, float32, auto)", key, v));
}

/// transformers' TrainingArguments, as serialised by Trainer (args.json, training_args.json),
/// plus the TRL SFTConfig keys for sequence length and model loading.
void read_transformers(const Doc& d, TrainSettings& s) {
  const YAML::Node& r = d.root;
  // TRL's SFTConfig (trl/trainer/sft_config.py) adds max_length (max_seq_length before TRL
  // 0.20) and model_init_kwargs, which this reader reads below.
  check_keys(d, r, "transformers", "", s.ignored_keys,
             {"max_length", "max_seq_length", "model_init_kwargs"});
  if (auto n = child(r, "per_device_train_batch_size"); present(n))
    s.micro_batch = {as_int(d, n, "per_device_train_batch_size", 1, kMaxBatch), d.origin(n)};
  if (auto n = child(r, "per_device_eval_batch_size"); present(n))
    s.eval_batch = {as_int(d, n, "per_device_eval_batch_size", 1, kMaxBatch), d.origin(n)};
  if (auto n = child(r, "gradient_accumulation_steps"); present(n))
    s.grad_accum = {as_int(d, n, "gradient_accumulation_steps", 1, kMaxBatch), d.origin(n)};
  for (const char* k : {"max_seq_length", "max_length"})
    if (auto n = child(r, k); present(n)) s.seq_len = {as_int(d, n, k, 1, kMaxSeq), d.origin(n)};
  if (auto n = child(r, "gradient_checkpointing"); present(n))
    s.gradient_checkpointing = {as_bool(d, n, "gradient_checkpointing"), d.origin(n)};
  if (auto n = child(r, "bf16"); present(n)) s.bf16 = {as_bool(d, n, "bf16"), d.origin(n)};
  if (auto n = child(r, "fp16"); present(n)) s.fp16 = {as_bool(d, n, "fp16"), d.origin(n)};
  if (auto n = child(r, "tf32"); present(n)) s.tf32 = {as_bool(d, n, "tf32"), d.origin(n)};
  if (auto n = child(r, "optim"); present(n)) s.optim = {as_string(d, n, "optim"), d.origin(n)};
  if (auto n = child(r, "dataloader_num_workers"); present(n))
    s.dataloader_workers = {as_int(d, n, "dataloader_num_workers", 0, kMaxWorkers), d.origin(n)};
  if (auto n = child(r, "dataloader_pin_memory"); present(n))
    s.pin_memory = {as_bool(d, n, "dataloader_pin_memory"), d.origin(n)};
  if (auto n = child(r, "torch_compile"); present(n))
    s.torch_compile = {as_bool(d, n, "torch_compile"), d.origin(n)};
  // TRL's SFTConfig.model_init_kwargs are the from_pretrained arguments.
  if (auto mk = child(r, "model_init_kwargs"); mk.IsMap()) {
    for (const char* k : {"torch_dtype", "dtype"})
      if (auto n = child(mk, k); present(n)) s.load_dtype = {normal_dtype(d, n, k), d.origin(n)};
    if (auto n = child(mk, "attn_implementation"); present(n)) {
      const std::string a = as_string(d, n, "attn_implementation");
      s.attention = {a == "eager"               ? Attention::eager
                     : a == "flash_attention_2" ? Attention::flash_attention_2
                                                : Attention::sdpa,
                     d.origin(n)};
    }
  }
}

/// axolotl's YAML (AxolotlInputConfig; keys and defaults in src/plan/keys/axolotl.txt's source).
void read_axolotl(const Doc& d, TrainSettings& s) {
  const YAML::Node& r = d.root;
  check_keys(d, r, "axolotl", "", s.ignored_keys);
  s.seq_len = {512, from_default("axolotl's default sequence_len (512)")};
  s.micro_batch = {1, from_default("axolotl's default micro_batch_size (1)")};
  s.optim = {"adamw_torch_fused", from_default("axolotl's default optimizer")};
  // bf16 and tf32 default to 'auto': on when the GPU supports them (both AMD targets do bf16).
  s.bf16 = {true, from_default("axolotl's default bf16: auto (the GPU supports bf16)")};
  if (auto n = child(r, "sequence_len"); present(n))
    s.seq_len = {as_int(d, n, "sequence_len", 1, kMaxSeq), d.origin(n)};
  if (auto n = child(r, "micro_batch_size"); present(n))
    s.micro_batch = {as_int(d, n, "micro_batch_size", 1, kMaxBatch), d.origin(n)};
  s.eval_batch = {s.micro_batch.value, from_default("axolotl: eval_batch_size defaults to "
                                                    "micro_batch_size")};
  if (auto n = child(r, "eval_batch_size"); present(n))
    s.eval_batch = {as_int(d, n, "eval_batch_size", 1, kMaxBatch), d.origin(n)};
  if (auto n = child(r, "gradient_accumulation_steps"); present(n))
    s.grad_accum = {as_int(d, n, "gradient_accumulation_steps", 1, kMaxBatch), d.origin(n)};
  if (auto n = child(r, "adapter"); present(n)) {
    const std::string a = as_string(d, n, "adapter");
    if (a == "lora")
      s.method = {Method::lora, d.origin(n)};
    else if (a == "qlora")
      s.method = {Method::qlora, d.origin(n)};
    else
      d.fail(n, fmt::format("adapter: '{}' is not lora or qlora", a));
  }
  if (auto n = child(r, "load_in_4bit");
      present(n) && as_bool(d, n, "load_in_4bit") && s.method.value != Method::qlora)
    s.method = {Method::qlora, d.origin(n)};
  if (auto n = child(r, "load_in_8bit"); present(n))
    s.load_in_8bit = {as_bool(d, n, "load_in_8bit"), d.origin(n)};
  if (auto n = child(r, "lora_r"); present(n))
    s.lora_r = {as_int(d, n, "lora_r", 1, kMaxRank), d.origin(n)};
  if (auto n = child(r, "lora_target_modules"); present(n))
    s.lora_targets = {string_list(d, n, "lora_target_modules"), d.origin(n)};
  if (auto n = child(r, "lora_modules_to_save"); present(n))
    s.modules_to_save = {string_list(d, n, "lora_modules_to_save"), d.origin(n)};
  if (auto n = child(r, "lora_dropout"); present(n))
    s.lora_dropout = {as_probability(d, n, "lora_dropout"), d.origin(n)};
  if (auto n = child(r, "lora_target_linear"); present(n) && as_bool(d, n, "lora_target_linear"))
    s.lora_targets = {{"all-linear"}, d.origin(n)};
  if (auto n = child(r, "bf16"); present(n)) {
    const bool on = n.IsScalar() && n.Scalar() == "auto" ? true : as_bool(d, n, "bf16");
    s.bf16 = {on, d.origin(n)};
  }
  if (auto n = child(r, "fp16"); present(n)) s.fp16 = {as_bool(d, n, "fp16"), d.origin(n)};
  if (auto n = child(r, "tf32"); present(n) && !(n.IsScalar() && n.Scalar() == "auto"))
    s.tf32 = {as_bool(d, n, "tf32"), d.origin(n)};
  if (auto n = child(r, "gradient_checkpointing"); present(n)) {
    // 'offload' and 'offload_disk' checkpoint too, and move the saved inputs off the GPU.
    const bool on = n.IsScalar() && (n.Scalar() == "offload" || n.Scalar() == "offload_disk")
                        ? true
                        : as_bool(d, n, "gradient_checkpointing");
    s.gradient_checkpointing = {on, d.origin(n)};
  }
  if (auto n = child(r, "flash_attention"); present(n) && as_bool(d, n, "flash_attention"))
    s.attention = {Attention::flash_attention_2, d.origin(n)};
  if (auto n = child(r, "sdp_attention"); present(n) && as_bool(d, n, "sdp_attention"))
    s.attention = {Attention::sdpa, d.origin(n)};
  if (auto n = child(r, "attn_implementation"); present(n)) {
    const std::string a = as_string(d, n, "attn_implementation");
    s.attention = {a == "eager"               ? Attention::eager
                   : a == "flash_attention_2" ? Attention::flash_attention_2
                                              : Attention::sdpa,
                   d.origin(n)};
  }
  if (auto n = child(r, "optimizer"); present(n))
    s.optim = {as_string(d, n, "optimizer"), d.origin(n)};
  if (auto n = child(r, "dataloader_num_workers"); present(n))
    s.dataloader_workers = {as_int(d, n, "dataloader_num_workers", 0, kMaxWorkers), d.origin(n)};
  if (auto n = child(r, "dataloader_pin_memory"); present(n))
    s.pin_memory = {as_bool(d, n, "dataloader_pin_memory"), d.origin(n)};
  if (auto n = child(r, "torch_compile"); present(n) && !(n.IsScalar() && n.Scalar() == "auto"))
    s.torch_compile = {as_bool(d, n, "torch_compile"), d.origin(n)};
  // axolotl loads the base model in bf16 (fp16) when bf16 (fp16) is on (utils/models.py).
  s.load_dtype = {s.bf16.value   ? "bfloat16"
                  : s.fp16.value ? "float16"
                                 : "float32",
                  from_default("axolotl loads the model in the dtype bf16/fp16 selects")};
}

/// torchtune's recipe YAML: the model builder names the method (lora_*, qlora_*).
void read_torchtune(const Doc& d, TrainSettings& s) {
  const YAML::Node& r = d.root;
  check_keys(d, r, "torchtune", "", s.ignored_keys);
  // Recipes train in `dtype` throughout (no fp32 master copy) and use SDPA.
  s.attention = {Attention::sdpa, from_default("torchtune's attention uses SDPA")};
  s.pin_memory = {false, from_default("torchtune's DataLoader does not pin memory")};
  s.load_dtype = {"bfloat16", from_default("torchtune's recipes default dtype: bf16")};
  if (auto n = child(r, "dtype"); present(n))
    s.load_dtype = {normal_dtype(d, n, "dtype"), d.origin(n)};
  s.bf16 = {s.load_dtype.value == "bfloat16", s.load_dtype.origin};
  if (auto n = child(r, "batch_size"); present(n))
    s.micro_batch = {as_int(d, n, "batch_size", 1, kMaxBatch), d.origin(n)};
  // Validation batches: batch_size_val, else batch_size (recipes/lora_finetune_single_device.py).
  s.eval_batch = {s.micro_batch.value,
                  from_default("torchtune: batch_size_val defaults to batch_size")};
  if (auto n = child(r, "batch_size_val"); present(n))
    s.eval_batch = {as_int(d, n, "batch_size_val", 1, kMaxBatch), d.origin(n)};
  if (auto loss = child(r, "loss"); loss.IsMap())
    if (auto n = child(loss, "_component_"); present(n)) {
      const std::string c = as_string(d, n, "loss._component_");
      s.chunked_loss = {c.find("LinearCrossEntropyLoss") != std::string::npos ||
                            c.find("CEWithChunkedOutputLoss") != std::string::npos,
                        d.origin(n)};
    }
  if (auto n = child(r, "gradient_accumulation_steps"); present(n))
    s.grad_accum = {as_int(d, n, "gradient_accumulation_steps", 1, kMaxBatch), d.origin(n)};
  s.gradient_checkpointing = {false,
                              from_default("torchtune recipes: enable_activation_checkpointing "
                                           "is off unless set")};
  if (auto n = child(r, "enable_activation_checkpointing"); present(n))
    s.gradient_checkpointing = {as_bool(d, n, "enable_activation_checkpointing"), d.origin(n)};
  if (auto n = child(r, "compile"); present(n))
    s.torch_compile = {as_bool(d, n, "compile"), d.origin(n)};
  if (auto tok = child(r, "tokenizer"); tok.IsMap())
    if (auto n = child(tok, "max_seq_len"); present(n))
      s.seq_len = {as_int(d, n, "tokenizer.max_seq_len", 1, kMaxSeq), d.origin(n)};
  if (auto opt = child(r, "optimizer"); opt.IsMap())
    if (auto n = child(opt, "_component_"); present(n)) {
      const std::string c = as_string(d, n, "optimizer._component_");
      const std::string lower = [&] {
        std::string l = c;
        std::transform(l.begin(), l.end(), l.begin(),
                       [](unsigned char ch) { return std::tolower(ch); });
        return l;
      }();
      // bitsandbytes.optim.PagedAdamW8bit / AdamW8bit; torchao.optim.AdamW8bit is torchao's.
      std::string optim = "adamw_torch";
      const bool torchao = lower.find("torchao") != std::string::npos;
      if (lower.find("paged") != std::string::npos && lower.find("8bit") != std::string::npos)
        optim = "paged_adamw_8bit";
      else if (lower.find("8bit") != std::string::npos)
        optim = torchao ? "adamw_torch_8bit" : "adamw_bnb_8bit";
      else if (lower.find("4bit") != std::string::npos && torchao)
        optim = "adamw_torch_4bit";
      else if (lower.find("sgd") != std::string::npos)
        optim = "sgd";
      s.optim = {optim, d.origin(n)};
    }
  if (auto model = child(r, "model"); model.IsMap()) {
    if (auto n = child(model, "_component_"); present(n)) {
      const std::string c = as_string(d, n, "model._component_");
      const auto dot = c.rfind('.');
      const std::string fn = dot == std::string::npos ? c : c.substr(dot + 1);
      if (fn.rfind("qlora_", 0) == 0)
        s.method = {Method::qlora, d.origin(n)};
      else if (fn.rfind("lora_", 0) == 0)
        s.method = {Method::lora, d.origin(n)};
      else
        s.method = {Method::full, d.origin(n)};
    }
    if (auto n = child(model, "lora_rank"); present(n))
      s.lora_r = {as_int(d, n, "model.lora_rank", 1, kMaxRank), d.origin(n)};
    if (auto n = child(model, "lora_dropout"); present(n))
      s.lora_dropout = {as_probability(d, n, "model.lora_dropout"), d.origin(n)};
    // torchtune's module names: q_proj, k_proj, v_proj, output_proj; the MLP's w1, w2, w3.
    std::vector<std::string> targets;
    YAML::Node where;
    if (auto n = child(model, "lora_attn_modules"); present(n)) {
      for (auto& t : string_list(d, n, "model.lora_attn_modules"))
        targets.push_back(t == "output_proj" ? "o_proj" : t);
      where = n;
    }
    if (auto n = child(model, "apply_lora_to_mlp");
        present(n) && as_bool(d, n, "apply_lora_to_mlp"))
      for (const char* t : {"gate_proj", "up_proj", "down_proj"})
        targets.emplace_back(t);
    if (where.IsDefined()) s.lora_targets = {targets, d.origin(where)};
  }
}

/// PEFT's adapter_config.json: a LoRA adapter's rank and target modules
/// (peft/tuners/lora/config.py).
void read_peft(const Doc& d, TrainSettings& s) {
  const YAML::Node& r = d.root;
  const YAML::Node type = child(r, "peft_type");
  if (present(type) && as_string(d, type, "peft_type") != "LORA")
    d.fail(type, fmt::format("peft_type: '{}': only LoRA adapters are estimated", type.Scalar()));
  if (s.method.value == Method::full) s.method = {Method::lora, d.origin(type)};
  if (auto n = child(r, "r"); present(n)) s.lora_r = {as_int(d, n, "r", 1, kMaxRank), d.origin(n)};
  if (auto n = child(r, "target_modules"); present(n))
    s.lora_targets = {string_list(d, n, "target_modules"), d.origin(n)};
  if (auto n = child(r, "lora_dropout"); present(n))
    s.lora_dropout = {as_probability(d, n, "lora_dropout"), d.origin(n)};
  if (auto n = child(r, "modules_to_save"); present(n))
    s.modules_to_save = {string_list(d, n, "modules_to_save"), d.origin(n)};
}

/// DeepSpeed's config JSON: the micro-batch, accumulation and precision when they are numbers;
/// "auto" leaves them to TrainingArguments (transformers integrations/deepspeed.py).
void read_deepspeed(const Doc& d, TrainSettings& s) {
  const YAML::Node& r = d.root;
  auto given = [&](const YAML::Node& n) {
    return present(n) && !(n.IsScalar() && n.Scalar() == "auto");
  };
  if (auto n = child(r, "train_micro_batch_size_per_gpu"); given(n))
    s.micro_batch = {as_int(d, n, "train_micro_batch_size_per_gpu", 1, kMaxBatch), d.origin(n)};
  if (auto n = child(r, "gradient_accumulation_steps"); given(n))
    s.grad_accum = {as_int(d, n, "gradient_accumulation_steps", 1, kMaxBatch), d.origin(n)};
  if (auto sect = child(r, "bf16"); sect.IsMap())
    if (auto n = child(sect, "enabled"); given(n))
      s.bf16 = {as_bool(d, n, "bf16.enabled"), d.origin(n)};
  // zero_optimization: stage, offload_optimizer.device, offload_param.device ("cpu", "nvme").
  if (auto z = child(r, "zero_optimization"); z.IsMap()) {
    if (auto n = child(z, "stage"); given(n))
      s.shard_stage = {as_int(d, n, "zero_optimization.stage", 0, 3), d.origin(n)};
    for (const char* k : {"offload_optimizer", "offload_param"}) {
      const YAML::Node o = child(z, k);
      const YAML::Node dev = o.IsMap() ? child(o, "device") : YAML::Node();
      if (!present(dev)) continue;
      (std::string_view(k) == "offload_param" ? s.offload_params : s.offload_optimizer) = {
          as_string(d, dev, k) != "none", d.origin(dev)};
    }
  }
  if (auto sect = child(r, "fp16"); sect.IsMap())
    if (auto n = child(sect, "enabled"); given(n))
      s.fp16 = {as_bool(d, n, "fp16.enabled"), d.origin(n)};
}

/// accelerate's config YAML: mixed precision and the process count.
void read_accelerate(const Doc& d, TrainSettings& s) {
  const YAML::Node& r = d.root;
  check_keys(d, r, "accelerate", "", s.ignored_keys);
  if (auto n = child(r, "mixed_precision"); present(n)) {
    const std::string mp = as_string(d, n, "mixed_precision");
    if (mp != "no" && mp != "bf16" && mp != "fp16" && mp != "fp8")
      d.fail(n, fmt::format("mixed_precision: '{}' is not no, fp16, bf16 or fp8", mp));
    s.bf16 = {mp == "bf16", d.origin(n)};
    s.fp16 = {mp == "fp16", d.origin(n)};
  }
  if (auto n = child(r, "num_processes"); present(n))
    s.num_processes = {as_int(d, n, "num_processes", 1, 1 << 20), d.origin(n)};
  const YAML::Node type = child(r, "distributed_type");
  const std::string dist = present(type) ? as_string(d, type, "distributed_type") : "";
  if (dist == "FSDP") {
    // accelerate's FSDP plugin: fsdp_sharding_strategy (FULL_SHARD, SHARD_GRAD_OP, NO_SHARD,
    // HYBRID_SHARD; older files spell them 1-4) and fsdp_offload_params.
    s.shard_stage = {3, Origin{Origin::Kind::default_value, "accelerate FSDP: FULL_SHARD"}};
    if (auto fc = child(r, "fsdp_config"); fc.IsMap()) {
      if (auto n = child(fc, "fsdp_sharding_strategy"); present(n)) {
        const std::string v = as_string(d, n, "fsdp_sharding_strategy");
        const std::int64_t stage = v == "SHARD_GRAD_OP" || v == "2" ? 2
                                   : v == "NO_SHARD" || v == "3"    ? 0
                                                                    : 3;
        s.shard_stage = {stage, d.origin(n)};
      }
      if (auto n = child(fc, "fsdp_offload_params"); present(n))
        s.offload_params = {as_bool(d, n, "fsdp_offload_params"), d.origin(n)};
    }
  } else if (dist == "DEEPSPEED") {
    if (auto dc = child(r, "deepspeed_config"); dc.IsMap()) {
      if (auto n = child(dc, "zero_stage"); present(n))
        s.shard_stage = {as_int(d, n, "zero_stage", 0, 3), d.origin(n)};
      if (auto n = child(dc, "offload_optimizer_device"); present(n))
        s.offload_optimizer = {as_string(d, n, "offload_optimizer_device") != "none", d.origin(n)};
      if (auto n = child(dc, "offload_param_device"); present(n))
        s.offload_params = {as_string(d, n, "offload_param_device") != "none", d.origin(n)};
    }
  }
}

} // namespace

bool uses_bitsandbytes(const TrainSettings& s) {
  if (s.method.value == Method::qlora && s.config_format.find("torchtune") == std::string::npos)
    return true;
  if (s.method.value != Method::full && s.load_in_8bit.value) return true;
  const std::string& o = s.optim.value;
  if (o.rfind("adamw_torch", 0) == 0) return false; // torch and torchao (adamw_torch_8bit)
  constexpr std::array<std::string_view, 5> kBnbOptims = {"bnb", "8bit", "paged", "lion",
                                                          "ademamix"};
  return std::ranges::any_of(kBnbOptims,
                             [&](std::string_view k) { return o.find(k) != std::string::npos; });
}

TrainSettings load_train_settings(const std::vector<std::string>& paths, const Overrides& o) {
  TrainSettings s;
  // What neither file nor command line sets: TrainingArguments' defaults (training_args.py),
  // PEFT's LoraConfig (r=8), and the stated assumptions.
  s.config_format = "none";
  s.method = {Method::full, from_default("full fine-tuning (no adapter configured)")};
  s.micro_batch = {8, from_default("TrainingArguments.per_device_train_batch_size default (8)")};
  s.eval_batch = {8, from_default("TrainingArguments.per_device_eval_batch_size default (8)")};
  s.grad_accum = {1, from_default("gradient_accumulation_steps default (1)")};
  s.seq_len = {1024, assumed("TRL SFTConfig.max_length default (1024); pass --seq")};
  s.bf16 = {false, from_default("TrainingArguments.bf16 default (false)")};
  s.fp16 = {false, from_default("TrainingArguments.fp16 default (false)")};
  s.tf32 = {false, from_default("TrainingArguments.tf32 default (unset)")};
  s.chunked_loss = {false,
                    from_default("the loss holds all logits (transformers' ForCausalLMLoss)")};
  s.load_in_8bit = {false, from_default("BitsAndBytesConfig.load_in_8bit default (false)")};
  s.load_dtype = {"float32", assumed("from_pretrained loads float32 unless torch_dtype is given "
                                     "(transformers 4.x); pass --load-dtype")};
  s.gradient_checkpointing = {false, from_default("gradient_checkpointing default (false)")};
  s.optim = {"adamw_torch", from_default("TrainingArguments.optim default (adamw_torch)")};
  s.lora_r = {8, from_default("PEFT LoraConfig.r default (8)")};
  s.lora_dropout = {0.0, from_default("PEFT LoraConfig.lora_dropout default (0.0)")};
  s.lora_targets = {{"q_proj", "v_proj"},
                    from_default("PEFT's default target modules for Llama-style models")};
  s.modules_to_save = {{}, from_default("PEFT LoraConfig.modules_to_save default (None)")};
  s.attention = {Attention::sdpa, from_default("transformers' default attn_implementation "
                                               "(sdpa)")};
  s.dataloader_workers = {0, from_default("dataloader_num_workers default (0)")};
  s.pin_memory = {true, from_default("dataloader_pin_memory default (true)")};
  s.torch_compile = {false, from_default("torch_compile default (false)")};
  s.num_processes = {1, from_default("one process")};
  s.shard_stage = {0, from_default("no sharding: each process holds the whole model (DDP)")};
  s.offload_optimizer = {false, from_default("no offload")};
  s.offload_params = {false, from_default("no offload")};

  for (const auto& path : paths) {
    const Doc doc = read_doc(path);
    s.notes.insert(s.notes.end(), doc.notes.begin(), doc.notes.end());
    s.config_path = s.config_path.empty() ? path : s.config_path + ", " + path;
    s.config_format = s.config_format == "none" ? doc.format : s.config_format + "+" + doc.format;
    try {
      if (doc.format == "transformers")
        read_transformers(doc, s);
      else if (doc.format == "axolotl")
        read_axolotl(doc, s);
      else if (doc.format == "torchtune")
        read_torchtune(doc, s);
      else if (doc.format == "peft")
        read_peft(doc, s);
      else if (doc.format == "deepspeed")
        read_deepspeed(doc, s);
      else
        read_accelerate(doc, s);
    } catch (const YAML::Exception& e) {
      throw InputError(fmt::format("{}:{}: {}", path, e.mark.line + 1, e.msg));
    }
  }

  auto from = [](const char* flag) { return Origin{Origin::Kind::command_line, flag}; };
  if (o.method) s.method = {*o.method, from("--method")};
  if (o.micro_batch) s.micro_batch = {*o.micro_batch, from("--batch")};
  if (o.seq_len) s.seq_len = {*o.seq_len, from("--seq")};
  if (o.grad_accum) s.grad_accum = {*o.grad_accum, from("--grad-accum")};
  if (o.gradient_checkpointing)
    s.gradient_checkpointing = {*o.gradient_checkpointing, from("--gradient-checkpointing")};
  if (o.optim) s.optim = {*o.optim, from("--optim")};
  if (o.lora_r) s.lora_r = {*o.lora_r, from("--lora-r")};
  if (o.load_dtype) s.load_dtype = {*o.load_dtype, from("--load-dtype")};
  // LoRA and QLoRA freeze the base in 16 bit: PEFT's prepare_model_for_kbit_training and the
  // QLoRA recipe load it in bnb_4bit with a bf16 compute dtype.
  if (s.method.value != Method::full && s.load_dtype.value == "float32" &&
      s.load_dtype.origin.kind == Origin::Kind::assumed)
    s.load_dtype = {"bfloat16", assumed("adapters train on a base loaded in bfloat16")};
  return s;
}

} // namespace halo::plan

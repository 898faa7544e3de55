// SPDX-License-Identifier: MIT
// halo-doctor bench --model: the model's own GEMM shapes from real config.json files (plan's
// readers), the training token count from a real TrainingArguments file, the argument halo-bench
// parses, and the per-token weighting of the verdict (docs/bench.md "Model").
#include "halo_bench/model_verdict.hpp"
#include "halo_bench/options.hpp"

#include <halo/error.hpp>
#include <halo/plan.hpp>

#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

using namespace halo;

namespace {
const std::string kBenchModels = std::string(HALO_PLAN_DIR) + "/../bench/models/";
const std::string kPlanModels = std::string(HALO_PLAN_DIR) + "/models/";

const plan::Projection& find(const std::vector<plan::Projection>& ps, const std::string& name) {
  for (const auto& p : ps)
    if (p.name == name) return p;
  FAIL("no projection " << name);
  return ps.front();
}
} // namespace

TEST_CASE("Llama 3.2 1B: q/k/v/o, gate/up/down and lm_head at the config's sizes", "[bench]") {
  const std::string dir = kBenchModels + "c07-llama-3.2-1b-full-b4-s2048-fused";
  const plan::Plan p = plan::make_plan(dir, {dir + "/args.json"}, {});
  const auto ps = plan::projections(p.model);
  REQUIRE(ps.size() == 8);
  // hidden 2048, 32 heads x head_dim 64 = 2048, 8 KV heads x 64 = 512, intermediate 8192.
  CHECK(find(ps, "q_proj").out_features == 2048);
  CHECK(find(ps, "q_proj").in_features == 2048);
  CHECK(find(ps, "k_proj").out_features == 512);
  CHECK(find(ps, "v_proj").out_features == 512);
  CHECK(find(ps, "o_proj").in_features == 2048);
  CHECK(find(ps, "gate_proj").out_features == 8192);
  CHECK(find(ps, "up_proj").out_features == 8192);
  CHECK(find(ps, "down_proj").in_features == 8192);
  CHECK(find(ps, "down_proj").out_features == 2048);
  CHECK(find(ps, "q_proj").count == 16);
  // Tied embeddings still compute the logits GEMM once per token; bitsandbytes keeps it bf16.
  CHECK(find(ps, "lm_head").out_features == 128256);
  CHECK(find(ps, "lm_head").count == 1);
  CHECK_FALSE(find(ps, "lm_head").quantized);
  CHECK(find(ps, "q_proj").quantized);

  // args.json: per_device_train_batch_size 4, max_length 2048.
  CHECK(plan::training_gemm_tokens(p.settings.micro_batch.value, p.settings.seq_len.value) == 8192);

  bool padded = true;
  const std::string arg = plan::bench_linears_argument(ps, padded);
  CHECK_FALSE(padded);
  CHECK(arg.rfind("q_proj:2048x2048:16,k_proj:512x2048:16,", 0) == 0);
  CHECK(arg.find(",lm_head:128256x2048:1:bf16") != std::string::npos);

  // halo-bench parses exactly what halo-doctor passes.
  const auto linears = halo_bench::parse_model_linears(arg, "--model-linears");
  REQUIRE(linears.size() == ps.size());

  // The verdict's per-token weighting counts every linear parameter twice (multiply + add): the
  // FLOPs per token equal 2 x (the layers' linear parameters + the LM head's), as plan counts
  // them for the same config.
  std::vector<halo_bench::LinearTiming> t;
  for (const auto& l : linears)
    t.push_back({l.name, l.n, l.k, l.count, 1.0, 0.5});
  const auto v = halo_bench::weigh_regime(t, "generation (M = 1)", "NF4");
  const plan::ParamCount pc = plan::count_parameters(p.model);
  CHECK(v.flops_per_token == Approx(2.0 * static_cast<double>(pc.linear + 128256LL * 2048)));
  CHECK(v.speedup == Approx(2.0));
  CHECK(v.line == "generation (M = 1): NF4 is 2.0x faster than BF16");
}

TEST_CASE("Qwen2.5 0.5B: grouped KV heads, and the time weights follow the counts", "[bench]") {
  const std::string dir = kBenchModels + "c03-qwen2.5-0.5b-full-b4-s2048";
  const plan::Plan p = plan::make_plan(dir, {dir + "/args.json"}, {});
  const auto ps = plan::projections(p.model);
  CHECK(find(ps, "q_proj").out_features == 896); // 14 heads x 64
  CHECK(find(ps, "k_proj").out_features == 128); // 2 KV heads x 64
  CHECK(find(ps, "gate_proj").out_features == 4864);
  CHECK(find(ps, "down_proj").in_features == 4864);
  CHECK(find(ps, "lm_head").out_features == 151936);
  CHECK(find(ps, "o_proj").count == 24);
  bool padded = true;
  const auto linears =
      halo_bench::parse_model_linears(plan::bench_linears_argument(ps, padded), "x");
  CHECK_FALSE(padded);
  // 4-bit twice as fast on every layer projection, the bf16 LM head unchanged: the verdict is
  // the per-token sum, so it lands between 1 and 2 by the LM head's share of the time.
  std::vector<halo_bench::LinearTiming> t;
  double bf16 = 0.0;
  double quant = 0.0;
  for (const auto& l : linears) {
    const double ms = 1e-9 * static_cast<double>(l.n * l.k); // time proportional to FLOPs
    t.push_back({l.name, l.n, l.k, l.count, ms, l.quantized ? ms / 2 : ms});
    bf16 += static_cast<double>(l.count) * ms;
    quant += static_cast<double>(l.count) * (l.quantized ? ms / 2 : ms);
  }
  const auto v = halo_bench::weigh_regime(t, "generation (M = 1)", "NF4");
  CHECK(v.speedup == Approx(bf16 / quant));
  CHECK(v.speedup > 1.5);
  CHECK(v.speedup < 2.0);
}

TEST_CASE("GPT-2 fused projections are padded to the kernels' multiples; MoE is refused",
          "[bench]") {
  const plan::ModelConfig gpt2 = plan::load_model(kPlanModels + "gpt2");
  const auto ps = plan::projections(gpt2);
  REQUIRE(ps.size() == 5);
  CHECK(find(ps, "attn_c_attn").out_features == 3 * 768);
  CHECK(find(ps, "mlp_c_fc").out_features == 3072);
  CHECK(find(ps, "lm_head").out_features == 50257);
  bool padded = false;
  const std::string arg = plan::bench_linears_argument(ps, padded);
  CHECK(padded);
  CHECK(arg.find("lm_head:50272x768:1:bf16") != std::string::npos); // 50257 -> 50272
  CHECK_NOTHROW(halo_bench::parse_model_linears(arg, "x"));

  const plan::ModelConfig mixtral = plan::load_model(kPlanModels + "mixtral-8x7b-v0.1");
  CHECK_THROWS_AS(plan::projections(mixtral), InputError);
}

TEST_CASE("Phi-3 fuses qkv_proj and gate_up_proj", "[bench]") {
  // The shape values of microsoft/Phi-3-mini-4k-instruct's config.json (configuration_phi3.py
  // defaults: hidden 3072, 32 layers, 32 heads, intermediate 8192, vocab 32064).
  char tmpl[] = "/tmp/halo-bench-phi3-XXXXXX";
  const char* d = ::mkdtemp(tmpl);
  REQUIRE(d != nullptr);
  const std::filesystem::path dir(d);
  std::ofstream(dir / "config.json")
      << R"({"model_type": "phi3", "architectures": ["Phi3ForCausalLM"], "hidden_size": 3072,
"intermediate_size": 8192, "num_hidden_layers": 32, "num_attention_heads": 32,
"num_key_value_heads": 32, "vocab_size": 32064, "tie_word_embeddings": false})";
  const auto ps = plan::projections(plan::load_model(dir.string()));
  std::filesystem::remove_all(dir);
  REQUIRE(ps.size() == 5);
  CHECK(find(ps, "qkv_proj").out_features == 3 * 3072);
  CHECK(find(ps, "gate_up_proj").out_features == 2 * 8192);
  CHECK(find(ps, "down_proj").in_features == 8192);
}

TEST_CASE("training tokens: micro-batch x sequence, rounded up to 16, bounded", "[bench]") {
  CHECK(plan::training_gemm_tokens(4, 2048) == 8192);
  CHECK(plan::training_gemm_tokens(1, 1000) == 1008);
  CHECK(plan::training_gemm_tokens(1, 1) == 16);
  CHECK(plan::training_gemm_tokens(1024, 1024) == 1048576);
  CHECK_THROWS_AS(plan::training_gemm_tokens(1025, 1024), InputError);
  CHECK_THROWS_AS(plan::training_gemm_tokens(0, 1024), InputError);
}

TEST_CASE("bench/gpu-session.sh's stored model arguments are what halo-doctor passes today",
          "[bench]") {
  // bench/models/<case>.args: the halo-bench arguments `halo-doctor bench --model DIR --config
  // DIR/args.json` produced for the two fixtures, kept so that a GPU machine without a
  // halo-doctor build can run the model part. They must not drift from the code.
  for (const std::string c :
       {"c07-llama-3.2-1b-full-b4-s2048-fused", "c03-qwen2.5-0.5b-full-b4-s2048"}) {
    const std::string dir = kBenchModels + c;
    const plan::Plan p = plan::make_plan(dir, {dir + "/args.json"}, {});
    bool padded = false;
    const std::vector<std::string> want = {
        "--only",
        "model",
        "--model-linears",
        plan::bench_linears_argument(plan::projections(p.model), padded),
        "--model-name",
        p.model.name,
        "--train-tokens",
        std::to_string(
            plan::training_gemm_tokens(p.settings.micro_batch.value, p.settings.seq_len.value))};
    std::ifstream in(std::string(HALO_PLAN_DIR) + "/../../bench/models/" + c + ".args");
    REQUIRE(in);
    std::vector<std::string> got;
    for (std::string line; std::getline(in, line);)
      got.push_back(line);
    CHECK(got == want);
  }
}

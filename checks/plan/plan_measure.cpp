// SPDX-License-Identifier: MIT
// halo-doctor plan --measure (include/halo/plan.hpp plan::measure): runs
// checks/plan/plan_measure.py under the user's interpreter in a child process with a time limit
// (checks/common/child_run.hpp run_python: the safe path, a private working directory holding only
// the model's config.json, the sudo user, offline), stdin and stderr on /dev/null, and reads its
// JSON lines. The measuring itself is PyTorch's documented API: torch.cuda.max_memory_allocated(),
// max_memory_reserved(), mem_get_info().
#include "plan_measure.hpp"

#include "child_run.hpp"

#include <halo/error.hpp>
#include <halo/io.hpp>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <functional>
#include <limits>

namespace halo::probes {
namespace {

constexpr std::size_t kMaxOutputBytes = std::size_t{256} * 1024;
/// The most of a config.json copied for the child (a config is a few KiB; src/plan/model.cpp
/// reads at most this much too).
constexpr std::size_t kMaxConfigBytes = std::size_t{1} << 20;
constexpr int kSteps = 3; // step 1 makes the optimizer states; the peak is in step 2 or later

std::optional<std::int64_t> non_negative(const nlohmann::json& j, const char* key) {
  if (!j.contains(key) || !j[key].is_number_integer()) return std::nullopt;
  const auto v = j[key].get<std::int64_t>();
  if (v < 0) return std::nullopt;
  return v;
}

std::string str(const nlohmann::json& j, const char* key) {
  return j.contains(key) && j[key].is_string() ? j[key].get<std::string>().substr(0, 300)
                                               : std::string();
}

std::int64_t item_bytes(const plan::Plan& p, std::string_view key) {
  for (const auto& it : p.estimate.items)
    if (it.key == key) return it.bytes;
  return 0;
}

/// The words of one progress message of plan_measure.py ({"progress": {...}}), or "" for a line
/// that is none. Numbers are formatted here; the one string (`phase`) is cut to 120 bytes.
std::string progress_text(std::string_view line) {
  auto j = nlohmann::json::parse(line, nullptr, false);
  if (!j.is_object() || !j.contains("progress") || !j["progress"].is_object()) return {};
  const nlohmann::json& g = j["progress"];
  const auto layers = non_negative(g, "layers");
  const std::string who = layers ? fmt::format("{} layers: ", *layers) : std::string();
  const auto step = non_negative(g, "step");
  const auto steps = non_negative(g, "steps");
  if (step && steps) {
    const double t =
        g.contains("step_s") && g["step_s"].is_number() ? g["step_s"].get<double>() : -1.0;
    return fmt::format("{}step {} of {} done{}", who, *step, *steps,
                       t >= 0 && t < 1e9 ? fmt::format(" ({:.1f} s)", t) : std::string());
  }
  const auto alloc = non_negative(g, "peak_allocated");
  const auto resv = non_negative(g, "peak_reserved");
  if (alloc && resv)
    return fmt::format("{}measured: peak {:.2f} GiB allocated, {:.2f} GiB reserved", who,
                       static_cast<double>(*alloc) / (1 << 30),
                       static_cast<double>(*resv) / (1 << 30));
  const std::string phase = str(g, "phase").substr(0, 120);
  return phase.empty() ? std::string() : who + phase;
}

plan::Measurement measure_plan(const plan::Plan& p, const std::string& given, double timeout_s,
                               const std::function<void(std::string_view)>& progress) {
  plan::Measurement m;
  m.layers = p.model.num_layers;
  // What one process on one GPU cannot reproduce is refused with the reason, never measured as a
  // different run (issue 47 §5): ZeRO/FSDP sharding and offload spread the states, gradients or
  // weights over processes or the host; plan_measure.py builds no modules_to_save copies.
  const plan::TrainSettings& rs = p.settings;
  if ((rs.num_processes.value > 1 && rs.shard_stage.value > 0) || rs.offload_optimizer.value ||
      rs.offload_params.value) {
    m.status = "not_measured";
    m.reason = fmt::format("ZeRO/FSDP sharding or offload (stage {}, {} processes) cannot be "
                           "reproduced by one process on one GPU; measuring it would measure a "
                           "different run",
                           rs.shard_stage.value, rs.num_processes.value);
    return m;
  }
  if (!rs.modules_to_save.value.empty()) {
    m.status = "not_measured";
    m.reason = "modules_to_save is not reproduced by the measuring script; measuring without it "
               "would measure a different run";
    return m;
  }
  // torchtune's QLoRA quantizes with torchao (its qlora_* builders wrap the weights in torchao's
  // NF4Tensor), not bitsandbytes' Linear4bit, which is what the script builds.
  if (rs.method.value == plan::Method::qlora &&
      rs.config_format.find("torchtune") != std::string::npos) {
    m.status = "not_measured";
    m.reason = "torchtune's QLoRA quantizes with torchao's NF4Tensor; the measuring script "
               "reproduces bitsandbytes' 4-bit layers only, which would measure a different run";
    return m;
  }
  // The script computes the model's own loss over all logits (transformers' ForCausalLMLoss); a
  // chunked loss (torchtune's CEWithChunkedOutputLoss) never holds them all.
  if (rs.chunked_loss.value) {
    m.status = "not_measured";
    m.reason = "the configured loss is computed in chunks, which the measuring script does not "
               "reproduce (it computes the model's own loss over all logits): measuring it would "
               "measure a different run";
    return m;
  }
  const auto chosen = choose_python(given);
  const std::string& python = chosen.first;
  const std::string& how = chosen.second;
  m.python = python.empty() ? how : fmt::format("{} ({})", python, how);
  if (python.empty() || !executable(python)) {
    m.status = "not_measured";
    m.reason =
        python.empty() ? "no Python interpreter: " + how : python + " is not an executable file";
    return m;
  }
  const plan::TrainSettings& s = p.settings;
  nlohmann::json spec = {
      // The named file, copied into the child's private working directory as config.json
      // (run_python): `--model cfg/llama-8b.json` builds that model, never a config.json beside
      // it, and nothing else of the model's directory is read.
      {"config_dir", "."},
      {"method", plan::to_string(s.method.value)},
      {"micro_batch", s.micro_batch.value},
      {"seq_len", s.seq_len.value},
      {"grad_accum", s.grad_accum.value},
      {"optim", s.optim.value},
      {"gradient_checkpointing", s.gradient_checkpointing.value},
      {"attention", plan::to_string(s.attention.value)},
      {"load_dtype", s.load_dtype.value},
      {"bf16", s.bf16.value},
      {"fp16", s.fp16.value},
      {"lora_r", s.lora_r.value},
      {"lora_targets", s.lora_targets.value},
      {"lora_dropout", s.lora_dropout.value},
      {"load_in_8bit", s.load_in_8bit.value},
      {"steps", kSteps},
      {"estimate_bytes", p.estimate.required_bytes},
  };
  const std::string spec_text = spec.dump();
  const std::string script(plan_measure_script());
  std::string config;
  try {
    config = read_input_file(p.model.path, kMaxConfigBytes);
  } catch (const InputError& e) {
    m.status = "error";
    m.reason = e.what();
    return m;
  }
  std::function<void(std::string_view)> on_line;
  if (progress) {
    progress(fmt::format("running {} (killed after {:.0f} s)", python, timeout_s));
    on_line = [&progress](std::string_view line) {
      if (std::string text = progress_text(line); !text.empty()) progress(text);
    };
  }
  const PythonRun confined = run_python(python, script, {spec_text}, timeout_s, kMaxOutputBytes,
                                        {{"config.json", std::move(config)}}, on_line);
  const child::Result& run = confined.run;
  if (!confined.how.empty()) m.python += "; " + confined.how;
  if (!run.started()) {
    m.status = "error";
    m.reason = "could not start it: " + run.start_error;
    return m;
  }
  // The answer is the last line that is a JSON object with a status.
  nlohmann::json j;
  const std::vector<std::string> lines = child::complete_lines(run.out);
  for (auto it = lines.rbegin(); it != lines.rend() && j.is_null(); ++it) {
    auto parsed = nlohmann::json::parse(*it, nullptr, false);
    if (parsed.is_object() && parsed.contains("status") && parsed["status"].is_string())
      j = std::move(parsed);
  }
  if (j.is_null()) {
    m.status = "error";
    m.reason = fmt::format("the measuring script gave no answer ({})",
                           child::describe_end(run, timeout_s));
    return m;
  }
  m.status = str(j, "status");
  m.reason = str(j, "reason");
  m.torch = str(j, "torch");
  m.device = str(j, "device").substr(0, 80);
  m.hip = j.contains("hip") && j["hip"].is_string();
  if (m.status == "oom") {
    m.reason = fmt::format("out of memory{}: {}",
                           non_negative(j, "layers").value_or(0) > 0
                               ? fmt::format(" with {} layers", j["layers"].get<std::int64_t>())
                               : std::string(),
                           m.reason);
    return m;
  }
  if (m.status != "ok") {
    if (m.status != "not_measured" && m.status != "error") {
      m.reason = fmt::format("unknown status '{}' ({})", m.status, m.reason);
      m.status = "error";
    }
    return m;
  }
  // The runs: one of the full model, or the 2- and 4-layer copies.
  struct Run {
    std::int64_t layers, allocated, reserved, context;
    double step_s;
    std::string as; ///< what the script built: the optimizer, the quantized layers
  };
  std::vector<Run> runs;
  if (j.contains("runs") && j["runs"].is_array())
    for (const auto& r : j["runs"]) {
      if (!r.is_object()) continue;
      const auto layers = non_negative(r, "layers");
      const auto alloc = non_negative(r, "peak_allocated");
      const auto resv = non_negative(r, "peak_reserved");
      const auto ctx = non_negative(r, "non_allocator_bytes");
      double step = 0;
      if (r.contains("step_times_s") && r["step_times_s"].is_array() &&
          !r["step_times_s"].empty() && r["step_times_s"].back().is_number())
        step = r["step_times_s"].back().get<double>();
      if (!layers || !alloc || !resv || *resv < *alloc) continue;
      // "measured_as": {"optimizer": "...", "weights": "..."}, words of the script's (bounded).
      std::string as;
      if (r.contains("measured_as") && r["measured_as"].is_object())
        for (const char* k : {"weights", "optimizer"})
          if (std::string v = str(r["measured_as"], k); !v.empty())
            as += (as.empty() ? "" : "; ") + v.substr(0, 160);
      runs.push_back({*layers, *alloc, *resv, ctx.value_or(0), step, as});
    }
  m.reduced = j.value("reduced", false);
  const auto fail = [&m](const std::string& why) {
    m.status = "error";
    m.reason = why;
    return m;
  };
  if (!m.reduced) {
    if (runs.size() != 1) return fail("the answer holds no usable measurement of the model");
    m.peak_allocated = runs[0].allocated;
    m.peak_reserved = runs[0].reserved;
    m.context_bytes = runs[0].context;
    m.step_s = runs[0].step_s;
    m.detail = fmt::format("{} layers measured", runs[0].layers);
    if (!runs[0].as.empty()) m.detail += "; built as: " + runs[0].as;
  } else {
    if (runs.size() != 2 || runs[0].layers == runs[1].layers)
      return fail("the reduced-depth answer does not hold two depths");
    const Run& a = runs[0].layers < runs[1].layers ? runs[0] : runs[1];
    const Run& b = runs[0].layers < runs[1].layers ? runs[1] : runs[0];
    // Allocated memory grows linearly in the layer count (each layer adds its weights,
    // gradients, states and kept activations); reserved memory does not (the caching
    // allocator's segments), so the estimate's reserve goes on top of the extrapolation.
    const double per_layer =
        static_cast<double>(b.allocated - a.allocated) / static_cast<double>(b.layers - a.layers);
    const double full =
        static_cast<double>(a.allocated) + per_layer * static_cast<double>(m.layers - a.layers);
    if (!(full > 0) || full > 9.0e18) return fail("the extrapolation is out of range");
    m.peak_allocated = static_cast<std::int64_t>(full);
    m.peak_reserved = m.peak_allocated + item_bytes(p, "allocator_reserve");
    m.context_bytes = std::max(a.context, b.context);
    m.detail = fmt::format("{} and {} layers measured ({:.2f} and {:.2f} GiB allocated), "
                           "extrapolated to {} layers; the reserve is the estimate's",
                           a.layers, b.layers, static_cast<double>(a.allocated) / (1 << 30),
                           static_cast<double>(b.allocated) / (1 << 30), m.layers);
    if (!b.as.empty()) m.detail += "; built as: " + b.as;
  }
  m.device_bytes = m.peak_reserved + m.context_bytes;
  return m;
}

} // namespace
} // namespace halo::probes

namespace halo::plan {

Measurement measure(const Plan& p, const std::string& given, double timeout_s,
                    const std::function<void(std::string_view)>& progress) {
  return probes::measure_plan(p, given, timeout_s, progress);
}

} // namespace halo::plan

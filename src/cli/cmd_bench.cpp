// SPDX-License-Identifier: MIT
// halo-doctor bench: runs the separately built GPU microbenchmark (halo-bench) with the same
// arguments. The main binary never links HIP or CUDA.
#include "commands.hpp"
#include "common.hpp"

#include <halo/error.hpp>
#include <halo/io.hpp>
#include <halo/plan.hpp>
#include <halo/result.hpp>
#include <halo/sanitize.hpp>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <optional>
#include <string_view>

namespace halo::cli {

namespace {
int exec_bench(const std::vector<std::string>& args) {
  std::error_code ec;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  std::vector<std::filesystem::path> candidates;
  if (!ec) {
    candidates.push_back(self.parent_path() / "halo-bench");
    candidates.push_back(self.parent_path() / "bench" / "halo-bench");
  }
  for (const auto& c : candidates) {
    if (::access(c.c_str(), X_OK) != 0) continue;
    std::vector<std::string> argv_s{c.string()};
    argv_s.insert(argv_s.end(), args.begin(), args.end());
    std::vector<char*> argv;
    argv.reserve(argv_s.size() + 1);
    for (auto& s : argv_s)
      argv.push_back(s.data());
    argv.push_back(nullptr);
    ::execv(c.c_str(), argv.data());
    spdlog::error("cannot run {}: {}", c.string(), std::strerror(errno));
    return exit_code::internal;
  }
  write_stderr_text(
      "halo-doctor bench: the GPU benchmark (halo-bench) is not built next to halo-doctor.\n"
      "Build it on the GPU machine with its ROCm or CUDA toolchain:\n"
      "  cmake -S . -B build -DHALO_BENCH=hip -DCMAKE_HIP_ARCHITECTURES=gfx1151   # or "
      "-DHALO_BENCH=cuda\n"
      "  cmake --build build -j && sudo cmake --install build\n"
      "See docs/bench.md.\n");
  return exit_code::usage;
}
} // namespace

/// The value of option `name` at args[i] ("--name VALUE" or "--name=VALUE"); removes it from
/// args. nullopt when args[i] is not that option. InputError when the value is missing.
std::optional<std::string> take_option(std::vector<std::string>& args, std::size_t i,
                                       std::string_view name) {
  const std::string& a = args[i];
  if (a == name) {
    if (i + 1 >= args.size()) throw InputError(fmt::format("bench: {} needs a value", name));
    std::string v = args[i + 1];
    args.erase(args.begin() + static_cast<std::ptrdiff_t>(i),
               args.begin() + static_cast<std::ptrdiff_t>(i) + 2);
    return v;
  }
  if (a.size() > name.size() && a.compare(0, name.size(), name) == 0 && a[name.size()] == '=') {
    std::string v = a.substr(name.size() + 1);
    args.erase(args.begin() + static_cast<std::ptrdiff_t>(i));
    return v;
  }
  return std::nullopt;
}

std::int64_t positive(const std::string& text, std::string_view name) {
  std::int64_t v = 0;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || ptr != text.data() + text.size() || v < 1 || v > (1 << 26))
    throw InputError(fmt::format("bench: {} {}: not a whole number from 1 to 67108864", name,
                                 terminal_safe(text)));
  return v;
}

/// `halo-doctor bench --model DIR [--config FILE]... [--batch N] [--seq N]`: reads the model and
/// the training run with plan's readers (src/plan), turns them into halo-bench's model part
/// arguments (the projections, the training token count) and keeps every other argument.
std::vector<std::string> model_arguments(std::vector<std::string> args) {
  PlanOptions po;
  for (std::size_t i = 0; i < args.size();) {
    if (auto v = take_option(args, i, "--model")) {
      po.model = *v;
    } else if (auto c = take_option(args, i, "--config")) {
      po.configs.push_back(*c);
    } else if (auto b = take_option(args, i, "--batch")) {
      po.batch = positive(*b, "--batch");
    } else if (auto q = take_option(args, i, "--seq")) {
      po.seq = positive(*q, "--seq");
    } else {
      ++i;
    }
  }
  if (po.model.empty()) {
    if (!po.configs.empty() || po.batch != 0 || po.seq != 0)
      throw InputError("bench: --config, --batch and --seq need --model (the model to time)");
    return args;
  }
  const auto plan = build_plan(po);
  const auto ps = plan::projections(plan->model);
  bool padded = false;
  const std::string linears = plan::bench_linears_argument(ps, padded);
  const std::int64_t tokens =
      plan::training_gemm_tokens(plan->settings.micro_batch.value, plan->settings.seq_len.value);
  std::string name;
  for (const char c : plan->model.name.substr(0, 128))
    name += (c > 0x20 && c < 0x7f) ? c : '_';
  write_stderr_text(fmt::format(
      "halo-doctor bench: {} ({}): {} projections, training GEMM M = {} tokens (micro-batch {} "
      "from {}, sequence {} from {}){}\n",
      terminal_safe(name), terminal_safe(plan->model.path), ps.size(), tokens,
      plan->settings.micro_batch.value, terminal_safe(plan->settings.micro_batch.origin.text),
      plan->settings.seq_len.value, terminal_safe(plan->settings.seq_len.origin.text),
      padded ? "; some dimensions rounded up to the kernels' multiples (N 16, K 32)" : ""));
  const bool has_only = std::any_of(args.begin(), args.end(), [](const std::string& a) {
    return a == "--only" || a.rfind("--only=", 0) == 0;
  });
  if (!has_only) args.insert(args.end(), {"--only", "model"});
  args.insert(args.end(), {"--model-linears", linears, "--model-name", name, "--train-tokens",
                           std::to_string(tokens)});
  return args;
}

Runner add_bench_command(CLI::App& app) {
  auto* sub =
      app.add_subcommand("bench", "Run the GPU microbenchmark (halo-bench; see docs/bench.md); "
                                  "arguments after `bench` go to it, except --model DIR, "
                                  "--config FILE, --batch N, --seq N, which time the model's own "
                                  "projections (training and generation) with plan's readers");
  sub->allow_extras();
  sub->prefix_command();
  return [sub]() { return *sub ? exec_bench(model_arguments(sub->remaining())) : -1; };
}

} // namespace halo::cli

// SPDX-License-Identifier: MIT
// halo-doctor bench: runs the separately built GPU microbenchmark (halo-bench) with the same
// arguments. The main binary never links HIP or CUDA.
#include "commands.hpp"

#include <halo/result.hpp>

#include <spdlog/spdlog.h>

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iostream>

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
  std::cerr
      << "halo-doctor bench: the GPU benchmark (halo-bench) is not built next to halo-doctor.\n"
         "Build it on the GPU machine with its ROCm or CUDA toolchain:\n"
         "  cmake -S . -B build -DHALO_BENCH=hip -DCMAKE_HIP_ARCHITECTURES=gfx1151   # or "
         "-DHALO_BENCH=cuda\n"
         "  cmake --build build -j && sudo cmake --install build\n"
         "See docs/bench.md.\n";
  return exit_code::usage;
}
} // namespace

Runner add_bench_command(CLI::App& app) {
  auto* sub =
      app.add_subcommand("bench", "Run the GPU microbenchmark (halo-bench; see docs/bench.md); "
                                  "arguments after `bench` go to it");
  sub->allow_extras();
  sub->prefix_command();
  return [sub]() { return *sub ? exec_bench(sub->remaining()) : -1; };
}

} // namespace halo::cli

// SPDX-License-Identifier: MIT
// halo-doctor plan's readers of untrusted files: a model's config.json (then the parameter count
// and the memory estimate over what it describes) and a training configuration (YAML through
// yaml-cpp, JSON through nlohmann then yaml-cpp). The first byte picks which; the rest is the file.
#include "fuzz_common.hpp"

#include <halo/error.hpp>
#include <halo/plan.hpp>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace {
const std::filesystem::path& dir() {
  static const std::filesystem::path d = [] {
    const char* t = std::getenv("TMPDIR");
    std::filesystem::path p = std::filesystem::path(t != nullptr ? t : "/tmp") /
                              ("halo-fuzz-plan-" + std::to_string(::getpid()));
    std::filesystem::create_directories(p);
    return p;
  }();
  return d;
}
} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace halo;
  if (size == 0) return 0;
  const int which = data[0] % 3;
  const std::string_view body = fuzz::text(data + 1, size - 1);
  const std::filesystem::path file = dir() / (which == 0   ? "config.json"
                                              : which == 1 ? "train.yml"
                                                           : "train.json");
  {
    std::ofstream out(file, std::ios::binary | std::ios::trunc);
    out.write(body.data(), static_cast<std::streamsize>(body.size()));
  }
  try {
    if (which == 0) {
      const plan::ModelConfig m = plan::load_model(file.string());
      const plan::ParamCount p = plan::count_parameters(m);
      plan::Overrides o;
      o.method = static_cast<plan::Method>(size % 3);
      o.gradient_checkpointing = (size & 4) != 0;
      const plan::TrainSettings s = plan::load_train_settings({}, o);
      (void)plan::estimate_memory(m, p, s);
    } else {
      (void)plan::load_train_settings({file.string()}, {});
    }
  } catch (const InputError&) {
  }
  return 0;
}

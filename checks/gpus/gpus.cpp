// SPDX-License-Identifier: MIT
#include "gpus.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <charconv>
#include <utility>

namespace halo::probes {
namespace {

/// A device list as ROCr (ROCR_VISIBLE_DEVICES) and HIP (HIP_VISIBLE_DEVICES, else
/// CUDA_VISIBLE_DEVICES) read it: comma-separated indices into the devices the layer below
/// left; the list stops at the first entry that is not a valid, unused index (HIP's
/// env_variables reference: "HIP_VISIBLE_DEVICES=0,1,-1,2" exposes devices 0 and 1); an empty
/// value or -1 hides every device. UUID entries (GPU-...) are not resolved here: `uuid` is set.
std::vector<std::int64_t> visible_list(std::string_view value, std::int64_t count, bool& uuid) {
  std::vector<std::int64_t> out;
  while (true) {
    const auto comma = value.find(',');
    std::string token(value.substr(0, comma));
    while (!token.empty() && token.front() == ' ')
      token.erase(token.begin());
    while (!token.empty() && token.back() == ' ')
      token.pop_back();
    if (token.rfind("GPU-", 0) == 0) {
      uuid = true;
      break;
    }
    std::int64_t v = -1;
    const auto [ptr, ec] = std::from_chars(token.data(), token.data() + token.size(), v);
    if (ec != std::errc() || ptr != token.data() + token.size() || v < 0 || v >= count ||
        std::find(out.begin(), out.end(), v) != out.end())
      break;
    out.push_back(v);
    if (comma == std::string_view::npos) break;
    value.remove_prefix(comma + 1);
  }
  return out;
}

} // namespace

std::string gpu_list(const std::vector<std::int64_t>& idx) {
  return fmt::format("{} {}", idx.size() == 1 ? "GPU" : "GPUs", fmt::join(idx, ", "));
}

VisibleGpus visible_gpus(const FactSet& facts) {
  const std::int64_t n = bounded_gpu_count(facts);
  std::vector<std::int64_t> rocr(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i)
    rocr[static_cast<std::size_t>(i)] = i;
  std::vector<std::string> basis;
  bool uuid = false;
  if (auto v = facts.get<std::string>(fact_keys::env::key("rocr_visible_devices"))) {
    std::vector<std::int64_t> picked;
    for (auto k : visible_list(*v, n, uuid))
      picked.push_back(rocr[static_cast<std::size_t>(k)]);
    rocr = picked;
    basis.push_back("ROCR_VISIBLE_DEVICES=" + *v);
  }
  std::vector<std::int64_t> hip = rocr;
  for (const auto& [var, key] :
       {std::pair{"HIP_VISIBLE_DEVICES", fact_keys::env::key("hip_visible_devices")},
        std::pair{"CUDA_VISIBLE_DEVICES", fact_keys::env::key("cuda_visible_devices")}}) {
    if (auto v = facts.get<std::string>(key)) {
      std::vector<std::int64_t> picked;
      for (auto k : visible_list(*v, static_cast<std::int64_t>(rocr.size()), uuid))
        picked.push_back(rocr[static_cast<std::size_t>(k)]);
      hip = picked;
      basis.push_back(fmt::format("{}={}", var, *v));
      break; // HIP reads CUDA_VISIBLE_DEVICES only when HIP_VISIBLE_DEVICES is unset
    }
  }
  const std::string src = basis.empty()
                              ? std::string("derived: every GPU (no *_VISIBLE_DEVICES set)")
                              : fmt::format("derived: {}", fmt::join(basis, ", "));
  return VisibleGpus{std::move(rocr), std::move(hip), uuid, src};
}

} // namespace halo::probes

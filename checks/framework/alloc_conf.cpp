// SPDX-License-Identifier: MIT
// The allocator settings string as c10 reads it (checks/framework/alloc_conf.hpp). Source:
// c10/core/AllocatorConfig.cpp (lexArgs, consumeToken, parseArgs and the parse* helpers).
#include "alloc_conf.hpp"

#include <fmt/format.h>

#include <charconv>
#include <cstdint>
#include <optional>

namespace halo::probes {
namespace {

constexpr std::size_t kMaxInput = 4096;
constexpr std::size_t kMaxProblems = 16;
constexpr std::int64_t kMinSplitMb = 20;          // kLargeBuffer (20 MiB) / 1 MiB
constexpr std::int64_t kMaxRegisterThreads = 128; // pinned_max_register_threads()

std::vector<std::string> lex(std::string_view env) {
  std::vector<std::string> out;
  std::string buf;
  for (const char c : env.substr(0, kMaxInput)) {
    if (c == ',' || c == ':' || c == '[' || c == ']') {
      if (!buf.empty()) out.push_back(std::move(buf));
      buf.clear();
      out.emplace_back(1, c);
    } else if (c != ' ') {
      buf.push_back(c);
    }
  }
  if (!buf.empty()) out.push_back(std::move(buf));
  return out;
}

/// std::stoi's reading: leading digits (and sign) count, trailing text is ignored; nullopt where
/// stoi would throw (no digits, out of range).
std::optional<std::int64_t> stoi_like(const std::string& s) {
  std::size_t start = 0;
  while (start < s.size() && (s[start] == '\t' || s[start] == '\n'))
    ++start;
  std::int64_t v = 0;
  const char* b = s.data() + start;
  if (start < s.size() && s[start] == '+') ++b;
  const auto [p, ec] = std::from_chars(b, s.data() + s.size(), v);
  if (ec != std::errc() || p == b || v < INT32_MIN || v > INT32_MAX) return std::nullopt;
  return v;
}

std::optional<double> stod_like(const std::string& s) {
  double v = 0;
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p == s.data()) return std::nullopt;
  return v;
}

bool power_of_two(std::int64_t v) {
  return v > 0 && (v & (v - 1)) == 0;
}

bool is_bool_key(const std::string& k) {
  return k == "expandable_segments" || k == "release_lock_on_hipmalloc" ||
         k == "release_lock_on_cudamalloc" || k == "pinned_use_hip_host_register" ||
         k == "pinned_use_cuda_host_register" || k == "pinned_use_background_threads";
}

} // namespace

std::vector<std::string> alloc_conf_problems(std::string_view conf) {
  const std::vector<std::string> t = lex(conf);
  std::vector<std::string> out;
  // c10 stops at the first TORCH_CHECK; the doctor reports that one, as PyTorch will.
  auto fail = [&](std::string msg) {
    out.push_back(std::move(msg));
    return out;
  };
  for (std::size_t i = 0; i < t.size() && out.size() < kMaxProblems; ++i) {
    const std::string& key = t[i];
    const bool known = key == "max_split_size_mb" || key == "max_non_split_rounding_mb" ||
                       key == "garbage_collection_threshold" || key == "roundup_power2_divisions" ||
                       key == "backend" || key == "pinned_num_register_threads" || is_bool_key(key);
    if (!known) return fail("Unrecognized CachingAllocator option: " + key);
    if (i + 1 >= t.size() || t[i + 1] != ":")
      return fail("Error parsing CachingAllocator::AllocatorConfig settings, expected :");
    i += 2;
    if (i >= t.size()) return fail(fmt::format("Error, expecting {} value", key));
    const std::string& v = t[i];
    if (key == "max_split_size_mb" || key == "max_non_split_rounding_mb") {
      const auto n = stoi_like(v);
      if (!n) return fail(fmt::format("{}: '{}' is not a number (std::stoi throws)", key, v));
      // c10 stores stoi's int in a size_t: a negative value wraps to a huge one and passes.
      if (*n >= 0 && *n < kMinSplitMb)
        return fail(
            fmt::format("CachingAllocator option {} too small, must be >= {}", key, kMinSplitMb));
    } else if (key == "garbage_collection_threshold") {
      const auto d = stod_like(v);
      if (!d) return fail(fmt::format("{}: '{}' is not a number (std::stod throws)", key, v));
      if (!(*d > 0 && *d < 1.0))
        return fail("garbage_collect_threshold is invalid, set it in (0.0, 1.0)");
    } else if (key == "roundup_power2_divisions") {
      if (v == "[") {
        // [interval:divisions, ..., >:divisions]
        while (++i < t.size() && t[i] != "]") {
          const std::string& interval = t[i];
          if (i + 2 >= t.size() || t[i + 1] != ":")
            return fail("Error parsing CachingAllocator::AllocatorConfig settings, expected :");
          i += 2;
          const auto div = stoi_like(t[i]);
          if (!div || !(*div == 0 || power_of_two(*div)))
            return fail("For roundups, the divisons has to be power of 2 or 0 to disable roundup ");
          if (interval != ">") {
            const auto iv = stoi_like(interval);
            if (!iv || !power_of_two(*iv))
              return fail("For roundups, the intervals have to be power of 2 ");
          }
          if (i + 1 < t.size() && t[i + 1] != "]") {
            if (t[i + 1] != ",")
              return fail("Error parsing CachingAllocator::AllocatorConfig settings, expected ,");
            ++i;
          }
        }
        if (i >= t.size()) return fail("Error parsing roundup_power2_divisions value");
      } else {
        const auto n = stoi_like(v);
        if (!n || !power_of_two(*n))
          return fail("For roundups, the divisons has to be power of 2 ");
      }
    } else if (key == "backend") {
      // "native" or the device's MallocAsync backend (cudaMallocAsync; hipified builds name it
      // hipMallocAsync).
      if (v != "native" && v != "cudaMallocAsync" && v != "hipMallocAsync")
        return fail("Unknown allocator backend, options are native and hipMallocAsync");
    } else if (key == "pinned_num_register_threads") {
      const auto n = stoi_like(v);
      if (!n || !power_of_two(*n)) return fail("Number of register threads has to be power of 2 ");
      if (*n > kMaxRegisterThreads)
        return fail(fmt::format("Number of register threads should be less than or equal to {}",
                                kMaxRegisterThreads));
    } else if (v != "True" && v != "False") {
      return fail(fmt::format("Expected a single True/False argument for {}", key));
    }
    if (i + 1 < t.size()) {
      if (t[i + 1] != ",")
        return fail("Error parsing CachingAllocator::AllocatorConfig settings, expected ,");
      ++i;
    }
  }
  return out;
}

} // namespace halo::probes

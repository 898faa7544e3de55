// SPDX-License-Identifier: MIT
#include "halo_bench/host_memory.hpp"

#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace halo_bench {
namespace {

std::optional<std::uint64_t> parse_u64(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) {
    text.remove_prefix(1);
  }
  std::uint64_t value = 0;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc{} || ptr == text.data()) {
    return std::nullopt;
  }
  return value;
}

std::optional<std::uint64_t> read_u64_file(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::string line;
  if (!in || !std::getline(in, line)) {
    return std::nullopt;
  }
  return parse_u64(line);
}

std::optional<std::uint64_t> first_amdgpu_value(const char* file) {
  std::error_code ec;
  const std::filesystem::path drm = "/sys/class/drm";
  if (!std::filesystem::is_directory(drm, ec)) {
    return std::nullopt;
  }
  std::vector<std::filesystem::path> cards;
  for (const auto& entry : std::filesystem::directory_iterator(drm, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.starts_with("card") && name.find('-') == std::string::npos) {
      cards.push_back(entry.path());
    }
  }
  std::sort(cards.begin(), cards.end());
  for (const auto& card : cards) {
    if (auto value = read_u64_file(card / "device" / file)) {
      return value;
    }
  }
  return std::nullopt;
}

} // namespace

std::optional<std::uint64_t> parse_meminfo_available(std::string_view text) {
  std::size_t pos = 0;
  while (pos < text.size()) {
    const std::size_t end = std::min(text.find('\n', pos), text.size());
    const std::string_view line = text.substr(pos, end - pos);
    if (line.starts_with("MemAvailable:")) {
      std::string_view rest = line.substr(13);
      const auto kb = parse_u64(rest);
      if (!kb || rest.find("kB") == std::string_view::npos) {
        return std::nullopt;
      }
      return *kb * 1024U;
    }
    pos = end + 1;
  }
  return std::nullopt;
}

std::optional<std::uint64_t> read_mem_available() {
  std::ifstream in("/proc/meminfo");
  if (!in) {
    return std::nullopt;
  }
  std::stringstream buffer;
  buffer << in.rdbuf();
  return parse_meminfo_available(buffer.str());
}

std::optional<std::uint64_t> read_ttm_limit_bytes() {
  const auto pages = read_u64_file("/sys/module/ttm/parameters/pages_limit");
  if (!pages) {
    return std::nullopt;
  }
  const long page_size = sysconf(_SC_PAGESIZE);
  return *pages * static_cast<std::uint64_t>(page_size > 0 ? page_size : 4096);
}

std::optional<std::uint64_t> read_gtt_total_bytes() {
  return first_amdgpu_value("mem_info_gtt_total");
}

std::optional<std::uint64_t> read_vram_total_bytes() {
  return first_amdgpu_value("mem_info_vram_total");
}

std::uint64_t ceiling_cap_bytes(std::optional<std::uint64_t> mem_available,
                                std::uint64_t reserve_bytes,
                                std::optional<std::uint64_t> pool_bytes) noexcept {
  std::uint64_t cap = UINT64_MAX;
  if (mem_available) {
    cap = *mem_available > reserve_bytes ? *mem_available - reserve_bytes : 0;
  }
  if (pool_bytes) {
    cap = std::min(cap, *pool_bytes);
  }
  return cap == UINT64_MAX ? 0 : cap;
}

} // namespace halo_bench

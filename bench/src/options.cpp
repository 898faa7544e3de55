// SPDX-License-Identifier: MIT
#include "halo_bench/options.hpp"

#include <algorithm>
#include <charconv>
#include <limits>

namespace halo_bench {
namespace {

std::vector<std::string_view> split(std::string_view text, char sep) {
  std::vector<std::string_view> out;
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t end = std::min(text.find(sep, start), text.size());
    out.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

[[noreturn]] void fail(std::string_view option, const std::string& what) {
  throw UsageError(std::string(option) + ": " + what);
}

/// Whole decimal number, no sign, no spaces.
bool parse_int(std::string_view text, std::int64_t& out) {
  if (text.empty() || text.size() > 18) return false;
  const auto* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, out);
  return ec == std::errc() && ptr == end && out >= 0;
}

std::string quoted(std::string_view text) {
  std::string out = "'";
  for (const char c : text.substr(0, 64)) {
    out += (c >= 0x20 && c < 0x7f) ? c : '?';
  }
  return out + (text.size() > 64 ? "...'" : "'");
}

} // namespace

void validate_gemm_shape(const GemmShape& s, std::string_view option) {
  const std::string name =
      std::to_string(s.m) + "x" + std::to_string(s.n) + "x" + std::to_string(s.k);
  for (const std::int64_t d : {s.m, s.n, s.k}) {
    if (d < 1 || d > max_gemm_dim) {
      fail(option,
           "shape " + name + ": every dimension must be from 1 to " + std::to_string(max_gemm_dim));
    }
  }
  if (s.m % 16 != 0 || s.n % 16 != 0 || s.k % 32 != 0) {
    fail(option, "shape " + name + " unsupported: need M % 16 == 0, N % 16 == 0, K % 32 == 0");
  }
  if (s.m * s.k > max_gemm_elements || s.n * s.k > max_gemm_elements ||
      s.m * s.n > max_gemm_elements) {
    fail(option, "shape " + name + ": a matrix exceeds 2^31 elements");
  }
}

std::vector<GemmShape> parse_gemm_shapes(std::string_view text, std::string_view option) {
  std::vector<GemmShape> shapes;
  for (const std::string_view item : split(text, ',')) {
    if (item.empty()) continue;
    const auto parts = split(item, 'x');
    GemmShape s;
    if (parts.size() != 3 || !parse_int(parts[0], s.m) || !parse_int(parts[1], s.n) ||
        !parse_int(parts[2], s.k)) {
      fail(option, "expected MxNxK[,MxNxK...], got " + quoted(item));
    }
    validate_gemm_shape(s, option);
    shapes.push_back(s);
  }
  if (shapes.empty()) fail(option, "no shape given");
  return shapes;
}

std::vector<std::string> parse_name_list(std::string_view text,
                                         std::span<const std::string_view> known,
                                         std::string_view option) {
  std::vector<std::string> out;
  for (const std::string_view item : split(text, ',')) {
    if (item.empty()) continue;
    if (std::find(known.begin(), known.end(), item) == known.end()) {
      std::string names;
      for (const auto k : known) {
        names += (names.empty() ? "" : ", ") + std::string(k);
      }
      fail(option, "unknown name " + quoted(item) + " (known: " + names + ")");
    }
    if (std::find(out.begin(), out.end(), item) == out.end()) out.emplace_back(item);
  }
  if (out.empty()) fail(option, "empty list");
  return out;
}

std::vector<std::int64_t> parse_int_list(std::string_view text, std::int64_t lo, std::int64_t hi,
                                         std::int64_t multiple_of, std::string_view option) {
  std::vector<std::int64_t> out;
  for (const std::string_view item : split(text, ',')) {
    if (item.empty()) continue;
    std::int64_t v = 0;
    if (!parse_int(item, v) || v < lo || v > hi) {
      fail(option, "expected whole numbers from " + std::to_string(lo) + " to " +
                       std::to_string(hi) + ", got " + quoted(item));
    }
    if (multiple_of > 1 && v % multiple_of != 0) {
      fail(option, quoted(item) + " is not a multiple of " + std::to_string(multiple_of));
    }
    out.push_back(v);
  }
  if (out.empty()) fail(option, "empty list");
  return out;
}

std::uint64_t parse_byte_size(std::string_view text, std::string_view option) {
  std::size_t digits = 0;
  while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9')
    ++digits;
  std::int64_t number = 0;
  if (!parse_int(text.substr(0, digits), number)) {
    fail(option, "expected a size such as 4K, 64M or 1G, got " + quoted(text));
  }
  const std::string_view suffix = text.substr(digits);
  std::uint64_t unit = 1;
  if (suffix.empty() || suffix == "B") {
    unit = 1;
  } else if (suffix == "K" || suffix == "KiB") {
    unit = std::uint64_t{1} << 10;
  } else if (suffix == "M" || suffix == "MiB") {
    unit = std::uint64_t{1} << 20;
  } else if (suffix == "G" || suffix == "GiB") {
    unit = std::uint64_t{1} << 30;
  } else {
    fail(option, "unknown size suffix in " + quoted(text) + " (B, K, M, G; binary units)");
  }
  const auto value = static_cast<std::uint64_t>(number);
  if (value > std::numeric_limits<std::uint64_t>::max() / unit) {
    fail(option, "size " + quoted(text) + " is too large");
  }
  return value * unit;
}

std::vector<std::uint64_t> parse_byte_sizes(std::string_view text, std::uint64_t lo,
                                            std::uint64_t hi, std::string_view option) {
  std::vector<std::uint64_t> out;
  for (const std::string_view item : split(text, ',')) {
    if (item.empty()) continue;
    const std::uint64_t v = parse_byte_size(item, option);
    if (v < lo || v > hi || v % 4 != 0) {
      fail(option, "size " + quoted(item) + " must be a multiple of 4 bytes from " +
                       std::to_string(lo) + " to " + std::to_string(hi) + " bytes");
    }
    out.push_back(v);
  }
  if (out.empty()) fail(option, "empty list");
  return out;
}

std::vector<ModelLinear> parse_model_linears(std::string_view text, std::string_view option) {
  std::vector<ModelLinear> out;
  for (const std::string_view item : split(text, ',')) {
    if (item.empty()) continue;
    const auto parts = split(item, ':');
    if (parts.size() != 3 && !(parts.size() == 4 && parts[3] == "bf16"))
      fail(option, "expected NAME:NxK:COUNT[:bf16], got " + quoted(item));
    ModelLinear l;
    l.quantized = parts.size() == 3;
    const bool name_ok = !parts[0].empty() && parts[0].size() <= 48 &&
                         std::all_of(parts[0].begin(), parts[0].end(), [](char c) {
                           return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
                         });
    const auto nk = split(parts[1], 'x');
    if (!name_ok || nk.size() != 2 || !parse_int(nk[0], l.n) || !parse_int(nk[1], l.k) ||
        !parse_int(parts[2], l.count)) {
      fail(option, "expected NAME:NxK:COUNT (NAME of a-z, 0-9, _), got " + quoted(item));
    }
    l.name = std::string(parts[0]);
    if (l.count < 1 || l.count > 65536) fail(option, quoted(item) + ": COUNT must be 1..65536");
    validate_gemm_shape(GemmShape{16, l.n, l.k}, option);
    out.push_back(std::move(l));
  }
  if (out.empty()) fail(option, "no linear layer given");
  return out;
}

} // namespace halo_bench

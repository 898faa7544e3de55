// SPDX-License-Identifier: MIT
// The bench.* facts document that `halo-doctor check --add-facts FILE` merges.
#pragma once

#include <nlohmann/json.hpp>

#include <filesystem>
#include <map>
#include <string>
#include <string_view>

namespace halo_bench {

/// Fact status values of the halo-doctor facts contract.
enum class FactStatus { ok, missing, denied, error };

/// Lower-case name of a status: "ok", "missing", "denied", "error".
std::string_view to_string(FactStatus status) noexcept;

/// One fact: value is null, bool, integer, number or string; reason is set when status != ok.
struct Fact {
  FactStatus status = FactStatus::missing;
  nlohmann::json value; ///< null unless status == ok
  std::string source;   ///< how it was measured, e.g. "halo-bench stream triad, ..."
  std::string reason;   ///< why it is not ok (empty when ok)
};

/// true when `key` is dotted lower-case: segments of [a-z0-9_], at least two segments, starting
/// with "bench." (e.g. "bench.stream.device.triad_gbps").
bool valid_fact_key(std::string_view key) noexcept;

/// Ordered collection of facts, serialised as {"schema_version": 1, "tool": {"name": "halo-bench",
/// "version": ...}, "facts": {key: {"status", "value", "source"[, "reason"]}}}.
class FactSet {
public:
  /// Records an ok fact. Throws std::invalid_argument for an invalid key or a value that is an
  /// array/object, or a non-finite number (JSON has no NaN: report an error fact instead).
  void set_ok(std::string_view key, nlohmann::json value, std::string source);
  /// Records a fact with status `status` (not ok), value null, and the given reason.
  void set_status(std::string_view key, FactStatus status, std::string reason,
                  std::string source = "halo-bench");
  /// Shorthand for set_status(key, FactStatus::error, reason, source).
  void set_error(std::string_view key, std::string reason, std::string source = "halo-bench");
  /// Shorthand for set_status(key, FactStatus::missing, reason, source).
  void set_missing(std::string_view key, std::string reason, std::string source = "halo-bench");

  /// true when `key` has been recorded (with any status).
  [[nodiscard]] bool contains(std::string_view key) const;
  /// The fact for `key`; throws std::out_of_range when absent.
  [[nodiscard]] const Fact& at(std::string_view key) const;
  /// Number of facts.
  [[nodiscard]] std::size_t size() const noexcept { return facts_.size(); }

  /// The whole document (schema_version 1) with tool.version = `tool_version`.
  [[nodiscard]] nlohmann::json to_json(std::string_view tool_version) const;
  /// Writes to_json(tool_version) to `path`, indented by 2, with a trailing newline. Throws
  /// std::runtime_error when the file cannot be written.
  void write(const std::filesystem::path& path, std::string_view tool_version) const;

private:
  std::map<std::string, Fact, std::less<>> facts_;
};

/// The halo-bench version written into tool.version.
inline constexpr std::string_view tool_version = "0.1.0";

} // namespace halo_bench

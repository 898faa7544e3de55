// SPDX-License-Identifier: MIT
// JSON Schema validation of input documents (rules files, policies) with valijson, so that the
// published schemas (rules/schema.json, docs/policy.schema.json) are the one definition of those
// languages: a document they reject is refused, with the file, line and path of the first error.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <cstddef>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace halo {

/// Validates `doc`, parsed from `text` (for line numbers), against `schema` (draft 7 keywords;
/// `$defs` references resolve as JSON pointers). Throws InputError "ORIGIN:LINE: PATH: what" for
/// the first violation, PATH in JSON pointer form without the leading '/' ("rules/3/fail/0").
/// The schema itself is trusted (it ships with the binary); a schema valijson cannot read is a
/// std::runtime_error.
void validate_against_schema(const nlohmann::json& schema, const nlohmann::json& doc,
                             std::string_view text, std::string_view origin);

/// Byte offset of every value in a JSON text, by JSON pointer ("/waivers/0/expires"), so
/// semantic errors can name a line (nlohmann 3.11 keeps no positions). Build it only on text that
/// nlohmann already accepted: it does not validate. The text must outlive it.
class JsonPositions {
public:
  explicit JsonPositions(std::string_view text);
  /// 1-based line of the value (of the key, for an object member) at `pointer`, or of its
  /// nearest recorded parent; 1 for the root.
  std::size_t line(std::string pointer) const;

private:
  std::size_t line_at(std::size_t offset) const;
  void ws(std::size_t& i) const;
  std::string string(std::size_t& i) const;
  void value(std::size_t& i, const std::string& ptr, std::size_t depth);

  std::string_view t_;
  std::vector<std::size_t> newlines_;
  std::map<std::string, std::size_t> at_;
};

} // namespace halo

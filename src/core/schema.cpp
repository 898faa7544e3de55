// SPDX-License-Identifier: MIT
// JSON Schema validation with valijson, and line numbers for JSON pointers.
#include <halo/error.hpp>
#include <halo/schema.hpp>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <stdexcept>
#include <valijson/adapters/nlohmann_json_adapter.hpp>
#include <valijson/schema.hpp>
#include <valijson/schema_parser.hpp>
#include <valijson/validation_results.hpp>
#include <valijson/validator.hpp>

namespace halo {

JsonPositions::JsonPositions(std::string_view text) : t_(text) {
  for (std::size_t i = 0; i < t_.size(); ++i)
    if (t_[i] == '\n') newlines_.push_back(i);
  std::size_t i = 0;
  value(i, "", 0);
}

std::size_t JsonPositions::line(std::string pointer) const {
  for (;;) {
    auto it = at_.find(pointer);
    if (it != at_.end()) return line_at(it->second);
    const auto slash = pointer.rfind('/');
    if (slash == std::string::npos || pointer.empty()) return 1;
    pointer.resize(slash);
  }
}

// Binary search (a linear scan per lookup made a policy with 16,000 waivers quadratic).
std::size_t JsonPositions::line_at(std::size_t offset) const {
  return static_cast<std::size_t>(std::lower_bound(newlines_.begin(), newlines_.end(), offset) -
                                  newlines_.begin()) +
         1;
}

void JsonPositions::ws(std::size_t& i) const {
  while (i < t_.size() && (t_[i] == ' ' || t_[i] == '\n' || t_[i] == '\r' || t_[i] == '\t'))
    ++i;
}

std::string JsonPositions::string(std::size_t& i) const {
  std::string out;
  ++i; // opening quote
  while (i < t_.size() && t_[i] != '"') {
    if (t_[i] == '\\' && i + 1 < t_.size()) {
      out += t_[i + 1];
      i += 2;
      continue;
    }
    out += t_[i++];
  }
  ++i; // closing quote
  return out;
}

void JsonPositions::value(std::size_t& i, const std::string& ptr, std::size_t depth) {
  ws(i);
  // nlohmann accepted the text within its depth limit (parse_json_input); stop anyway.
  if (i >= t_.size() || depth > 512) return;
  at_.emplace(ptr, i);
  const char c = t_[i];
  if (c == '{') {
    ++i;
    ws(i);
    while (i < t_.size() && t_[i] != '}') {
      const std::size_t key_at = i;
      const std::string key = string(i);
      ws(i);
      ++i; // ':'
      const std::string child = fmt::format("{}/{}", ptr, key);
      value(i, child, depth + 1);
      at_[child] = key_at; // report the key's line rather than the value's
      ws(i);
      if (i < t_.size() && t_[i] == ',') ++i;
      ws(i);
    }
    ++i;
  } else if (c == '[') {
    ++i;
    ws(i);
    for (int n = 0; i < t_.size() && t_[i] != ']'; ++n) {
      value(i, fmt::format("{}/{}", ptr, n), depth + 1);
      ws(i);
      if (i < t_.size() && t_[i] == ',') ++i;
      ws(i);
    }
    ++i;
  } else if (c == '"') {
    string(i);
  } else {
    while (i < t_.size() && t_[i] != ',' && t_[i] != '}' && t_[i] != ']' && t_[i] != ' ' &&
           t_[i] != '\n' && t_[i] != '\r' && t_[i] != '\t')
      ++i;
  }
}

void validate_against_schema(const nlohmann::json& schema, const nlohmann::json& doc,
                             std::string_view text, std::string_view origin) {
  valijson::Schema parsed;
  valijson::SchemaParser parser; // draft 7: $ref, if/then/else, const, additionalProperties
  const valijson::adapters::NlohmannJsonAdapter schema_adapter(schema);
  parser.populateSchema(schema_adapter, parsed);
  valijson::Validator validator;
  valijson::ValidationResults results;
  const valijson::adapters::NlohmannJsonAdapter doc_adapter(doc);
  if (validator.validate(parsed, doc_adapter, &results)) return;
  // The most specific error: the one with the longest path (valijson reports the enclosing
  // anyOf/oneOf and $ref failures too).
  valijson::ValidationResults::Error best;
  valijson::ValidationResults::Error e;
  while (results.popError(e))
    if (e.context.size() > best.context.size()) best = e;
  std::string pointer;
  for (const auto& part : best.context) {
    if (part == "<root>") continue;
    // valijson writes each step as "[name]" or "[index]".
    const bool bracketed = part.size() >= 2 && part.front() == '[' && part.back() == ']';
    pointer += "/" + (bracketed ? part.substr(1, part.size() - 2) : part);
  }
  // valijson reports an unknown key at its object, naming the key in the text
  // ("... 'additionalProperties' constraints: 'extra'."): point at the key itself.
  const std::string marker = "additionalProperties' constraints: '";
  if (const auto at = best.description.find(marker); at != std::string::npos) {
    const auto from = at + marker.size();
    const auto to = best.description.find('\'', from);
    if (to != std::string::npos) {
      pointer += "/" + best.description.substr(from, to - from);
      best.description = fmt::format("unknown key '{}'", best.description.substr(from, to - from));
    }
  }
  const JsonPositions pos(text);
  throw InputError(fmt::format("{}:{}: {}: {} (schema)", origin, pos.line(pointer),
                               pointer.empty() ? std::string("document") : pointer.substr(1),
                               best.description));
}

} // namespace halo

// SPDX-License-Identifier: MIT
#include "halo_bench/facts.hpp"

#include <cmath>
#include <fstream>
#include <stdexcept>

namespace halo_bench {

std::string_view to_string(FactStatus status) noexcept {
  switch (status) {
  case FactStatus::ok:
    return "ok";
  case FactStatus::missing:
    return "missing";
  case FactStatus::denied:
    return "denied";
  case FactStatus::error:
    return "error";
  }
  return "error";
}

bool valid_fact_key(std::string_view key) noexcept {
  if (!key.starts_with("bench.") || key.ends_with('.')) {
    return false;
  }
  char previous = '.';
  for (const char c : key) {
    const bool word = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
    if (c == '.') {
      if (previous == '.') {
        return false;
      }
    } else if (!word) {
      return false;
    }
    previous = c;
  }
  return true;
}

void FactSet::set_ok(std::string_view key, nlohmann::json value, std::string source) {
  if (!valid_fact_key(key)) {
    throw std::invalid_argument("invalid fact key: " + std::string(key));
  }
  if (value.is_array() || value.is_object() || value.is_binary() || value.is_discarded()) {
    throw std::invalid_argument("fact value must be null, bool, integer, number or string: " +
                                std::string(key));
  }
  if (value.is_number_float() && !std::isfinite(value.get<double>())) {
    throw std::invalid_argument("fact value is not finite: " + std::string(key));
  }
  facts_.insert_or_assign(std::string(key),
                          Fact{FactStatus::ok, std::move(value), std::move(source), {}});
}

void FactSet::set_status(std::string_view key, FactStatus status, std::string reason,
                         std::string source) {
  if (!valid_fact_key(key)) {
    throw std::invalid_argument("invalid fact key: " + std::string(key));
  }
  if (status == FactStatus::ok) {
    throw std::invalid_argument("set_status needs a status other than ok: " + std::string(key));
  }
  if (reason.empty()) {
    reason = std::string(to_string(status));
  }
  facts_.insert_or_assign(std::string(key),
                          Fact{status, nullptr, std::move(source), std::move(reason)});
}

void FactSet::set_error(std::string_view key, std::string reason, std::string source) {
  set_status(key, FactStatus::error, std::move(reason), std::move(source));
}

void FactSet::set_missing(std::string_view key, std::string reason, std::string source) {
  set_status(key, FactStatus::missing, std::move(reason), std::move(source));
}

bool FactSet::contains(std::string_view key) const {
  return facts_.find(key) != facts_.end();
}

const Fact& FactSet::at(std::string_view key) const {
  const auto it = facts_.find(key);
  if (it == facts_.end()) {
    throw std::out_of_range("no fact " + std::string(key));
  }
  return it->second;
}

nlohmann::json FactSet::to_json(std::string_view version) const {
  nlohmann::json facts = nlohmann::json::object();
  for (const auto& [key, fact] : facts_) {
    nlohmann::json entry = {{"status", std::string(to_string(fact.status))},
                            {"value", fact.value},
                            {"source", fact.source}};
    if (fact.status != FactStatus::ok) {
      entry["reason"] = fact.reason;
    }
    facts[key] = std::move(entry);
  }
  return {{"schema_version", 1},
          {"tool", {{"name", "halo-bench"}, {"version", std::string(version)}}},
          {"facts", std::move(facts)}};
}

void FactSet::write(const std::filesystem::path& path, std::string_view version) const {
  std::ofstream out(path);
  if (!out) {
    throw std::runtime_error("cannot open " + path.string() + " for writing");
  }
  out << to_json(version).dump(2) << '\n';
  if (!out) {
    throw std::runtime_error("cannot write " + path.string());
  }
}

} // namespace halo_bench

#include <halo/probe.hpp>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <exception>
#include <optional>
#include <utility>
#include <variant>

namespace halo {

std::string_view fact_type_name(FactType t) {
  switch (t) {
  case FactType::boolean:
    return "bool";
  case FactType::integer:
    return "int";
  case FactType::number:
    return "number";
  case FactType::string:
    return "string";
  case FactType::list:
    return "list";
  }
  return "?";
}

std::optional<FactType> fact_type_of(const Value& v) {
  if (std::holds_alternative<bool>(v)) return FactType::boolean;
  if (std::holds_alternative<std::int64_t>(v)) return FactType::integer;
  if (std::holds_alternative<double>(v)) return FactType::number;
  if (std::holds_alternative<std::string>(v)) return FactType::string;
  if (std::holds_alternative<std::vector<std::string>>(v)) return FactType::list;
  return std::nullopt;
}

std::vector<std::string> Probe::provides() const {
  std::vector<std::string> out;
  for (auto& d : declarations())
    out.push_back(std::move(d.pattern));
  return out;
}

std::vector<FactDecl> ProbeRegistry::registry_declarations() {
  return {{keys::probe_status("*"), FactType::string, "",
           "`ok` when the probe ran to the end; else an `error` fact with the reason (it threw, or "
           "its runtime child hung, crashed or could not start)"}};
}

void ProbeRegistry::add(std::unique_ptr<Probe> p) {
  for (auto& d : p->declarations()) {
    patterns_.push_back(d.pattern);
    decls_.push_back(std::move(d));
  }
  probes_.push_back(std::move(p));
}

namespace {
/// How specific a pattern is: its literal segments, then whether it lacks a trailing `**`.
std::pair<int, int> specificity(std::string_view pattern) {
  int literal = 0;
  bool tail = false;
  std::size_t start = 0;
  while (start <= pattern.size()) {
    const auto dot = pattern.find('.', start);
    const auto seg =
        pattern.substr(start, dot == std::string_view::npos ? std::string_view::npos : dot - start);
    if (seg == "**")
      tail = true;
    else if (seg != "*")
      ++literal;
    if (dot == std::string_view::npos) break;
    start = dot + 1;
  }
  return {literal, tail ? 0 : 1};
}
} // namespace

const FactDecl* ProbeRegistry::declaration_for(std::string_view key) const {
  const FactDecl* best = nullptr;
  std::pair<int, int> best_rank{-1, -1};
  for (const auto& d : decls_) {
    if (!key_matches(d.pattern, key)) continue;
    const auto rank = specificity(d.pattern);
    if (best == nullptr || rank > best_rank) {
      best = &d;
      best_rank = rank;
    }
  }
  return best;
}

std::vector<std::string> ProbeRegistry::provided_patterns() const {
  return patterns_;
}

bool ProbeRegistry::provides(std::string_view key) const {
  return std::ranges::any_of(patterns_,
                             [&](const std::string& pattern) { return key_matches(pattern, key); });
}

namespace {
void run_one(const Probe& p, const ProbeContext& ctx, FactSet& facts) {
  const auto t0 = std::chrono::steady_clock::now();
  const std::string key = keys::probe_status(p.id());
  try {
    p.collect(ctx, facts);
    const Fact* marked = facts.find(key);
    if (marked == nullptr || marked->ok()) facts.put_ok(key, std::string("ok"), "halo-doctor");
  } catch (const std::exception& e) {
    spdlog::error("probe {} failed: {}", p.id(), e.what());
    facts.put_status(key, Status::error, "halo-doctor", e.what());
  }
  const auto us =
      std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - t0);
  spdlog::debug("probe {}: {} us", p.id(), us.count());
}
} // namespace

void mark_probe_incomplete(FactSet& facts, std::string_view id, std::string reason) {
  facts.put_status(keys::probe_status(id), Status::error, "halo-doctor", std::move(reason));
}

std::vector<IncompleteProbe> incomplete_probes(const FactSet& facts) {
  std::vector<IncompleteProbe> out;
  for (const Fact* f : facts.match(keys::probe_status("*"))) {
    if (f->ok()) continue;
    const std::string_view k = f->key;
    const auto first = k.find('.');
    const auto last = k.rfind('.');
    out.push_back(IncompleteProbe{std::string(k.substr(first + 1, last - first - 1)), f->reason});
  }
  return out;
}

FactSet ProbeRegistry::collect(const ProbeContext& ctx) const {
  FactSet facts;
  // Every caller gets the same host root: detected here unless the caller chose one.
  std::optional<HostRoot> detected;
  if (ctx.host == nullptr) detected = detect_host_root(ctx.root, ctx.options.host_root);
  const ProbeContext with_host{ctx.root, ctx.options, ctx.host != nullptr ? ctx.host : &*detected};
  for (const auto& p : probes_)
    run_one(*p, with_host, facts);
  return facts;
}

void ProbeRegistry::rederive(const ProbeContext& ctx, FactSet& facts) const {
  for (const auto& p : probes_)
    if (p->id() == "plan" || p->id() == "derived") run_one(*p, ctx, facts);
}

} // namespace halo

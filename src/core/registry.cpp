// SPDX-License-Identifier: MIT
#include <halo/probe.hpp>
#include <halo/rederive.hpp>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <exception>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <unordered_set>
#include <utility>
#include <variant>

namespace halo {

bool env_name_matches(std::string_view name, std::span<const std::string> patterns) {
  return std::any_of(patterns.begin(), patterns.end(), [&](const std::string& p) {
    if (!p.empty() && p.back() == '*')
      return name.size() >= p.size() - 1 &&
             name.substr(0, p.size() - 1) == std::string_view(p).substr(0, p.size() - 1);
    return name == p;
  });
}

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
  for (const FactDecl& d : declarations())
    out.emplace_back(d.pattern);
  return out;
}

std::vector<std::string> ProbeRegistry::own_patterns() {
  return {std::string(keys::bench_all), keys::probe_status("*")};
}

std::vector<FactDecl> ProbeRegistry::registry_declarations() {
  // FactDecl views its text: the pattern lives for the whole program.
  static const std::string pattern = keys::probe_status("*");
  return {{pattern, FactType::string, "",
           "`ok` when the probe ran to the end; else an `error` fact with the reason (it threw, or "
           "its runtime child hung, crashed or could not start)"}};
}

/// A pattern's segments as a tree: each node's literal segments, its `*` segment, whether a
/// pattern ends here and whether one ends here in a trailing `**` (key_matches' grammar).
struct RederivePlan::Index {
  std::map<std::string, Index, std::less<>> literal;
  std::unique_ptr<Index> star;
  bool end = false;
  bool tail = false;

  void add(std::string_view pattern) {
    const std::size_t dot = pattern.find('.');
    const std::string_view seg = pattern.substr(0, dot);
    if (dot == std::string_view::npos && seg == "**") {
      tail = true;
      return;
    }
    Index* next = nullptr;
    if (seg == "*") {
      if (!star) star = std::make_unique<Index>();
      next = star.get();
    } else {
      next = &literal.try_emplace(std::string(seg)).first->second;
    }
    if (dot == std::string_view::npos)
      next->end = true;
    else
      next->add(pattern.substr(dot + 1));
  }

  /// key_matches(some pattern below this node, `key`), `key` the key's segments left
  /// (`key_left`: whether any is; an empty last segment is one).
  bool match(std::string_view key, bool key_left) const {
    if (tail && key_left && !key.empty()) return true;
    if (!key_left) return false;
    const std::size_t dot = key.find('.');
    const std::string_view seg = key.substr(0, dot);
    const bool more = dot != std::string_view::npos;
    const std::string_view rest = more ? key.substr(dot + 1) : std::string_view();
    auto down = [&](const Index& n) { return more ? n.match(rest, true) : n.end; };
    if (const auto it = literal.find(seg); it != literal.end() && down(it->second)) return true;
    return star && down(*star);
  }
};

void ProbeRegistry::add(std::unique_ptr<Probe> p) {
  Keys keys{p->inputs(), 0};
  keys.provided_from = keys.allowed.size();
  for (const FactDecl& d : p->declarations()) {
    patterns_.emplace_back(d.pattern);
    keys.allowed.emplace_back(d.pattern);
    decls_.push_back(d);
  }
  probes_.push_back(std::move(p));
  keys_.push_back(std::move(keys));
  resolved_ = false;
}

namespace {
/// True when one of `provided` (a probe's patterns) can name a fact that input pattern `input`
/// names.
std::string_view first_segment(std::string_view k) {
  return k.substr(0, k.find('.'));
}

bool wild_segment(std::string_view s) {
  return s == "*" || s == "**";
}

bool provides_input(std::span<const std::string> provided, std::string_view input) {
  // Most patterns differ from the input in a literal first segment: skip those cheaply.
  const std::string_view in_first = first_segment(input);
  const bool in_wild = wild_segment(in_first);
  return std::ranges::any_of(provided, [&](const std::string& pattern) {
    const std::string_view p_first = first_segment(pattern);
    if (!in_wild && p_first != in_first && !wild_segment(p_first)) return false;
    return patterns_overlap(pattern, input);
  });
}

/// The probes' provided patterns indexed by their first segment, for resolve(): an input whose
/// first segment is literal can only be provided by a pattern with the same first segment or a
/// wildcard one, so only those are compared (patterns_overlap) instead of every probe's every
/// pattern (issue 33: this loop was 12 % of a check's instructions).
class ProvidedIndex {
public:
  /// `provided[j]`: probe j's patterns; they must outlive the index.
  explicit ProvidedIndex(const std::vector<std::span<const std::string>>& provided) {
    for (std::size_t j = 0; j < provided.size(); ++j)
      for (const std::string& pattern : provided[j]) {
        const std::string_view first = first_segment(pattern);
        (wild_segment(first) ? wild_ : by_first_[first]).push_back({j, pattern});
      }
  }
  /// Calls `f(j)` for each probe j with a pattern overlapping `input`, except those `skip(j)`
  /// (asked before each comparison: a probe already known to provide it is not compared again).
  template <class Skip, class F>
  void for_each_provider(std::string_view input, Skip skip, F f) const {
    const std::string_view first = first_segment(input);
    const auto visit = [&](const std::vector<Entry>& entries) {
      for (const Entry& e : entries)
        if (!skip(e.probe) && patterns_overlap(e.pattern, input)) f(e.probe);
    };
    if (wild_segment(first)) {
      for (const auto& [_, entries] : by_first_)
        visit(entries);
    } else if (const auto it = by_first_.find(first); it != by_first_.end()) {
      visit(it->second);
    }
    visit(wild_);
  }

private:
  struct Entry {
    std::size_t probe;
    std::string_view pattern;
  };
  std::map<std::string_view, std::vector<Entry>, std::less<>> by_first_;
  std::vector<Entry> wild_;
};
} // namespace

std::vector<const Probe*> ProbeRegistry::providers_of(const Probe& p) const {
  std::vector<const Probe*> out;
  const auto inputs = p.inputs();
  for (const auto& q : probes_) {
    if (q.get() == &p) continue;
    const auto provided = q->provides();
    if (std::ranges::any_of(inputs,
                            [&](const std::string& in) { return provides_input(provided, in); }))
      out.push_back(q.get());
  }
  return out;
}

void ProbeRegistry::resolve() {
  const std::size_t n = probes_.size();
  // deps[i]: the indices of the probes probe i reads from.
  std::vector<std::vector<std::size_t>> deps(n);
  std::vector<std::span<const std::string>> provided(n);
  const std::vector<std::string> own = own_patterns();
  for (std::size_t i = 0; i < n; ++i)
    provided[i] = keys_[i].provided();
  const ProvidedIndex index(provided);
  for (std::size_t i = 0; i < n; ++i) {
    const Probe& p = *probes_[i];
    for (std::size_t j = 0; j < i; ++j)
      if (probes_[j]->id() == p.id())
        throw std::logic_error(fmt::format("two probes have the id '{}'", p.id()));
    for (const std::string& in : keys_[i].inputs()) {
      bool found = provides_input(own, in);
      const auto known = [&](std::size_t j) {
        return j == i || std::ranges::find(deps[i], j) != deps[i].end();
      };
      index.for_each_provider(in, known, [&](std::size_t j) {
        found = true;
        deps[i].push_back(j);
      });
      // Its providers may all be known already (from an earlier input).
      found = found || std::ranges::any_of(
                           deps[i], [&](std::size_t j) { return provides_input(provided[j], in); });
      if (!found)
        throw std::logic_error(fmt::format(
            "probe {} reads '{}', which no other probe provides (Probe::inputs)", p.id(), in));
    }
  }
  // Kahn's algorithm, taking the earliest-added ready probe each time: a stable order.
  std::vector<bool> done(n, false);
  std::vector<std::size_t> order;
  while (order.size() < n) {
    std::optional<std::size_t> next;
    for (std::size_t i = 0; i < n && !next; ++i) {
      if (done[i]) continue;
      if (std::ranges::all_of(deps[i], [&](std::size_t j) { return done[j]; })) next = i;
    }
    if (!next) {
      std::string stuck;
      for (std::size_t i = 0; i < n; ++i)
        if (!done[i]) stuck += fmt::format("{}{}", stuck.empty() ? "" : ", ", probes_[i]->id());
      throw std::logic_error(
          fmt::format("the probes' inputs form a cycle among: {} (Probe::inputs)", stuck));
    }
    done[*next] = true;
    order.push_back(*next);
  }
  std::vector<std::unique_ptr<Probe>> sorted;
  std::vector<Keys> sorted_keys;
  sorted.reserve(n);
  sorted_keys.reserve(n);
  for (std::size_t i : order) {
    sorted.push_back(std::move(probes_[i]));
    sorted_keys.push_back(std::move(keys_[i]));
  }
  probes_ = std::move(sorted);
  keys_ = std::move(sorted_keys);
  resolved_ = true;
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
/// std::hash over string_view, for looking up a std::string set by string_view.
struct StringHash {
  using is_transparent = void;
  std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

/// Clears a fact set's read guard however the probe returns.
class GuardScope {
public:
  /// `probe`: the id of the probe that runs, recorded in every fact it puts (Fact::probe).
  GuardScope(FactSet& facts, const FactSet::ReadGuard& guard, std::string_view probe)
      : facts_(facts) {
    facts_.set_read_guard(&guard);
    facts_.set_producer(probe);
  }
  GuardScope(const GuardScope&) = delete;
  GuardScope& operator=(const GuardScope&) = delete;
  GuardScope(GuardScope&&) = delete;
  GuardScope& operator=(GuardScope&&) = delete;
  ~GuardScope() {
    facts_.set_read_guard(nullptr);
    facts_.set_producer({});
  }

private:
  FactSet& facts_;
};

/// Runs `body` (the probe's collect or derive) under the read audit and records
/// `probe.<id>.status`. `allowed`: the probe's inputs, then the patterns it provides.
/// `index`, when given, is `allowed` as a tree (RederivePlan::Index): one lookup per key read.
template <class Body>
void run_one(const Probe& p, std::span<const std::string> allowed, FactSet& facts, Body&& body,
             const RederivePlan::Index* index = nullptr) {
  const auto t0 = std::chrono::steady_clock::now();
  const std::string key = keys::probe_status(p.id());
  // The probe may read its own facts and its declared inputs. Another read is a programming
  // error: the read goes on (the facts stay whole) and the probe is reported as failed with the
  // first such key, so that every fixture root and a user's report show it. Inputs are tried
  // first (most reads of a deriving probe are of other probes' facts), and keys already allowed
  // are remembered: the old all-in-one `derived` probe on the 8-GPU mi300x-numa-4021 fixture
  // takes 1.4 ms audited against 1.0 ms unaudited (3.2 ms without the memo).
  std::unordered_set<std::string, StringHash, std::equal_to<>> seen;
  std::string undeclared;
  const FactSet::ReadGuard guard = [&](std::string_view k) {
    if (!undeclared.empty()) return;
    if (index != nullptr && k.find('*') == std::string_view::npos) {
      if (index->match(k, true)) return;
    } else if (seen.contains(k)) {
      return;
    }
    if (std::ranges::any_of(allowed, [&](const std::string& pat) { return key_matches(pat, k); })) {
      seen.emplace(k);
      return;
    }
    undeclared = fmt::format(
        "probe {} read the fact '{}', which it does not declare among its inputs (Probe::inputs)",
        p.id(), k);
  };
  try {
    {
      const GuardScope scope(facts, guard, p.id());
      body();
    }
    if (!undeclared.empty()) throw std::logic_error(undeclared);
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
  if (!resolved_) throw std::logic_error("ProbeRegistry::collect before resolve()");
  FactSet facts;
  // Every caller gets the same host root: detected here unless the caller chose one.
  std::optional<HostRoot> detected;
  if (ctx.host == nullptr) detected = detect_host_root(ctx.root, ctx.options.host_root);
  const ProbeContext with_host{ctx.root, ctx.options, ctx.host != nullptr ? ctx.host : &*detected};
  for (std::size_t i = 0; i < probes_.size(); ++i) {
    const Probe& p = *probes_[i];
    run_one(p, keys_[i].allowed, facts, [&] { p.collect(with_host, facts); });
  }
  return facts;
}

void ProbeRegistry::rederive(const ProbeOptions& options, FactSet& facts) const {
  if (!resolved_) throw std::logic_error("ProbeRegistry::rederive before resolve()");
  const DeriveContext ctx{options};
  for (std::size_t i = 0; i < probes_.size(); ++i) {
    const auto* d = dynamic_cast<const Derivation*>(probes_[i].get());
    if (d == nullptr) continue; // reads the machine: its replayed facts stand
    run_one(*d, keys_[i].allowed, facts, [&] { d->derive(ctx, facts); });
  }
}

bool RederivePlan::reads_key(std::string_view key) const {
  // A key holding a `*` (a hostile file's) matches as key_matches lets it: any segment.
  if (index == nullptr || key.find('*') != std::string_view::npos)
    return std::ranges::any_of(reads, [&](const std::string& p) { return key_matches(p, key); });
  return index->match(key, true);
}

RederivePlan plan_rederive(const ProbeRegistry& registry, const std::vector<std::string>& wanted) {
  RederivePlan plan;
  plan.reads = wanted;
  const auto& probes = registry.probes();
  std::vector<bool> planned(probes.size(), false);
  auto read = [&](std::string_view pattern) {
    return std::ranges::any_of(plan.reads,
                               [&](const std::string& r) { return patterns_overlap(r, pattern); });
  };
  for (bool grew = true; grew;) {
    grew = false;
    for (std::size_t i = 0; i < probes.size(); ++i) {
      const Probe& p = *probes[i];
      if (planned[i] || !p.is_derivation()) continue;
      const std::vector<std::string> provided = p.provides();
      if (!read(keys::probe_status(p.id())) && !std::ranges::any_of(provided, read)) continue;
      planned[i] = grew = true;
      for (auto& in : p.inputs())
        plan.reads.push_back(std::move(in));
      plan.reads.insert(plan.reads.end(), provided.begin(), provided.end());
      plan.reads.push_back(keys::probe_status(p.id()));
    }
  }
  for (std::size_t i = 0; i < probes.size(); ++i) {
    if (!planned[i]) continue;
    // The read audit's list as ProbeRegistry::add builds it: the inputs, then the declarations.
    std::vector<std::string> allowed = probes[i]->inputs();
    for (auto& p : probes[i]->provides())
      allowed.push_back(std::move(p));
    auto tree = std::make_shared<RederivePlan::Index>();
    for (const auto& a : allowed)
      tree->add(a);
    plan.derivations.push_back(i);
    plan.allowed.push_back(std::move(allowed));
    plan.allowed_index.push_back(std::move(tree));
  }
  // std::sort/std::unique, not their ranges forms: clang 14 (clang-tidy, the fuzz build) cannot
  // instantiate libstdc++ 12's ranges::unique.
  std::sort(plan.reads.begin(), plan.reads.end());
  plan.reads.erase(std::unique(plan.reads.begin(), plan.reads.end()), plan.reads.end());
  auto index = std::make_shared<RederivePlan::Index>();
  for (const auto& r : plan.reads)
    index->add(r);
  plan.index = std::move(index);
  return plan;
}

void rederive(const ProbeRegistry& registry, const ProbeOptions& options, FactSet& facts,
              const RederivePlan& plan) {
  const DeriveContext ctx{options};
  for (std::size_t k = 0; k < plan.derivations.size(); ++k) {
    const auto* d = dynamic_cast<const Derivation*>(registry.probes()[plan.derivations[k]].get());
    if (d == nullptr) continue;
    run_one(
        *d, plan.allowed[k], facts, [&] { d->derive(ctx, facts); }, plan.allowed_index[k].get());
  }
}

} // namespace halo

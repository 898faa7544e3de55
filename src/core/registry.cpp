#include <halo/probe.hpp>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <exception>

namespace halo {

void ProbeRegistry::add(std::unique_ptr<Probe> p) {
  for (auto& k : p->provides())
    patterns_.push_back(std::move(k));
  probes_.push_back(std::move(p));
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

// SPDX-License-Identifier: MIT
// The probe registry orders probes by the facts they declare they read (Probe::inputs), refuses
// an input nobody provides, a duplicate id and a cycle, and reports a probe that reads a fact it
// did not declare (issue 10, "declared, typed facts").
#include <halo/checks.hpp>
#include <halo/fact.hpp>
#include <halo/probe.hpp>
#include <halo/rederive.hpp>

#include <catch2/catch.hpp>

#include <algorithm>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

using namespace halo;

namespace {

/// A probe made of parts: provides `provides` (string facts), reads `inputs`, and runs `body`.
class TestProbe : public Probe {
public:
  using Body = std::function<void(FactSet&)>;
  TestProbe(std::string id, std::vector<std::string> provides, std::vector<std::string> inputs,
            Body body = {})
      : id_(std::move(id)), provides_(std::move(provides)), inputs_(std::move(inputs)),
        body_(std::move(body)) {
    // FactDecl views its text: the patterns live in provides_, as long as the probe.
    for (const auto& p : provides_)
      decls_.push_back(FactDecl{p, FactType::string, "", "test"});
  }
  std::string_view id() const override { return id_; }
  std::span<const FactDecl> declarations() const override { return decls_; }
  std::string source() const override { return "test"; }
  std::vector<std::string> reads() const override { return {}; }
  std::vector<std::string> inputs() const override { return inputs_; }
  void collect(const ProbeContext& /*ctx*/, FactSet& facts) const override {
    if (body_) body_(facts);
  }

private:
  std::string id_;
  std::vector<std::string> provides_;
  std::vector<FactDecl> decls_;
  std::vector<std::string> inputs_;
  Body body_;
};

/// A derivation made of parts: provides `provides`, reads `inputs`, runs `body` with the options.
class TestDerivation : public Derivation {
public:
  using Body = std::function<void(const DeriveContext&, FactSet&)>;
  TestDerivation(std::string id, std::vector<std::string> provides, std::vector<std::string> inputs,
                 Body body)
      : id_(std::move(id)), provides_(std::move(provides)), inputs_(std::move(inputs)),
        body_(std::move(body)) {
    for (const auto& p : provides_)
      decls_.push_back(FactDecl{p, FactType::integer, "", "test"});
  }
  std::string_view id() const override { return id_; }
  std::span<const FactDecl> declarations() const override { return decls_; }
  std::string source() const override { return "test"; }
  std::vector<std::string> inputs() const override { return inputs_; }
  void derive(const DeriveContext& ctx, FactSet& facts) const override { body_(ctx, facts); }

private:
  std::string id_;
  std::vector<std::string> provides_;
  std::vector<FactDecl> decls_;
  std::vector<std::string> inputs_;
  Body body_;
};

std::vector<std::string> order(const ProbeRegistry& r) {
  std::vector<std::string> out;
  for (const auto& p : r.probes())
    out.emplace_back(p->id());
  return out;
}

std::string refusal(ProbeRegistry& r) {
  try {
    r.resolve();
  } catch (const std::logic_error& e) {
    return e.what();
  }
  return "";
}

} // namespace

TEST_CASE("two key patterns overlap when some key matches both", "[registry]") {
  CHECK(patterns_overlap("drm.amd_cards", "drm.amd_cards"));
  CHECK_FALSE(patterns_overlap("drm.amd_cards", "drm.card1"));
  CHECK(patterns_overlap("drm.*.render_minor", "drm.card1.render_minor"));
  CHECK(patterns_overlap("drm.card1.render_minor", "drm.*.render_minor"));
  CHECK_FALSE(patterns_overlap("drm.*.render_minor", "drm.amd_cards"));
  CHECK_FALSE(patterns_overlap("drm.*.render_minor", "drm.card1.pcie.max_width"));
  // A trailing ** is one or more segments, never none.
  CHECK(patterns_overlap("drm.**", "drm.card1.pcie.max_width"));
  CHECK(patterns_overlap("drm.card1.pcie.max_width", "drm.**"));
  CHECK(patterns_overlap("drm.**", "drm.*"));
  CHECK_FALSE(patterns_overlap("drm.**", "drm"));
  CHECK_FALSE(patterns_overlap("drm.**", "drm_x.card1"));
  CHECK(patterns_overlap("kfd.node.*.gfx_target", "kfd.**"));
  CHECK(patterns_overlap("*.node.*", "kfd.*.1"));
  CHECK_FALSE(patterns_overlap("kfd.node.*", "kfd.node.*.gfx_target"));
}

TEST_CASE("the registry runs a probe after the probes whose facts it reads", "[registry]") {
  ProbeRegistry r;
  // Added consumer first: resolve() must move its providers ahead of it.
  r.add(std::make_unique<TestProbe>("derive", std::vector<std::string>{"out.total"},
                                    std::vector<std::string>{"cards.list", "card.*.size"}));
  r.add(std::make_unique<TestProbe>("sizes", std::vector<std::string>{"card.*.size"},
                                    std::vector<std::string>{"cards.list"}));
  r.add(std::make_unique<TestProbe>("clock", std::vector<std::string>{"clock.now"},
                                    std::vector<std::string>{}));
  r.add(std::make_unique<TestProbe>("cards", std::vector<std::string>{"cards.list"},
                                    std::vector<std::string>{}));
  r.resolve();
  // Independent probes keep the order they were added in ("clock" before "cards").
  CHECK(order(r) == std::vector<std::string>{"clock", "cards", "sizes", "derive"});
  std::vector<std::string> after;
  for (const Probe* p : r.providers_of(*r.probes().back()))
    after.emplace_back(p->id());
  CHECK(after == std::vector<std::string>{"cards", "sizes"});
}

TEST_CASE("the registry refuses an input nobody provides, a cycle and a duplicate id",
          "[registry]") {
  {
    ProbeRegistry r;
    r.add(std::make_unique<TestProbe>("a", std::vector<std::string>{"a.x"},
                                      std::vector<std::string>{"b.typo"}));
    r.add(std::make_unique<TestProbe>("b", std::vector<std::string>{"b.x"},
                                      std::vector<std::string>{}));
    const std::string why = refusal(r);
    CHECK(why.find("probe a reads 'b.typo', which no other probe provides") != std::string::npos);
    // Not resolved: it does not run.
    const Root root("/");
    const ProbeOptions opt;
    CHECK_THROWS_AS(r.collect(ProbeContext{root, opt}), std::logic_error);
  }
  {
    // A probe's own facts are not an input: reading only them is no dependency.
    ProbeRegistry r;
    r.add(std::make_unique<TestProbe>("a", std::vector<std::string>{"a.x"},
                                      std::vector<std::string>{"a.x"}));
    CHECK(refusal(r).find("no other probe provides") != std::string::npos);
  }
  {
    ProbeRegistry r;
    r.add(std::make_unique<TestProbe>("free", std::vector<std::string>{"f.x"},
                                      std::vector<std::string>{}));
    r.add(std::make_unique<TestProbe>("a", std::vector<std::string>{"a.x"},
                                      std::vector<std::string>{"c.x"}));
    r.add(std::make_unique<TestProbe>("b", std::vector<std::string>{"b.x"},
                                      std::vector<std::string>{"a.**"}));
    r.add(std::make_unique<TestProbe>("c", std::vector<std::string>{"c.x"},
                                      std::vector<std::string>{"b.x"}));
    CHECK(refusal(r) == "the probes' inputs form a cycle among: a, b, c (Probe::inputs)");
  }
  {
    ProbeRegistry r;
    r.add(std::make_unique<TestProbe>("a", std::vector<std::string>{"a.x"},
                                      std::vector<std::string>{}));
    r.add(std::make_unique<TestProbe>("a", std::vector<std::string>{"a.y"},
                                      std::vector<std::string>{}));
    CHECK(refusal(r) == "two probes have the id 'a'");
  }
  {
    // The registry's own facts (probe.<id>.status) and bench results satisfy an input.
    ProbeRegistry r;
    r.add(std::make_unique<TestProbe>("a", std::vector<std::string>{"a.x"},
                                      std::vector<std::string>{"probe.*.status", "bench.**"}));
    CHECK(refusal(r).empty());
  }
}

TEST_CASE("a probe that reads a fact it did not declare is reported as failed", "[registry]") {
  ProbeRegistry r;
  r.add(std::make_unique<TestProbe>("cards", std::vector<std::string>{"cards.list", "cards.count"},
                                    std::vector<std::string>{}, [](FactSet& f) {
                                      f.put_ok("cards.list", std::string("card1"), "test");
                                      f.put_ok("cards.count", std::int64_t{1}, "test");
                                    }));
  r.add(std::make_unique<TestProbe>("honest", std::vector<std::string>{"honest.x"},
                                    std::vector<std::string>{"cards.list"}, [](FactSet& f) {
                                      // Its declared input, and its own fact.
                                      const auto v = f.get<std::string>("cards.list");
                                      f.put_ok("honest.x", v.value_or("none"), "test");
                                      CHECK(f.find("honest.x") != nullptr);
                                    }));
  r.add(std::make_unique<TestProbe>("sneaky", std::vector<std::string>{"sneaky.x"},
                                    std::vector<std::string>{"cards.list"}, [](FactSet& f) {
                                      // cards.count is not among its inputs. The read still
                                      // answers, so the facts stay whole, and the probe is
                                      // reported.
                                      f.put_ok("sneaky.x", f.get_int("cards.count").value_or(-1),
                                               "test");
                                    }));
  r.add(std::make_unique<TestProbe>("greedy", std::vector<std::string>{"greedy.x"},
                                    std::vector<std::string>{"cards.list"}, [](FactSet& f) {
                                      // Iterating every fact cannot be audited: refused.
                                      f.put_ok("greedy.x", std::int64_t(f.all().size()), "test");
                                    }));
  r.add(std::make_unique<TestProbe>(
      "matcher", std::vector<std::string>{"matcher.x"}, std::vector<std::string>{"cards.list"},
      [](FactSet& f) { f.put_ok("matcher.x", std::int64_t(f.match("cards.*").size()), "test"); }));
  r.resolve();
  const Root root("/");
  const ProbeOptions opt;
  const FactSet facts = r.collect(ProbeContext{root, opt});

  CHECK(facts.get<std::string>("probe.cards.status") == std::string("ok"));
  CHECK(facts.get<std::string>("probe.honest.status") == std::string("ok"));
  CHECK(facts.get<std::string>("honest.x") == std::string("card1"));

  const Fact* sneaky = facts.find("probe.sneaky.status");
  REQUIRE(sneaky != nullptr);
  CHECK(sneaky->status == Status::error);
  CHECK(sneaky->reason == "probe sneaky read the fact 'cards.count', which it does not declare "
                          "among its inputs (Probe::inputs)");
  CHECK(facts.get_int("sneaky.x") == 1);

  const Fact* greedy = facts.find("probe.greedy.status");
  REQUIRE(greedy != nullptr);
  CHECK(greedy->status == Status::error);
  CHECK(greedy->reason.find("may not iterate every fact") != std::string::npos);

  // A wildcard match is audited key by key: cards.count is outside matcher's inputs.
  const Fact* matcher = facts.find("probe.matcher.status");
  REQUIRE(matcher != nullptr);
  CHECK(matcher->status == Status::error);
  CHECK(matcher->reason.find("'cards.count'") != std::string::npos);

  // The guard is gone after collect(), and copies never carry one.
  CHECK(facts.all().size() == facts.size());
  FactSet copy = facts;
  copy.put_ok("cards.extra", std::string("x"), "test");
  CHECK(copy.all().size() == facts.size() + 1);
}

TEST_CASE("the built-in probes resolve, and each runs after the probes it reads", "[registry]") {
  const ProbeRegistry reg = builtin_probes();
  std::vector<std::string> seen;
  for (const auto& p : reg.probes()) {
    for (const Probe* q : reg.providers_of(*p)) {
      INFO(p->id() << " reads facts of " << q->id());
      CHECK(std::find(seen.begin(), seen.end(), std::string(q->id())) != seen.end());
    }
    seen.emplace_back(p->id());
  }
  // A probe that reads only the kernel release runs after the kernel probe; each derivation after
  // the probes and derivations it reads (the GPU list before what is joined to it, the TTM limits
  // before the plan's capacity), not at a fixed place.
  const auto pos = [&](std::string_view id) {
    return std::find(seen.begin(), seen.end(), std::string(id)) - seen.begin();
  };
  CHECK(pos("drm") < pos("gpu_list"));
  CHECK(pos("kfd_topology") < pos("gpu_list"));
  CHECK(pos("gpu_list") < pos("gpu_cards"));
  CHECK(pos("gpu_list") < pos("gpu_visibility"));
  CHECK(pos("gpu_visibility") < pos("gpu_usable_memory"));
  CHECK(pos("ttm_configured") < pos("plan_gpu"));
  CHECK(pos("gpu_usable_memory") < pos("plan_gpu"));
  CHECK(pos("modparam") < pos("amdgpu_driver"));
  CHECK(pos("kernel") < pos("module_file"));
  CHECK(pos("secure_boot") < pos("module_file"));
  CHECK(pos("kernel_log") < pos("initramfs"));
  CHECK(pos("drm") < pos("ras"));
  CHECK(pos("environment") < pos("device_access"));
  CHECK(pos("plan") < pos("plan_gpu"));
}

TEST_CASE("rederive runs every derivation, in order, and no probe that reads the machine",
          "[registry]") {
  ProbeRegistry r;
  int machine_runs = 0;
  // Added first, read by the first derivation: resolve() orders the derivations after it, and
  // the second derivation after the first, whose fact it reads.
  r.add(std::make_unique<TestDerivation>(
      "reserve_left", std::vector<std::string>{"d.left"}, std::vector<std::string>{"d.base"},
      [](const DeriveContext& ctx, FactSet& f) {
        f.put_ok("d.left", f.get_int("d.base").value_or(0) - ctx.options.reserve_gib, "test");
      }));
  r.add(std::make_unique<TestProbe>("machine", std::vector<std::string>{"m.total"},
                                    std::vector<std::string>{}, [&](FactSet&) { ++machine_runs; }));
  r.add(std::make_unique<TestDerivation>(
      "base", std::vector<std::string>{"d.base"}, std::vector<std::string>{"m.total"},
      [](const DeriveContext&, FactSet& f) {
        f.put_ok("d.base", f.get_int("m.total").value_or(-1), "test");
      }));
  r.resolve();
  CHECK(order(r) == std::vector<std::string>{"machine", "base", "reserve_left"});
  CHECK_FALSE(r.probes()[0]->is_derivation());
  CHECK(r.probes()[1]->is_derivation());
  CHECK(r.probes()[1]->reads().empty());
  // Replayed facts (as from --facts FILE): the machine probe does not run again, both
  // derivations do, with the options given now.
  FactSet f;
  f.put_ok("m.total", std::int64_t{100}, "replayed");
  f.put_ok("d.left", std::int64_t{0}, "replayed (stale)");
  ProbeOptions opt;
  opt.reserve_gib = 8;
  r.rederive(opt, f);
  CHECK(machine_runs == 0);
  CHECK(f.get_int("d.base") == 100);
  CHECK(f.get_int("d.left") == 92);
  CHECK(f.get<std::string>(keys::probe_status("reserve_left")) == std::string("ok"));
  CHECK(f.find(keys::probe_status("machine")) == nullptr);
}

TEST_CASE("no built-in probe or derivation reads a ** pattern, and every derivation is narrow",
          "[registry]") {
  const ProbeRegistry reg = builtin_probes();
  std::size_t derivations = 0;
  for (const auto& p : reg.probes()) {
    for (const auto& in : p->inputs()) {
      INFO(p->id() << " reads " << in);
      CHECK(in.find("**") == std::string::npos);
    }
    if (p->is_derivation()) {
      ++derivations;
      CHECK(p->reads().empty());
      CHECK(p->env_reads().empty());
    }
  }
  // The training plan and the joins of the old single `derived` stage (issue 33).
  CHECK(derivations >= 10);
  CHECK(std::none_of(reg.probes().begin(), reg.probes().end(),
                     [](const auto& p) { return p->id() == "derived"; }));
}

TEST_CASE("a rederive plan runs the derivations the wanted facts depend on, audited, with the "
          "full rederive's values",
          "[registry][fleet-reader]") {
  ProbeRegistry r;
  // raw.* are replayed facts; a.n <- raw.a; b.n <- a.n and raw.b.*; c.n <- raw.c (not wanted);
  // sneaky.n reads raw.c, which it does not declare.
  r.add(std::make_unique<TestProbe>("raw", std::vector<std::string>{"raw.a", "raw.b.*", "raw.c"},
                                    std::vector<std::string>{}));
  r.add(std::make_unique<TestDerivation>(
      "a", std::vector<std::string>{"a.n"}, std::vector<std::string>{"raw.a"},
      [](const DeriveContext&, FactSet& f) {
        f.put_ok("a.n", f.get_int("raw.a").value_or(0) * 10, "derived");
      }));
  r.add(std::make_unique<TestDerivation>(
      "b", std::vector<std::string>{"b.n"}, std::vector<std::string>{"a.n", "raw.b.*"},
      [](const DeriveContext&, FactSet& f) {
        f.put_ok("b.n",
                 f.get_int("a.n").value_or(0) +
                     static_cast<std::int64_t>(f.match("raw.b.*").size()),
                 "derived");
      }));
  r.add(std::make_unique<TestDerivation>("c", std::vector<std::string>{"c.n"},
                                         std::vector<std::string>{"raw.c"},
                                         [](const DeriveContext&, FactSet& f) {
                                           f.put_ok("c.n", f.get_int("raw.c").value_or(0), "d");
                                         }));
  r.add(std::make_unique<TestDerivation>(
      "sneaky", std::vector<std::string>{"sneaky.n"}, std::vector<std::string>{"raw.a"},
      [](const DeriveContext&, FactSet& f) {
        f.put_ok("sneaky.n", f.get_int("raw.c").value_or(-1), "d");
      }));
  r.resolve();
  FactSet replayed;
  replayed.put_ok("raw.a", std::int64_t{4}, "f");
  replayed.put_ok("raw.b.x", std::int64_t{1}, "f");
  replayed.put_ok("raw.b.y", std::int64_t{1}, "f");
  replayed.put_ok("raw.c", std::int64_t{7}, "f");
  replayed.put_ok("b.n", std::int64_t{999}, "a stale value in the file");

  const RederivePlan plan = plan_rederive(r, {"b.n", "sneaky.n"});
  // b.n needs b and, through a.n, a; sneaky.n needs sneaky; c is left out, and so is raw.c.
  std::vector<std::string> ids;
  for (const auto i : plan.derivations)
    ids.emplace_back(r.probes()[i]->id());
  CHECK(ids == std::vector<std::string>{"a", "b", "sneaky"});
  CHECK(plan.reads_key("raw.a"));
  CHECK(plan.reads_key("raw.b.zz"));
  CHECK(plan.reads_key("probe.b.status"));
  CHECK_FALSE(plan.reads_key("raw.c"));
  CHECK_FALSE(plan.reads_key("c.n"));
  CHECK_FALSE(plan.reads_key("raw.b"));
  CHECK_FALSE(plan.reads_key("raw.b.x.y"));

  FactSet subset;
  for (const auto& [k, f] : replayed.all())
    if (plan.reads_key(k)) subset.put(f);
  rederive(r, ProbeOptions{}, subset, plan);
  FactSet full = replayed;
  r.rederive(ProbeOptions{}, full);
  CHECK(subset.get_int("b.n") == 42);
  CHECK(full.get_int("b.n") == 42);
  // The planned run audits reads as the full one does: sneaky's undeclared read is reported.
  const Fact* sneaky = subset.find("probe.sneaky.status");
  REQUIRE(sneaky != nullptr);
  CHECK(sneaky->status == Status::error);
  CHECK(sneaky->reason == full.find("probe.sneaky.status")->reason);
  CHECK(subset.find("c.n") == nullptr);
}

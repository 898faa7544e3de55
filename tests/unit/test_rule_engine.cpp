// SPDX-License-Identifier: MIT
#include <halo/checks.hpp>
#include <halo/probe.hpp>
#include <halo/rules.hpp>

#include <catch2/catch.hpp>

using namespace halo;
using nlohmann::json;

namespace {
Condition leaf(std::string fact, Op op, json literal) {
  Condition c;
  c.fact = std::move(fact);
  c.op = op;
  c.operand.literal = std::move(literal);
  return c;
}
Condition group(Condition::Kind k, std::vector<Condition> ch) {
  Condition c;
  c.kind = k;
  c.children = std::move(ch);
  return c;
}
std::optional<bool> eval(const Condition& c, const FactSet& f) {
  return eval_condition(c, f, {}, nullptr);
}

FactSet sample() {
  FactSet f;
  f.put_ok("mem.total_bytes", std::int64_t{134299025408}, "/proc/meminfo");
  f.put_ok("ttm.pages_limit_bytes", std::int64_t{67149512704},
           "/sys/module/ttm/parameters/pages_limit");
  f.put_ok("kernel.version", std::string("6.17.4"), "/proc/sys/kernel/osrelease");
  f.put_ok("kernel.cmdline.names", std::vector<std::string>{"ro", "quiet"}, "/proc/cmdline");
  f.put_ok("gpu.0.gfx_target", std::string("gfx1100"), "kfd");
  f.put_ok("gpu.1.gfx_target", std::string("gfx1151"), "kfd");
  f.put_status("ttm.configured.pages_limit_bytes", Status::missing, "derived", "not configured");
  return f;
}
} // namespace

TEST_CASE("comparison operators", "[engine]") {
  FactSet f = sample();
  CHECK(eval(leaf("mem.total_bytes", Op::gt, 1), f) == true);
  CHECK(eval(leaf("mem.total_bytes", Op::eq, 134299025408.0), f) == true);
  CHECK(eval(leaf("kernel.version", Op::version_lt, "6.18.4"), f) == true);
  CHECK(eval(leaf("kernel.version", Op::version_ge, "6.17"), f) == true);
  CHECK(eval(leaf("kernel.version", Op::matches, "6\\.17\\..*"), f) == true);
  CHECK(eval(leaf("kernel.version", Op::in, json::array({"6.17.4", "6.18"})), f) == true);
  CHECK(eval(leaf("kernel.version", Op::not_in, json::array({"6.17.4"})), f) == false);
  CHECK(eval(leaf("kernel.cmdline.names", Op::contains, "quiet"), f) == true);
  CHECK(eval(leaf("kernel.cmdline.names", Op::contains_any, json::array({"nomodeset", "ro"})), f) ==
        true);
  CHECK(eval(leaf("kernel.cmdline.names", Op::empty, false), f) == true);
  CHECK(eval(leaf("kernel.cmdline.names", Op::empty, true), f) == false);
  f.put_ok("empty.text", std::string(""), "t");
  CHECK(eval(leaf("empty.text", Op::empty, true), f) == true);
  CHECK(eval(leaf("empty.text", Op::empty, false), f) == false);
  CHECK(eval(leaf("kernel.version", Op::empty, false), f) == true);
  CHECK(eval(leaf("ttm.configured.pages_limit_bytes", Op::exists, false), f) == true);
  CHECK(eval(leaf("ttm.configured.pages_limit_bytes", Op::status, "missing"), f) == true);
  CHECK(eval(leaf("never.collected", Op::status, "missing"), f) == true);
  // A number compared with a string is unknown, not false.
  CHECK_FALSE(eval(leaf("kernel.version", Op::lt, 3), f).has_value());
}

TEST_CASE("operands can scale another fact", "[engine]") {
  FactSet f = sample();
  Condition c = leaf("ttm.pages_limit_bytes", Op::lt, nullptr);
  c.operand.literal.reset();
  c.operand.fact = "mem.total_bytes";
  c.operand.times = 0.75;
  CHECK(eval(c, f) == true);
  c.operand.times = 0.5;
  CHECK(eval(c, f) == false);
  c.operand.times = 1.0;
  c.operand.param = "";
  c.operand.plus = -100e9;
  CHECK(eval(c, f) == false);
}

TEST_CASE("contains takes another fact as its operand", "[engine]") {
  // torch-missing-gfx-target: does the wheel's target list hold the judged GPU's target?
  FactSet f = sample();
  f.put_ok("framework.torch.gfx_targets", std::vector<std::string>{"gfx1100", "gfx942"}, "t");
  auto contains_fact = [](std::string fact, std::string operand) {
    Condition c = leaf(std::move(fact), Op::contains, nullptr);
    c.operand.literal.reset();
    c.operand.fact = std::move(operand);
    return c;
  };
  CHECK(eval(contains_fact("framework.torch.gfx_targets", "gpu.0.gfx_target"), f) == true);
  CHECK(eval(contains_fact("framework.torch.gfx_targets", "gpu.1.gfx_target"), f) == false);
  // A string holds another fact's string as a substring.
  CHECK(eval(contains_fact("kernel.version", "kernel.version"), f) == true);
  // An operand fact that is missing, or not a string for a string, is unknown, never a throw.
  CHECK_FALSE(eval(contains_fact("framework.torch.gfx_targets", "gpu.7.gfx_target"), f));
  CHECK_FALSE(eval(contains_fact("kernel.version", "mem.total_bytes"), f).has_value());
  CHECK_FALSE(eval(contains_fact("kernel.version", "kernel.cmdline.names"), f).has_value());
}

TEST_CASE("missing facts make conditions unknown, and logic is three-valued", "[engine]") {
  FactSet f = sample();
  Condition unknown = leaf("ttm.configured.pages_limit_bytes", Op::gt, 0);
  Condition t = leaf("mem.total_bytes", Op::gt, 0);
  Condition fl = leaf("mem.total_bytes", Op::lt, 0);
  std::vector<std::string> keys;
  CHECK_FALSE(eval_condition(unknown, f, {}, &keys).has_value());
  CHECK(keys == std::vector<std::string>{"ttm.configured.pages_limit_bytes"});
  CHECK(eval(group(Condition::Kind::all, {unknown, fl}), f) == false);
  CHECK_FALSE(eval(group(Condition::Kind::all, {unknown, t}), f).has_value());
  CHECK(eval(group(Condition::Kind::any, {unknown, t}), f) == true);
  CHECK_FALSE(eval(group(Condition::Kind::any, {unknown, fl}), f).has_value());
  CHECK(eval(group(Condition::Kind::none, {fl}), f) == true);
  CHECK(eval(group(Condition::Kind::none, {t}), f) == false);
}

TEST_CASE("a wildcard fact holds when any match holds; no match is false", "[engine]") {
  FactSet f = sample();
  CHECK(eval(leaf("gpu.*.gfx_target", Op::eq, "gfx1151"), f) == true);
  CHECK(eval(leaf("gpu.*.gfx_target", Op::eq, "gfx942"), f) == false);
  CHECK(eval(leaf("nothing.*.here", Op::eq, "x"), f) == false);
}

TEST_CASE("templates expand facts, GiB and params", "[engine]") {
  FactSet f = sample();
  Params p{{"reserve_gib", 4}};
  CHECK(expand_template("{gib:ttm.pages_limit_bytes} of {gib:mem.total_bytes}", f, p) ==
        "62.54 GiB of 125.08 GiB");
  CHECK(expand_template("reserve {param:reserve_gib} GiB, {kernel.cmdline.names}", f, p) ==
        "reserve 4 GiB, ro, quiet");
  CHECK(expand_template("unknown {no.such.fact}, missing {ttm.configured.pages_limit_bytes}", f,
                        p) == "unknown ?, missing ?");
  CHECK(expand_template("shell ${HOME} and {Not A Key} stay", f, p) ==
        "shell ${HOME} and {Not A Key} stay");
  // hwmon power is in microwatts.
  f.put_ok("gpu.0.power.cap_uw", std::int64_t{450000000}, "hwmon power1_cap");
  f.put_ok("gpu.0.power.now_uw", std::int64_t{142500000}, "hwmon power1_input");
  CHECK(expand_template("{watts:gpu.0.power.cap_uw}, {watts:gpu.0.power.now_uw}, {watts:no.fact}",
                        f, p) == "450 W, 142.5 W, ?");
}

TEST_CASE("versions compare numerically", "[engine]") {
  CHECK(compare_versions("6.18.10", "6.18.4") == 1);
  CHECK(compare_versions("6.14.0", "6.15") == -1);
  CHECK(compare_versions("6.15", "6.15.0") == 0);
  CHECK(compare_versions("6.18.4-200.fc43.x86_64", "6.18.4") == 0);
  CHECK(compare_versions("7.0", "6.99.99") == 1);
  CHECK(compare_versions("7.1.0", "6.18.4") == 1);
  CHECK(compare_versions("6.018", "6.18") == 0);
  // Numbers longer than any integer type compare as numbers, without overflow.
  CHECK(compare_versions("6.18.99999999999999999999999", "6.18.4") == 1);
  CHECK(compare_versions("6.18.4", "6.18.99999999999999999999999") == -1);
}

TEST_CASE("rules evaluate to pass, fail, skip and error", "[engine]") {
  FactSet f = sample();
  Rule r;
  r.id = "demo";
  r.title = "demo";
  r.area = "memory";
  r.pass_message = "fine";
  r.fail.push_back(FailCase{Severity::error, leaf("ttm.pages_limit_bytes", Op::lt, 1e11),
                            "low: {gib:ttm.pages_limit_bytes}", nullptr});
  r.fix = json{{"kernel_args",
                {{"set", {{"{kernel.version}.x", "{mem.total_bytes}"}}},
                 {"remove", json::array({"{kernel.cmdline.names}"})}}}};
  RuleSet rs;
  rs.rules.push_back(r);
  auto res = evaluate(rs, f, {});
  REQUIRE(res.size() == 1);
  CHECK(res[0].status == Outcome::fail);
  CHECK(res[0].message == "low: 62.54 GiB");
  CHECK(res[0].fix["kernel_args"]["set"]["6.17.4.x"] == 134299025408);
  CHECK(res[0].fix["kernel_args"]["remove"] == json::array({"ro", "quiet"}));

  // A fail case with its own fix replaces the rule's fix when it decides, and only then.
  FailCase own{Severity::warning, leaf("kernel.version", Op::eq, "6.17.4"), "own case",
               json{{"manual", json::array({"run on {kernel.version}"})}}};
  rs.rules[0].fail.insert(rs.rules[0].fail.begin(), own);
  res = evaluate(rs, f, {});
  CHECK(res[0].message == "own case");
  CHECK(res[0].fix == json{{"manual", json::array({"run on 6.17.4"})}});
  rs.rules[0].fail[0].when = leaf("kernel.version", Op::eq, "6.18");
  res = evaluate(rs, f, {});
  CHECK(res[0].message == "low: 62.54 GiB");
  CHECK(res[0].fix.contains("kernel_args"));
  CHECK_FALSE(res[0].fix.contains("manual"));
  rs.rules[0].fail.erase(rs.rules[0].fail.begin());

  rs.rules[0].applies.push_back(
      Precondition{leaf("gpu.0.gfx_target", Op::eq, "gfx942"), "not MI300 ({gpu.0.gfx_target})"});
  res = evaluate(rs, f, {});
  CHECK(res[0].status == Outcome::skip);
  CHECK(res[0].message == "not MI300 (gfx1100)");

  rs.rules[0].applies.clear();
  rs.rules[0].fail[0].when = leaf("ttm.configured.pages_limit_bytes", Op::lt, 1);
  res = evaluate(rs, f, {});
  CHECK(res[0].status == Outcome::error);
  CHECK_THAT(res[0].message,
             Catch::Contains("ttm.configured.pages_limit_bytes (missing: not configured)"));

  // A probe that was not run on request (--no-runtime) makes its rules skip, with the reason;
  // a fact missing for any other reason still makes the rule an error, in applies and in fail.
  f.put_status("hsa.gpu_count", Status::missing, "hsa probe", "skipped: --no-runtime");
  rs.rules[0].fail[0].when = leaf("hsa.gpu_count", Op::lt, 1);
  res = evaluate(rs, f, {});
  CHECK(res[0].status == Outcome::skip);
  CHECK(res[0].message == "not checked: the probe was not run (--no-runtime)");
  rs.rules[0].fail[0].when = group(Condition::Kind::all, {leaf("hsa.gpu_count", Op::lt, 1),
                                                          leaf("kernel.release", Op::eq, "x")});
  res = evaluate(rs, f, {});
  CHECK(res[0].status == Outcome::error);
  rs.rules[0].fail[0].when = leaf("mem.total_bytes", Op::lt, 1);
  rs.rules[0].applies.push_back(Precondition{leaf("hsa.gpu_count", Op::ge, 1), "no GPU"});
  res = evaluate(rs, f, {});
  CHECK(res[0].status == Outcome::skip);
  CHECK(res[0].message == "not checked: the probe was not run (--no-runtime)");
}

TEST_CASE("the gate exit code follows --fail-on and pending reboots", "[engine]") {
  Result warn{};
  warn.status = Outcome::fail;
  warn.severity = Severity::warning;
  Result err{};
  err.status = Outcome::fail;
  err.severity = Severity::error;
  Result pending = err;
  pending.pending_reboot = true;
  Result skipped{};
  skipped.status = Outcome::skip;
  skipped.severity = Severity::error;
  CHECK(gate_exit_code({warn}, FailOn::error) == 0);
  CHECK(gate_exit_code({warn}, FailOn::warning) == 1);
  CHECK(gate_exit_code({err, warn}, FailOn::never) == 0);
  CHECK(gate_exit_code({pending}, FailOn::error) == 4);
  CHECK(gate_exit_code({pending, err}, FailOn::error) == 1);
  CHECK(gate_exit_code({skipped}, FailOn::info) == 0);
}

TEST_CASE("a forged gpu.count cannot make a per-GPU rule loop without bound", "[rules][gpu]") {
  const ProbeRegistry reg = builtin_probes();
  RuleSet rs;
  rs.rules = parse_rules_file(R"({"area": "a", "rules": [
  {"id": "per-gpu", "title": "t", "pass_message": "ok", "why": "w", "scope": "gpu",
   "fail": [{"severity": "error", "when": {"fact": "gpu.this.apu", "eq": true}, "message": "m"}],
   "sources": ["https://example.org"]}]})",
                              "r.json", &reg);
  FactSet f;
  f.put_ok("gpu.count", std::int64_t{1} << 40, "forged");
  const auto results = evaluate(rs, f, default_params());
  CHECK(results.size() == 1024);
  CHECK(results.back().gpu->index == 1023);
}

TEST_CASE("a finding's proof names the facts that decided it, not the branches ruled out",
          "[engine]") {
  // The shape of kernel_has_gfx1151_fixes: a fixed version, or an Ubuntu kernel (its flavor
  // exists) at a fixed ABI. On Fedora the flavor is absent: that only rules the Ubuntu branch
  // out, so the proof shows the version and not "kernel.ubuntu_flavor = <missing>" (issue 46).
  FactSet f = sample();
  f.put_status("kernel.ubuntu_flavor", Status::missing, "osrelease", "not an Ubuntu release");
  f.put_ok("amdgpu.dkms", false, "/sys/module/amdgpu/version");
  Rule r;
  r.id = "demo";
  r.title = "demo";
  r.area = "kernel";
  r.pass_message = "fine";
  const Condition fixed =
      group(Condition::Kind::any,
            {leaf("kernel.version", Op::version_ge, "6.18.4"),
             group(Condition::Kind::all, {leaf("kernel.ubuntu_flavor", Op::exists, true),
                                          leaf("kernel.ubuntu_flavor", Op::eq, "generic")})});
  r.fail.push_back(FailCase{Severity::warning,
                            group(Condition::Kind::all, {leaf("amdgpu.dkms", Op::eq, false),
                                                         group(Condition::Kind::none, {fixed})}),
                            "old", nullptr});
  RuleSet rs;
  rs.rules.push_back(r);
  auto keys = [&] {
    auto res = evaluate(rs, f, {});
    REQUIRE(res.size() == 1);
    REQUIRE(res[0].status == Outcome::fail);
    std::vector<std::string> k;
    for (const auto& e : res[0].proof)
      k.push_back(e.key);
    return k;
  };
  CHECK(keys() == std::vector<std::string>{"amdgpu.dkms", "kernel.version"});

  // `exists: false` that holds on an absent fact is the finding's own proof ("not configured").
  rs.rules[0].fail[0].when =
      group(Condition::Kind::all, {leaf("ttm.configured.pages_limit_bytes", Op::exists, false),
                                   leaf("ttm.pages_limit_bytes", Op::lt, 1e11)});
  CHECK(keys() ==
        std::vector<std::string>{"ttm.configured.pages_limit_bytes", "ttm.pages_limit_bytes"});

  // On an Ubuntu kernel whose ABI is too old the flavor is ok and part of the proof.
  f.put_ok("kernel.ubuntu_flavor", std::string("oem"), "/proc/sys/kernel/osrelease");
  rs.rules[0].fail[0].when = r.fail[0].when;
  CHECK(keys() ==
        std::vector<std::string>{"amdgpu.dkms", "kernel.version", "kernel.ubuntu_flavor"});
}

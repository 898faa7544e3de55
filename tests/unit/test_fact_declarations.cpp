// SPDX-License-Identifier: MIT
// The probes' fact declarations (issue 10) are true and docs/facts.md is generated from them:
// every fact the fixture roots, the replayed ROCr captures, training plans and a recorded
// --framework-deep interpreter produce matches a declared pattern, and every ok fact's value has
// the type its most specific declaration gives; no probe reads a fact outside its declared inputs
// on any of them; docs/facts.md equals `halo-doctor facts --declared --format markdown`.
#include "fixture_tree.hpp"
#include "kernel_args/module_options.hpp"
#include "probes.hpp"

#include <halo/checks.hpp>
#include <halo/plan.hpp>
#include <halo/probe.hpp>

#include <catch2/catch.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

using namespace halo;
namespace fs = std::filesystem;

namespace {

/// Every fact of `facts` that no declaration of `reg` matches, or whose ok value has another type
/// than its most specific declaration says, as "KEY: why" (one line per key).
std::map<std::string, std::string> violations(const ProbeRegistry& reg, const FactSet& facts) {
  std::map<std::string, std::string> out;
  for (const auto& [key, fact] : facts.all()) {
    // A probe that read a fact it does not declare among its inputs (ProbeRegistry).
    if (!fact.ok() && fact.reason.find("(Probe::inputs)") != std::string::npos) {
      out[key] = fact.reason;
      continue;
    }
    const FactDecl* d = reg.declaration_for(key);
    if (d == nullptr) {
      out[key] = "no probe declares it";
      continue;
    }
    if (!fact.ok()) continue;
    const auto t = fact_type_of(fact.value);
    if (!t) {
      out[key] = fmt::format("ok without a value (declared {} by `{}`)", fact_type_name(d->type),
                             d->pattern);
    } else if (*t != d->type) {
      out[key] = fmt::format("is {} ({}), declared {} by `{}`", fact_type_name(*t),
                             format_value(fact.value), fact_type_name(d->type), d->pattern);
    }
  }
  return out;
}

/// Adds the violations of one run, labelled with where the facts came from.
void add(std::map<std::string, std::string>& all, const ProbeRegistry& reg, const FactSet& facts,
         const std::string& where) {
  for (const auto& [k, why] : violations(reg, facts))
    all.try_emplace(k, fmt::format("{} ({})", why, where));
}

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string report(const std::map<std::string, std::string>& v) {
  std::string out;
  for (const auto& [k, why] : v)
    out += fmt::format("  {}: {}\n", k, why);
  return out;
}

/// A probe that declares "x.count" an int and produces whatever `value` is.
class FakeProbe : public Probe {
public:
  explicit FakeProbe(Value v) : value_(std::move(v)) {}
  std::string_view id() const override { return "fake"; }
  std::span<const FactDecl> declarations() const override {
    static constexpr FactDecl kDecls[] = {{"x.*", FactType::string, "", "anything"},
                                          {"x.count", FactType::integer, "count", "a count"}};
    return kDecls;
  }
  std::string source() const override { return "nothing"; }
  std::vector<std::string> reads() const override { return {}; }
  void collect(const ProbeContext& /*ctx*/, FactSet& facts) const override {
    facts.put_ok("x.count", value_, "fake");
    facts.put_ok("x.name", std::string("n"), "fake");
    facts.put_ok("y.undeclared", true, "fake");
  }

private:
  Value value_;
};

FactSet run(const ProbeRegistry& reg) {
  const ProbeOptions opt;
  const Root root(fs::temp_directory_path());
  return reg.collect(ProbeContext{root, opt});
}

} // namespace

TEST_CASE("docs/facts.md is what `halo-doctor facts --declared --format markdown` prints",
          "[facts][docs]") {
  const std::string want = declared_facts_markdown(builtin_probes());
  const std::string have = read_file(fs::path(HALO_DOCS_DIR) / "facts.md");
  if (have != want) {
    std::istringstream a(have);
    std::istringstream b(want);
    std::string la;
    std::string lb;
    int line = 0;
    while (true) {
      ++line;
      const bool ea = !std::getline(a, la);
      const bool eb = !std::getline(b, lb);
      if (ea && eb) break;
      if (ea || eb || la != lb) break;
    }
    FAIL(fmt::format("docs/facts.md is out of date with the probes' declarations (first difference "
                     "at line {}:\n  file:      {}\n  generated: {}\n). Regenerate it: "
                     "build/halo-doctor facts --declared --format markdown -o docs/facts.md",
                     line, la, lb));
  }
}

TEST_CASE("the declaration check finds an undeclared fact and a value of the wrong type",
          "[facts]") {
  ProbeRegistry reg;
  reg.add(std::make_unique<FakeProbe>(std::string("three")));
  reg.resolve();
  auto v = violations(reg, run(reg));
  CHECK(v.size() == 2);
  CHECK(v["y.undeclared"] == "no probe declares it");
  // x.count matches `x.*` (string) too; the more specific `x.count` (int) governs.
  CHECK(v["x.count"] == "is string (three), declared int by `x.count`");

  ProbeRegistry good;
  good.add(std::make_unique<FakeProbe>(std::int64_t{3}));
  good.resolve();
  v = violations(good, run(good));
  CHECK(v.size() == 1);
  CHECK(v.count("y.undeclared") == 1);
}

TEST_CASE(
    "every built-in probe has its entry in checks/<folder>/facts.json, and every entry a probe",
    "[facts]") {
  const ProbeRegistry reg = builtin_probes();
  const auto declared = probes::declared_probes();
  std::set<std::string, std::less<>> ids;
  for (const auto& p : reg.probes()) {
    INFO(p->id());
    ids.emplace(p->id());
    const auto decls = probes::declared_facts(p->id());
    // The probe declares exactly its entry, viewed in place (not a copy), ...
    CHECK(p->declarations().data() == decls.data());
    CHECK(p->declarations().size() == decls.size());
    // ... and the entry lives in the folder of its families, beside the probe's file.
    const auto entry = std::ranges::find(declared, p->id(), &probes::DeclaredProbe::id);
    REQUIRE(entry != declared.end());
    for (const auto& d : decls)
      CHECK(entry->file == fmt::format("checks/{}/facts.json", family_folder(d.pattern)));
    // Its source text is the entry's, but for the environment probe's, which is computed: the
    // entry is its format string, the variables it reads fill in the `{}`.
    CHECK_FALSE(entry->source.empty());
    if (p->id() == "environment")
      CHECK(p->source() ==
            fmt::format(fmt::runtime(entry->source), fmt::join(p->env_reads(), ", ")));
    else
      CHECK(p->source() == entry->source);
  }
  // No entry for a probe that does not exist (a renamed or deleted probe leaves none behind).
  for (const auto& e : declared) {
    INFO(e.id);
    CHECK(ids.contains(e.id));
  }
  CHECK(declared.size() == reg.probes().size());
  // The ids are sorted, which declared_facts()'s binary search needs.
  CHECK(std::ranges::is_sorted(declared, {}, &probes::DeclaredProbe::id));
  CHECK_THROWS_AS(probes::declared_facts("no_such_probe"), std::logic_error);
}

TEST_CASE("a probe's inputs, reads and environment variables are its facts.json entry's",
          "[facts]") {
  // Read from the files themselves, not from the compiled tables, so that a compiler that put
  // one list in another's place (or dropped one) fails here.
  const fs::path checks = fs::path(HALO_RULES_DIR).parent_path() / "checks";
  std::map<std::string, nlohmann::json, std::less<>> entries;
  for (const auto& dir : fs::directory_iterator(checks))
    if (fs::exists(dir.path() / "facts.json"))
      for (const auto& e : nlohmann::json::parse(read_file(dir.path() / "facts.json")))
        entries.emplace(e.at("probe").get<std::string>(), e);
  const auto list = [](const nlohmann::json& e, const char* field) {
    std::vector<std::string> out;
    for (const auto& v : e.value(field, nlohmann::json::array()))
      out.push_back(v.is_object() ? v.at("described").get<std::string>() : v.get<std::string>());
    return out;
  };
  // The two probes that append reads computed from a table their code reads (add_reads), and
  // how many.
  const std::map<std::string, std::size_t, std::less<>> computed = {{"runenv", 5},
                                                                    {"boot_stack", 48}};
  const ProbeRegistry reg = builtin_probes();
  std::size_t with_inputs = 0;
  for (const auto& p : reg.probes()) {
    INFO(p->id());
    const auto it = entries.find(p->id());
    REQUIRE(it != entries.end());
    const nlohmann::json& e = it->second;
    CHECK(p->inputs() == list(e, "inputs"));
    CHECK(p->env_reads() == list(e, "env"));
    CHECK(p->is_derivation() == e.value("derivation", false));
    std::vector<std::string> reads = p->reads();
    const auto extra = computed.find(p->id());
    const std::size_t more = extra == computed.end() ? 0 : extra->second;
    REQUIRE(reads.size() >= more);
    reads.resize(reads.size() - more);
    CHECK(reads == list(e, "reads"));
    with_inputs += p->inputs().empty() ? 0 : 1;
  }
  CHECK(entries.size() == reg.probes().size());
  CHECK(with_inputs > 20); // the lists were read at all (30 probes have inputs)
  // One exact entry, written out: ttm reads amdgpu's two facts and four sysfs globs.
  const auto& ttm = *std::ranges::find(reg.probes(), "ttm", &Probe::id);
  CHECK(ttm->inputs() == std::vector<std::string>{"amdgpu.loaded", "amdgpu.dkms"});
  CHECK(ttm->reads() == std::vector<std::string>{
                            "/sys/module/ttm/parameters/*", "/sys/module/amdttm/parameters/*",
                            "/sys/module/amd_ttm/parameters/*", "/sys/module/*/holders/amdgpu"});
  // The interpreter's resolution (python_env.cpp) runs under both framework probes: what the
  // deep probe reads of the environment, the framework probe reads too.
  const auto env_of = [&](std::string_view id) {
    return (*std::ranges::find(reg.probes(), id, &Probe::id))->env_reads();
  };
  const auto framework = env_of("framework");
  for (const auto& name : env_of("framework_deep"))
    CHECK(std::ranges::find(framework, name) != framework.end());
  // module_options() and hidden_host_config() read the facts of kModuleOptionInputs: each
  // derivation that calls them lists those among its inputs.
  for (const std::string_view id :
       {"modparam", "amdgpu_driver", "amdgpu_gttsize", "ttm_configured"}) {
    INFO(id);
    const auto inputs = (*std::ranges::find(reg.probes(), id, &Probe::id))->inputs();
    for (const std::string_view in : probes::kModuleOptionInputs)
      CHECK(std::ranges::find(inputs, in) != inputs.end());
  }
  // A probe built with the other class than its entry says is a programming error.
  CHECK_THROWS_AS(probes::BasicDerivation("ttm", [](const DeriveContext&, FactSet&) {}),
                  std::logic_error);
  CHECK_THROWS_AS(probes::BasicProbe("ttm_configured", [](const ProbeContext&, FactSet&) {}),
                  std::logic_error);
}

TEST_CASE("the most specific declaration governs a key", "[facts]") {
  const ProbeRegistry reg = builtin_probes();
  const FactDecl* names = reg.declaration_for("fw.card1.names");
  REQUIRE(names != nullptr);
  CHECK(names->pattern == "fw.*.names");
  CHECK(names->type == FactType::list);
  const FactDecl* mes = reg.declaration_for("fw.card1.mes");
  REQUIRE(mes != nullptr);
  CHECK(mes->pattern == "fw.*.*");
  const FactDecl* status = reg.declaration_for("probe.kernel.status");
  REQUIRE(status != nullptr);
  CHECK(status->type == FactType::string);
  CHECK(reg.declaration_for("no.such.fact") == nullptr);
  // provides() is the declarations' patterns, so the rule loader sees the same keys.
  for (const auto& p : reg.probes()) {
    const auto decls = p->declarations();
    const auto patterns = p->provides();
    REQUIRE(decls.size() == patterns.size());
    for (std::size_t i = 0; i < decls.size(); ++i)
      CHECK(decls[i].pattern == patterns[i]);
    CHECK_FALSE(p->source().empty());
    for (const auto& d : decls)
      CHECK_FALSE(d.meaning.empty());
  }
}

TEST_CASE("every fact the fixtures produce is declared, with the type it has", "[facts]") {
  const ProbeRegistry reg = builtin_probes();
  std::map<std::string, std::string> all;
  // The declarations whose type some ok fact checked.
  std::set<std::string, std::less<>> checked;
  auto note = [&](const FactSet& facts) {
    for (const auto& [k, f] : facts.all())
      if (const FactDecl* d = reg.declaration_for(k); d != nullptr && f.ok())
        checked.emplace(d->pattern);
  };

  // 1. Every fixture root, as `facts --root DIR --no-runtime` reads it.
  int roots = 0;
  for (const auto& e : fs::directory_iterator(HALO_FIXTURES_DIR)) {
    if (!fs::exists(e.path() / "README.md")) continue;
    const FactSet facts = test::probe_root(e.path());
    add(all, reg, facts, e.path().filename().string());
    note(facts);
    ++roots;
  }
  CHECK(roots >= 40);

  // 2. The replayed ROCr captures (tests/replay): the hsa.* facts.
  for (const auto& e : fs::directory_iterator(HALO_REPLAY_CAPTURES)) {
    if (e.path().extension() != ".json") continue;
    ::setenv("HALO_REPLAY_CAPTURE", e.path().c_str(), 1);
    ProbeOptions opt;
    opt.hsa_library = HALO_REPLAY_LIBRARY;
    const Root root(test::fixture("strix-halo-fixed"));
    const FactSet facts = reg.collect(ProbeContext{root, opt});
    add(all, reg, facts, "replay " + e.path().filename().string());
    note(facts);
  }
  // A ROCr that crashes in the memory-pool queries or refuses hsa_init: hsa.error, init codes.
  ::setenv("HALO_REPLAY_CAPTURE", (fs::path(HALO_REPLAY_CAPTURES) / "strix-halo-120g.json").c_str(),
           1);
  for (const char* mode : {"crash_in_pools", "init_fail"}) {
    ::setenv("HALO_REPLAY_MODE", mode, 1);
    ProbeOptions opt;
    opt.hsa_library = HALO_REPLAY_LIBRARY;
    const Root root(test::fixture("strix-halo-fixed"));
    const FactSet facts = reg.collect(ProbeContext{root, opt});
    add(all, reg, facts, std::string("replay mode ") + mode);
    note(facts);
  }
  ::unsetenv("HALO_REPLAY_MODE");
  ::unsetenv("HALO_REPLAY_CAPTURE");

  // 3. Training plans (tests/plan): the plan.* facts, with and without a training configuration.
  const std::string plans = HALO_PLAN_DIR;
  for (const auto& [model, configs] : std::vector<std::pair<std::string, std::vector<std::string>>>{
           {"/models/llama-3-8b", {}},
           {"/models/llama-3-8b", {"/train/axolotl-llama3-qlora.yml"}},
           {"/models/mixtral-8x7b-v0.1", {"/train/axolotl-llama3-lora-8b.yml"}}}) {
    std::vector<std::string> paths;
    for (const auto& c : configs)
      paths.push_back(plans + c);
    ProbeOptions opt;
    opt.no_runtime = true;
    opt.plan = std::make_shared<const plan::Plan>(plan::make_plan(plans + model, paths, {}));
    const Root root(test::fixture("strix-halo-default-ttm"));
    const FactSet facts = reg.collect(ProbeContext{root, opt});
    add(all, reg, facts, "plan " + model);
    note(facts);
  }

  // 4. --framework-deep against a recorded interpreter (tests/replay/python), merged into a
  // fixture's facts and re-derived: the framework.deep.* facts and what derived adds to them.
  {
    ProbeOptions opt;
    opt.no_runtime = true;
    opt.framework_deep = true;
    opt.python =
        (fs::path(HALO_REPLAY_CAPTURES).parent_path() / "python" / "strix-halo-default-ttm.sh")
            .string();
    const Root live("/");
    FactSet facts = test::probe_root(test::fixture("strix-halo-default-ttm"));
    for (const auto& p : reg.probes())
      if (p->id() == "framework_deep") p->collect(ProbeContext{live, opt}, facts);
    REQUIRE(facts.get<std::string>("framework.deep.status") == std::string("ok"));
    reg.rederive(opt, facts);
    add(all, reg, facts, "framework-deep replay");
    note(facts);
  }

  // 5. A fixture with the files no recorded machine has: host tuning, DMI, a systemd container
  // marker, the hypervisor flag, a modprobe.d blacklist and blocking install line, edge
  // temperatures, an unlimited locked-memory limit.
  {
    const fs::path tmp = fs::temp_directory_path() / fmt::format("halo-decl-{}", ::getpid());
    fs::remove_all(tmp);
    fs::copy(test::fixture("strix-halo-default-ttm"), tmp,
             fs::copy_options::recursive | fs::copy_options::copy_symlinks);
    auto put = [&](const std::string& rel, const std::string& text) {
      const fs::path p = tmp / rel;
      fs::create_directories(p.parent_path());
      std::ofstream(p) << text;
    };
    const std::string cpu = "sys/devices/system/cpu/cpu0/";
    put(cpu + "cpufreq/scaling_governor", "performance\n");
    put(cpu + "cpuidle/state2/disable", "0\n");
    put(cpu + "cpuidle/state2/name", "C2\n");
    put("sys/kernel/mm/transparent_hugepage/enabled", "always [madvise] never\n");
    put("proc/self/limits",
        "Limit                     Soft Limit           Hard Limit           Units\n"
        "Max open files            1024                 524288               files\n"
        "Max locked memory         unlimited            unlimited            bytes\n");
    for (const char* f :
         {"product_name", "sys_vendor", "board_vendor", "bios_vendor", "product_version"})
      put(std::string("sys/class/dmi/id/") + f, "QEMU\n");
    put("run/systemd/container", "docker\n");
    put("proc/cpuinfo", "processor\t: 0\nflags\t\t: fpu hypervisor lm\n");
    // The systemd container marker makes the host's configuration ROOT/run/host's.
    put("run/host/etc/modprobe.d/zz-block.conf", "blacklist amdgpu\ninstall amdgpu /bin/false\n");
    const std::string hw = "sys/class/drm/card1/device/hwmon/hwmon0/";
    put(hw + "temp1_label", "edge\n");
    put(hw + "temp1_input", "45000\n");
    put(hw + "temp1_crit", "100000\n");
    const FactSet facts = test::probe_root(tmp);
    fs::remove_all(tmp);
    REQUIRE(facts.get<std::string>("runenv.dmi.sys_vendor") == std::string("QEMU"));
    REQUIRE(facts.get_int("drm.card1.temp.edge_mc") == std::int64_t{45000});
    REQUIRE(facts.find("modprobe.blocked_source.amdgpu") != nullptr);
    add(all, reg, facts, "synthetic root");
    note(facts);
  }

  INFO(fmt::format("facts that break their declarations:\n{}", report(all)));
  CHECK(all.empty());
  // The runs above check the type of most declarations (the rest need a live GPU, libdrm, or a
  // state no fixture has).
  std::string unchecked;
  for (const auto& d : reg.declarations())
    if (!checked.contains(d.pattern)) unchecked += fmt::format(" {}", d.pattern);
  INFO(fmt::format("{} of {} declarations type-checked; not:{}", checked.size(),
                   reg.declarations().size(), unchecked));
  CHECK(checked.size() * 10 >= reg.declarations().size() * 8);
}

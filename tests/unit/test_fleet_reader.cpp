// SPDX-License-Identifier: MIT
// fleet compare's fast reader (include/halo/fleet.hpp read_facts_subset,
// include/halo/rederive.hpp): the facts it keeps and the values it compares are those the full
// replay (facts_from_json_text, ProbeRegistry::rederive) gives, and whatever it is not sure of is
// left to the full replay.
#include "fixture_tree.hpp"

#include <halo/checks.hpp>
#include <halo/doctor.hpp>
#include <halo/error.hpp>
#include <halo/fleet.hpp>
#include <halo/io.hpp>
#include <halo/rederive.hpp>
#include <halo/rules.hpp>
#include <halo/sanitize.hpp>
#include <halo/version.hpp>

#include <catch2/catch.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <optional>
#include <random>
#include <string>
#include <vector>

using namespace halo;
namespace fs = std::filesystem;

namespace {

const ProbeRegistry& registry() {
  static const ProbeRegistry reg = builtin_probes();
  return reg;
}

const fleet::Reader& reader() {
  static const fleet::Reader r(registry(), load_builtin_rules(nullptr, false).fleet_compare);
  return r;
}

/// The facts of `all` whose keys the plan reads.
std::map<std::string, Fact, std::less<>> kept(const FactSet& all, const RederivePlan& plan) {
  std::map<std::string, Fact, std::less<>> out;
  for (const auto& [k, f] : all.all())
    if (plan.reads_key(k)) out.emplace(k, f);
  return out;
}

bool same(const Fact& a, const Fact& b) {
  return a.key == b.key && a.value == b.value && a.status == b.status && a.source == b.source &&
         a.reason == b.reason && a.probe == b.probe;
}

void check_same_facts(const std::map<std::string, Fact, std::less<>>& want,
                      const std::map<std::string, Fact, std::less<>>& got) {
  CHECK(want.size() == got.size());
  for (const auto& [k, f] : want) {
    INFO(k);
    const auto it = got.find(k);
    REQUIRE(it != got.end());
    CHECK(same(f, it->second));
  }
}

} // namespace

TEST_CASE("fleet fast reader: every fixture's facts file gives the facts and values of the full "
          "replay",
          "[fleet][fleet-reader]") {
  const RederivePlan& plan = reader().plan();
  // The plan holds the compared quantities, gpu.count and host.name, and the derivations behind
  // them (gpu.count is derived from KFD, DRM and PCI facts).
  CHECK(plan.reads_key("gpu.count"));
  CHECK(plan.reads_key("host.name"));
  CHECK(plan.reads_key("kernel.release"));
  CHECK(plan.reads_key("gpu.3.gfx_target"));
  CHECK_FALSE(plan.derivations.empty());
  int roots = 0;
  for (const auto& e : fs::directory_iterator(HALO_FIXTURES_DIR)) {
    if (!fs::exists(e.path() / "README.md")) continue;
    INFO(e.path().filename().string());
    // `halo-doctor facts --root DIR --no-runtime --format json`, as a node's file holds it.
    const std::string text =
        dump_json(facts_to_json(test::probe_root(e.path()), "halo-doctor", kVersion), 2);
    FactSet full = facts_from_json_text(text, "node.json");
    const auto fast = fleet::read_facts_subset(text, plan);
    if (!fleet::fast_reader()) {
      CHECK_FALSE(fast);
      continue;
    }
    REQUIRE(fast);
    // What the reader keeps is exactly the full replay's facts the plan reads, field by field.
    check_same_facts(kept(full, plan), fast->all());
    // After the derivations: the same facts the plan reads, the same compared values.
    FactSet derived = *fast;
    ProbeOptions opt;
    opt.no_runtime = true;
    rederive(registry(), opt, derived, plan);
    registry().rederive(opt, full);
    std::map<std::string, Fact, std::less<>> want;
    for (const auto& [k, f] : full.all())
      if (plan.reads_key(k) && k.rfind("probe.", 0) != 0) want.emplace(k, f);
    std::map<std::string, Fact, std::less<>> got;
    for (const auto& [k, f] : derived.all())
      if (k.rfind("probe.", 0) != 0) got.emplace(k, f);
    check_same_facts(want, got);
    CHECK(fleet::values_of(derived, reader().quantities()) ==
          fleet::values_of(full, reader().quantities()));
    ++roots;
  }
  CHECK(roots >= 40);
}

TEST_CASE("fleet fast reader: a file it is not sure of is left to the full replay",
          "[fleet][fleet-reader]") {
  if (!fleet::fast_reader()) return;
  const RederivePlan& plan = reader().plan();
  auto file = [](const std::string& facts, const std::string& top = R"("schema_version": 1, )") {
    return "{" + top + R"("facts": {)" + facts + "}}";
  };
  const std::string ok = R"("kernel.release": {"status": "ok", "value": "6.8.0", "source": "s"})";
  // The reader's subset: these it reads, with nlohmann's values.
  for (const std::string& text :
       {file(ok),
        file(ok, R"("tool": {"name": "halo-doctor", "version": "1"}, "schema_version": 1, )"),
        file(R"("kernel.release": {"status": "ok", "value": "6.8\u00e9\n"})"),
        file(R"("numa.balancing": {"status": "ok", "value": -0})"),
        file(R"("numa.balancing": {"status": "ok", "value": 1.5e3})"),
        file(R"("numa.balancing": {"status": "ok", "value": 4.9e-324})"),
        file(R"("numa.balancing": {"status": "ok", "value": -9223372036854775808})"),
        file(R"("host.cpufreq_governors": {"status": "ok", "value": ["a", "b\t"]})"),
        file(
            R"("kernel.release": {"status": "error", "reason": "r", "probe": "p", "value": null})"),
        file(ok + R"(, "kernel.release": {"status": "ok", "value": "twice, the last wins"})"),
        file(R"("k\u0065rnel.release": {"st\u0061tus": "ok", "value": "escaped key"})")}) {
    INFO(text);
    const auto fast = fleet::read_facts_subset(text, plan);
    REQUIRE(fast);
    check_same_facts(kept(facts_from_json_text(text, "f"), plan), fast->all());
  }
  // Not in its subset: malformed files (the full replay names the error), and files nlohmann
  // reads in ways the reader does not copy (a number beyond int64, a field twice, a field it
  // does not know, an object nested where no facts file has one).
  for (const std::string& text : {
           std::string(),
           std::string("[]"),
           file(ok) + "x",
           file(ok) + "{}",
           file(ok).substr(1),
           file(ok, ""),
           file(ok, R"("schema_version": 2, )"),
           file(ok, R"("schema_version": 1.0, )"),
           file(ok, R"("schema_version": 1, "schema_version": 1, )"),
           file(ok, R"("schema_version": 1, "extra": {"a": [1]}, )"),
           file(R"("kernel.release": {"status": "fine"})"),
           file(R"("kernel.release": {"value": "no status"})"),
           file(R"("kernel.release": {"status": "ok", "status": "ok"})"),
           file(R"("kernel.release": {"status": "ok", "value": 18446744073709551615})"),
           file(R"("kernel.release": {"status": "ok", "value": 99999999999999999999})"),
           file(R"("kernel.release": {"status": "ok", "value": 1e400})"),
           file(R"("kernel.release": {"status": "ok", "value": {"a": 1}})"),
           file(R"("kernel.release": {"status": "ok", "value": [1]})"),
           file(R"("kernel.release": {"status": "ok", "source": 5})"),
           file(R"("kernel.release": {"status": "ok", "extra": 1})"),
           file(R"("kernel.release": {"status": "ok", "value": "\q"})"),
           file(R"("kernel.release": {"status": "ok", "value": "\ud800"})"),
           file(R"("kernel.release": {"status": "ok", "value": "\udc00x"})"),
           file("\"kernel.release\": {\"status\": \"ok\", \"value\": \"a\x01\"}"),
           file("\"kernel.release\": {\"status\": \"ok\", \"value\": \"\xff\xfe\"}"),
           file("\"kernel.release\": {\"status\": \"ok\", \"value\": \"a" + std::string(1, '\0') +
                "b\"}"),
           file(R"("kernel.release": {"status": "ok", "value": tru})"),
           file(R"("kernel.release": {"status": "ok", "value": 01})"),
           file(R"("kernel.release": {"status": "ok" "value": 1})"),
           file(R"("kernel.release": {"status": "ok", "value": 1,})"),
           file(ok + ","),
           file(ok + R"(, "numa.balancing": 1)"),
           file(R"("unwanted.fact": {"status": "fine"})"),
           file(R"("unwanted.fact": {"status": "ok", "value": "\x"})"),
           file(ok) + "/* comment */",
       }) {
    INFO(text);
    CHECK_FALSE(fleet::read_facts_subset(text, plan));
  }
}

TEST_CASE("fleet compare: a malformed or hostile file is that node's error, the others are still "
          "compared, the same on one thread and many",
          "[fleet][fleet-reader]") {
  // The nodes' files in a temporary directory (tests/support FixtureTree: removed afterwards).
  test::FixtureTree dir;
  auto write = [&dir](const std::string& name, const std::string& text) {
    dir.file("/" + name, text);
    return (dir.path() / name).string();
  };
  const fs::path fixture = fs::path(HALO_FIXTURES_DIR) / "mi300x-numa-4021";
  nlohmann::json good = facts_to_json(test::probe_root(fixture), "halo-doctor", kVersion);
  std::vector<std::string> inputs;
  for (int i = 1; i <= 6; ++i) {
    good["facts"]["host.name"]["value"] = fmt::format("node{:02d}", i);
    good["facts"]["kernel.release"]["value"] = i == 5 ? "5.15.0-117-generic" : "6.8.0-45-generic";
    inputs.push_back(write(fmt::format("node{:02d}.json", i), dump_json(good, 2)));
  }
  // Malformed: cut off in the middle. Hostile: a PCI function count no machine has
  // (docs/security.md 13), a value that is an object, an unknown status in a fact fleet compare
  // does not compare.
  const std::string text = dump_json(good, 2);
  inputs.insert(inputs.begin() + 1, write("cut.json", text.substr(0, text.size() / 2)));
  nlohmann::json hostile = good;
  hostile["facts"]["pci.amd_gpu_count"] = {{"status", "ok"}, {"value", std::int64_t{1} << 62}};
  inputs.insert(inputs.begin() + 3, write("count.json", dump_json(hostile, 2)));
  hostile = good;
  hostile["facts"]["mem.total_bytes"] = {{"status", "fine"}};
  inputs.push_back(write("status.json", dump_json(hostile, 2)));
  inputs.push_back((dir.path() / "absent.json").string());

  const fleet::Comparison one = fleet::compare_files(inputs, reader(), 1);
  // Each bad file is named with the message the full replay (`check --facts`) gives for it.
  REQUIRE(one.unreadable.size() == 4);
  auto replay_error = [](const std::string& path) {
    DoctorOptions o;
    o.facts_file = path;
    o.probe.no_runtime = true;
    try {
      (void)gather_facts(o, registry());
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("(read)");
  };
  CHECK(one.unreadable[0].node == "cut.json");
  CHECK(one.unreadable[0].reason == replay_error(inputs[1]));
  CHECK(one.unreadable[0].reason.find("not valid JSON") != std::string::npos);
  CHECK(one.unreadable[1].node == "count.json");
  CHECK(one.unreadable[1].reason.find("beyond the 65536 functions") != std::string::npos);
  CHECK(one.unreadable[2].node == "status.json");
  CHECK(one.unreadable[2].reason == replay_error(inputs[inputs.size() - 2]));
  CHECK(one.unreadable[2].reason.find("mem.total_bytes") != std::string::npos);
  CHECK(one.unreadable[3].node == "absent.json");
  // The six good nodes are compared: node05's kernel differs.
  REQUIRE(one.nodes.size() == 6);
  CHECK(one.nodes[4] == "node05");
  REQUIRE(!one.rows.empty());
  CHECK(one.rows[0].label == "kernel");
  CHECK(one.rows[0].differs == std::vector<bool>{false, false, false, false, true, false});
  // Read on several threads, in a window smaller than the input list: the same comparison.
  for (unsigned threads : {2U, 3U, 16U}) {
    const fleet::Comparison many = fleet::compare_files(inputs, reader(), threads);
    CHECK(many.nodes == one.nodes);
    CHECK(dump_json(fleet::comparison_json(many), 2) == dump_json(fleet::comparison_json(one), 2));
    CHECK(fleet::comparison_text(many, true) == fleet::comparison_text(one, true));
  }
}

TEST_CASE("fleet fast reader: on mutated facts files it accepts only what the full reader "
          "accepts, with its values",
          "[fleet][fleet-reader]") {
  if (!fleet::fast_reader()) return;
  const RederivePlan& plan = reader().plan();
  // A small node file with every kind of value, mutated byte by byte (a deterministic stand-in for
  // tests/fuzz/fuzz_fleet_reader, which CI runs longer).
  const std::string base =
      R"({"schema_version": 1, "tool": {"name": "halo-doctor", "version": "0.1"},
 "facts": {
  "host.name": {"status": "ok", "value": "node01", "source": "/proc/sys/kernel/hostname"},
  "kernel.release": {"status": "ok", "value": "6.8.0-45-generic", "source": "s", "probe": "kernel"},
  "kfd.gpu_nodes": {"status": "ok", "value": ["1", "2"], "source": "s"},
  "pci.amd_gpu_count": {"status": "ok", "value": 2, "source": "s"},
  "numa.balancing": {"status": "ok", "value": 0.5e1, "source": "s"},
  "os.pretty_name": {"status": "ok", "value": "Debian \u00e9 \"12\"", "source": "s"},
  "hsa.rocm_version": {"status": "missing", "value": null, "source": "s", "reason": "no ROCm"},
  "host.thp_enabled": {"status": "ok", "value": true, "source": "s"},
  "unwanted.fact": {"status": "ok", "value": -12, "source": "s"}
 }})";
  REQUIRE(fleet::read_facts_subset(base, plan));
  std::minstd_rand rng(42);
  const std::string_view alphabet = "\"\\{}[],:09e.-u nt\x01\xff\x7f";
  int accepted = 0;
  for (int i = 0; i < 3000; ++i) {
    std::string text = base;
    for (int m = 0; m < 1 + static_cast<int>(rng() % 3); ++m) {
      const std::size_t at = rng() % text.size();
      switch (rng() % 3) {
      case 0:
        text[at] = alphabet[rng() % alphabet.size()];
        break;
      case 1:
        text.erase(at, 1 + rng() % 4);
        break;
      default:
        text.insert(at, text.substr(rng() % text.size(), 1 + rng() % 12));
      }
    }
    INFO(text);
    const auto fast = fleet::read_facts_subset(text, plan);
    std::optional<FactSet> full;
    try {
      full = facts_from_json_text(text, "f");
    } catch (const InputError&) {
    }
    if (!fast) continue;
    ++accepted;
    REQUIRE(full);
    check_same_facts(kept(*full, plan), fast->all());
  }
  // Most mutations break the file; enough of them leave it valid to test the values.
  CHECK(accepted > 100);
}

// SPDX-License-Identifier: MIT
#include <halo/error.hpp>
#include <halo/fact.hpp>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>

using namespace halo;

TEST_CASE("key patterns match one segment per star and any tail with **", "[fact]") {
  CHECK(key_matches("gpu.*.apu", "gpu.0.apu"));
  CHECK(key_matches("gpu.*.apu", "gpu.12.apu"));
  CHECK_FALSE(key_matches("gpu.*.apu", "gpu.0.card.apu"));
  CHECK_FALSE(key_matches("gpu.*.apu", "gpu.apu"));
  CHECK(key_matches("kernel.cmdline.param.**", "kernel.cmdline.param.ttm.pages_limit"));
  CHECK_FALSE(key_matches("kernel.cmdline.param.**", "kernel.cmdline.param"));
  // A rule reference with a wildcard matches a provided pattern with a literal there.
  CHECK(key_matches("access.render.*.rw", "access.render.*.rw"));
}

TEST_CASE("a fact set keeps status, replaces by key and matches wildcards", "[fact]") {
  FactSet f;
  f.put_ok("gpu.0.gfx_target", std::string("gfx1151"), "/sys/x");
  f.put_ok("gpu.1.gfx_target", std::string("gfx942"), "/sys/y");
  f.put_status("ttm.pages_limit_pages", Status::denied, "/sys/module/ttm/parameters/pages_limit",
               "Permission denied");
  CHECK(f.get<std::string>("gpu.0.gfx_target") == std::string("gfx1151"));
  CHECK_FALSE(f.get_int("ttm.pages_limit_pages").has_value());
  CHECK(f.find("ttm.pages_limit_pages")->status == Status::denied);
  CHECK(f.match("gpu.*.gfx_target").size() == 2);
  f.put_ok("gpu.0.gfx_target", std::string("gfx1150"), "/sys/z");
  CHECK(f.get<std::string>("gpu.0.gfx_target") == std::string("gfx1150"));
  f.put_ok("x.double", 3.0, "t");
  CHECK(f.get_int("x.double") == 3);
  CHECK(f.get_number("x.double") == Approx(3.0));
}

TEST_CASE("facts survive a JSON round trip with their status and reason", "[fact]") {
  FactSet f;
  f.put_ok("mem.total_bytes", std::int64_t{134299025408}, "/proc/meminfo");
  f.put_ok("kernel.cmdline.names", std::vector<std::string>{"ro", "quiet"}, "/proc/cmdline");
  f.put_ok("bench.ratio", 0.5, "halo-bench");
  f.put_ok("amdgpu.loaded", false, "/sys/module/amdgpu");
  f.put_status("kfd.gpu_nodes", Status::missing, "/sys/class/kfd", "no KFD topology");
  const std::string text = facts_to_json(f, "halo-doctor", "0.1.0").dump();
  FactSet g = facts_from_json_text(text, "saved.json");
  REQUIRE(g.size() == f.size());
  CHECK(g.get_int("mem.total_bytes") == 134299025408);
  CHECK(g.get<std::vector<std::string>>("kernel.cmdline.names")->at(1) == "quiet");
  CHECK(g.get<bool>("amdgpu.loaded") == false);
  CHECK(g.get_number("bench.ratio") == Approx(0.5));
  CHECK(g.find("kfd.gpu_nodes")->status == Status::missing);
  CHECK(g.find("kfd.gpu_nodes")->reason == "no KFD topology");
}

TEST_CASE("a fact names the probe that put it; a copy keeps the probe that read it", "[fact]") {
  FactSet f;
  f.put_ok("host.name", std::string("a"), "/proc/sys/kernel/hostname"); // no producer: none
  f.set_producer("drm");
  f.put_ok("drm.card1.vram_total_bytes", std::int64_t{536870912},
           "/sys/class/drm/card1/device/mem_info_vram_total");
  f.set_producer("gpu_list");
  f.put_status("gpu.1.vram_total_bytes", Status::missing, "derived", "no amdgpu DRM card");
  Fact copy = *f.find("drm.card1.vram_total_bytes"); // what alias() does
  copy.key = "gpu.0.vram_total_bytes";
  f.put(std::move(copy));
  f.set_producer({});
  f.put_ok("probe.drm.status", std::string("ok"), "halo-doctor");
  CHECK(f.find("host.name")->probe.empty());
  CHECK(f.find("drm.card1.vram_total_bytes")->probe == "drm");
  CHECK(f.find("gpu.1.vram_total_bytes")->probe == "gpu_list");
  CHECK(f.find("gpu.0.vram_total_bytes")->probe == "drm");
  CHECK(f.find("probe.drm.status")->probe.empty());
  // Saved and replayed with the probe; a copy of the set takes the facts, not the producer.
  const nlohmann::json j = facts_to_json(f, "halo-doctor", "0.1.0");
  CHECK(j["facts"]["gpu.0.vram_total_bytes"]["probe"] == "drm");
  CHECK_FALSE(j["facts"]["host.name"].contains("probe"));
  const FactSet g = facts_from_json_text(j.dump(), "saved.json");
  CHECK(g.find("gpu.1.vram_total_bytes")->probe == "gpu_list");
  FactSet h = g;
  h.put_ok("x.y", true, "here");
  CHECK(h.find("x.y")->probe.empty());
}

TEST_CASE("a facts file written before the probe field loads, its old sources as text", "[fact]") {
  const FactSet g = facts_from_json_text(
      R"({"schema_version": 1, "tool": {"name": "halo-doctor", "version": "0.1.0"}, "facts": {
           "gpu.0.instinct": {"status": "ok", "value": false, "source": "derived: checks/gpus/gfx.cpp"}}})",
      "old.json");
  REQUIRE(g.find("gpu.0.instinct") != nullptr);
  CHECK(g.get<bool>("gpu.0.instinct") == false);
  CHECK(g.find("gpu.0.instinct")->source == "derived: checks/gpus/gfx.cpp");
  CHECK(g.find("gpu.0.instinct")->probe.empty());
}

TEST_CASE("a malformed facts file is an input error naming the file and line", "[fact]") {
  try {
    facts_from_json_text("{\n \"schema_version\": 1,\n \"facts\": {,}\n}", "saved.json");
    FAIL("no error");
  } catch (const InputError& e) {
    CHECK_THAT(e.what(), Catch::Contains("saved.json:3:"));
  }
  CHECK_THROWS_WITH(facts_from_json_text(R"({"schema_version": 2, "facts": {}})", "f.json"),
                    Catch::Contains("schema_version must be 1"));
  CHECK_THROWS_WITH(facts_from_json_text(
                        R"({"schema_version": 1, "facts": {"a": {"status": "maybe"}}})", "f.json"),
                    Catch::Contains("unknown status"));
  CHECK_THROWS_WITH(
      facts_from_json_text(
          R"({"schema_version": 1, "facts": {"a": {"status": "ok", "value": {"x": 1}}}})",
          "f.json"),
      Catch::Contains("fact 'a'"));
  CHECK_THROWS_AS(facts_from_json_text("", "empty.json"), InputError);
}

TEST_CASE("the key helpers build the keys the probes write", "[fact]") {
  // The probes write these keys as text (the derivations of checks/<family>/, hsa.cpp, modprobe.cpp
  // and the registry); code outside them reads through halo::keys, so a helper that drifted would
  // read nothing.
  CHECK(keys::gpu(std::int64_t{3}, keys::gpu_field::usable_bytes) == "gpu.3.usable_bytes");
  CHECK(keys::gpu("*", keys::gpu_field::temp_junction_mc) == "gpu.*.temp.junction_mc");
  CHECK(keys::gpu("12", keys::gpu_field::pci_slot) == "gpu.12.pci_slot");
  CHECK(keys::hsa_gpu("*", keys::hsa_gpu_field::coarse_pool_bytes) ==
        "hsa.gpu.*.coarse_pool_bytes");
  CHECK(keys::modprobe_option("amdttm", "pages_limit") == "modprobe.options.amdttm.pages_limit");
  CHECK(keys::probe_status("hsa") == "probe.hsa.status");
  CHECK(key_matches(keys::gpu("*", keys::gpu_field::xgmi_hive_size), "gpu.0.xgmi.hive_size"));
}

TEST_CASE("match() returns exactly the keys key_matches accepts, in key order", "[fact]") {
  // Keys chosen to sit between a segment's ranges in the sorted map: "gpu.1" alone, "gpu.1-x"
  // (sorting between "gpu.1" and "gpu.1."), "gpu.10" (after "gpu.1/"), an empty segment, deep
  // keys under a '*' segment, and "gpu.1.a.b" under the one-segment pattern "gpu.*.a".
  const std::vector<std::string> keys = {
      "gpu.1",         "gpu.1-x.a",     "gpu.1.a",     "gpu.1.a.b",     "gpu.1.b",  "gpu.10.a",
      "gpu.10.c.a",    "gpu.2.a",       "gpu..a",      "gpu.a",         "gpua.1.a", "drm.card1.a",
      "drm.card1.b.a", "drm.card2.b.a", "hsa.gpu.0.a", "hsa.gpu.0.b.c", "x"};
  FactSet f;
  for (const auto& k : keys)
    f.put_ok(k, std::int64_t{1}, "test");
  const std::vector<std::string> patterns = {
      "gpu.*.a", "gpu.*",     "gpu.**",    "gpu.*.a.b",    "gpu.*.*", "*.card1.a",
      "*.*.a",   "drm.*.b.a", "*.gpu.*.a", "hsa.gpu.*.**", "gpu.1.*", "gpu.*.c.a",
      "*",       "**",        "gpu.**.a",  "g*u.1.a",      "gpu.1*.a"};
  for (const auto& p : patterns) {
    std::vector<std::string> expected;
    for (const auto& k : keys) // `keys` is sorted as the map sorts
      if (key_matches(p, k)) expected.push_back(k);
    std::sort(expected.begin(), expected.end());
    std::vector<std::string> got;
    for (const Fact* fact : f.match(p))
      got.push_back(fact->key);
    INFO(p);
    CHECK(got == expected);
  }
  CHECK(f.match("gpu.*.a").size() == 5); // gpu.1-x, gpu.1, gpu.10, gpu.2 and gpu. (empty)
}

TEST_CASE("facts put in ascending and in any order make the same set", "[fact]") {
  FactSet ascending;
  FactSet mixed;
  const std::vector<std::string> keys = {"a.1", "a.2", "b.1", "b.10", "b.2"};
  for (const auto& k : keys)
    ascending.put_ok(k, std::int64_t{1}, "first");
  for (auto it = keys.rbegin(); it != keys.rend(); ++it)
    mixed.put_ok(*it, std::int64_t{1}, "first");
  ascending.put_ok("b.2", std::int64_t{2}, "replaced"); // the last key again: replaced, not added
  mixed.put_ok("b.2", std::int64_t{2}, "replaced");
  REQUIRE(ascending.size() == 5);
  REQUIRE(mixed.size() == 5);
  for (const auto& k : keys) {
    REQUIRE(ascending.find(k) != nullptr);
    CHECK(ascending.find(k)->source == mixed.find(k)->source);
  }
  CHECK(ascending.get_int("b.2") == 2);
}

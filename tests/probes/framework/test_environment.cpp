// SPDX-License-Identifier: MIT
#include "fixture_tree.hpp"

#include <catch2/catch.hpp>

using namespace halo;
using halo::test::FixtureTree;
using halo::test::probe_one;

namespace {
/// NUL-separated environment text, as /proc/self/environ holds it.
std::string environ_text(std::initializer_list<std::string> vars) {
  std::string out;
  for (const auto& v : vars)
    out += v + '\0';
  return out;
}
} // namespace

TEST_CASE("environment probe: ROCm-related variables from /proc/self/environ", "[probe][env]") {
  FixtureTree t;
  t.file("/proc/self/environ",
         environ_text({"PATH=/bin", "HSA_OVERRIDE_GFX_VERSION=11.0.0",
                       "PYTORCH_HIP_ALLOC_CONF=expandable_segments:True", "SECRET=x"}));
  FactSet f = probe_one(t.path(), "environment");
  CHECK(f.get<std::string>("env.hsa_override_gfx_version") == std::string("11.0.0"));
  CHECK(f.get<std::string>("env.hsa_override_gfx_target") == std::string("gfx1100"));
  CHECK(f.get<std::string>("env.pytorch_hip_alloc_conf") ==
        std::string("expandable_segments:True"));
  CHECK(f.find("env.secret") == nullptr);
  CHECK(f.get<std::vector<std::string>>("env.names") ==
        std::vector<std::string>{"HSA_OVERRIDE_GFX_VERSION", "PYTORCH_HIP_ALLOC_CONF"});
}

TEST_CASE("environment probe: a malformed override is an error fact", "[probe][env]") {
  FixtureTree t;
  t.file("/proc/self/environ", environ_text({"HSA_OVERRIDE_GFX_VERSION=gfx1151"}));
  FactSet f = probe_one(t.path(), "environment");
  CHECK(f.find("env.hsa_override_gfx_target")->status == Status::error);
}

TEST_CASE("environment probe: a variable set twice counts once, as its first entry",
          "[probe][env]") {
  // execve(2) passes the environment array as given, so a launcher can leave both entries.
  // getenv(3) and CPython's os.environ take the first, and so does the doctor (probe_util
  // environ_entries).
  FixtureTree t;
  t.file("/proc/self/environ", environ_text({"HSA_OVERRIDE_GFX_VERSION=11.5.1", "NO_EQUALS_SIGN",
                                             "HSA_OVERRIDE_GFX_VERSION=11.0.0"}));
  FactSet f = probe_one(t.path(), "environment");
  CHECK(f.get<std::string>("env.hsa_override_gfx_version") == std::string("11.5.1"));
  CHECK(f.get<std::vector<std::string>>("env.names") ==
        std::vector<std::string>{"HSA_OVERRIDE_GFX_VERSION"});
}

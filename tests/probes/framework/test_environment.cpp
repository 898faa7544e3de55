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

TEST_CASE("every probe that reads the environment reads it through one reader, first entry wins",
          "[probe][env]") {
  // Issue 42 item 3: the environment, framework, python_env and wsl probes each read
  // /proc/self/environ with their own bound and their own rule for a repeated name (two took
  // the last entry). Through probe_util's read_environ they agree with getenv(3): the first.
  FixtureTree t;
  t.file("/proc/self/environ",
         environ_text({"VIRTUAL_ENV=/home/dev/first", "HSA_ENABLE_DXG_DETECTION=1",
                       "HSA_ENABLE_DXG_DETECTION=0", "VIRTUAL_ENV=/home/dev/second",
                       "HOME=/home/dev"}));
  t.file("/home/dev/first/pyvenv.cfg", "include-system-site-packages = false\n");
  t.file("/home/dev/first/bin/python", "");
  t.file("/home/dev/second/pyvenv.cfg", "include-system-site-packages = false\n");
  t.file("/home/dev/second/bin/python", "");
  FactSet env = probe_one(t.path(), "environment");
  CHECK(env.get<std::string>("env.hsa_enable_dxg_detection") == std::string("1"));
  FactSet wsl = probe_one(t.path(), "wsl");
  CHECK(wsl.get<std::string>("wsl.env.hsa_enable_dxg_detection") == std::string("1"));
  FactSet fw = probe_one(t.path(), "framework");
  const Fact* py = fw.find("framework.python_env");
  REQUIRE(py != nullptr);
  const std::string seen =
      fw.get<std::string>("framework.python_env").value_or("") + " " + py->reason;
  INFO(seen);
  CHECK(seen.find("/home/dev/first") != std::string::npos);
  CHECK(seen.find("/home/dev/second") == std::string::npos);
}

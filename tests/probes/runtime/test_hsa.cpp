// SPDX-License-Identifier: MIT
// The ROCr probe's pieces (library search order, ROCm version, the child runner) and its
// behaviour on this machine: real Debian ROCr, no /dev/kfd.
#include "child_run.hpp"
#include "fixture_tree.hpp"
#include "probes.hpp"
#include "runtime/hsa.hpp"

#include <catch2/catch.hpp>

#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>

using namespace halo;
using namespace halo::probes;
namespace fs = std::filesystem;

namespace {

FactSet run_hsa(const Root& root, const ProbeOptions& opt) {
  FactSet facts;
  probes::make_hsa_probe()->collect(ProbeContext{root, opt}, facts);
  return facts;
}

std::string text(const FactSet& f, std::string_view key) {
  return f.get<std::string>(key).value_or("<not ok>");
}

} // namespace

TEST_CASE("hsa: library search order is --hsa-library, $ROCM_PATH/lib, /opt/rocm/lib, loader path",
          "[hsa]") {
  CHECK(hsa::library_candidates("/x/libhsa.so", "/opt/rocm-7.2.0", true) ==
        std::vector<std::string>{"/x/libhsa.so", "/opt/rocm-7.2.0/lib/libhsa-runtime64.so.1",
                                 "/opt/rocm/lib/libhsa-runtime64.so.1", "libhsa-runtime64.so.1"});
  CHECK(hsa::library_candidates("", nullptr, true) ==
        std::vector<std::string>{"/opt/rocm/lib/libhsa-runtime64.so.1", "libhsa-runtime64.so.1"});
  // A fixture root never falls back to the host's ROCr: only the replay library is tried.
  CHECK(hsa::library_candidates("/x/replay.so", "/opt/rocm", false) ==
        std::vector<std::string>{"/x/replay.so"});
  CHECK(hsa::library_candidates("", "/opt/rocm", false).empty());
}

TEST_CASE("hsa: the ROCm version comes from .info/version, the path or the file name", "[hsa]") {
  CHECK(hsa::version_from_info_text("7.1.0-20\n") == "7.1.0");
  CHECK(hsa::version_from_info_text("6.4\n") == "6.4");
  CHECK_FALSE(hsa::version_from_info_text("unknown").has_value());

  test::FixtureTree t;
  t.file("/opt/rocm-7.1.0/.info/version", "7.1.0-20\n")
      .file("/opt/rocm-7.1.0/lib/libhsa-runtime64.so.1", "");
  auto v = hsa::rocm_version_of(t.path() / "opt/rocm-7.1.0/lib/libhsa-runtime64.so.1");
  REQUIRE(v);
  CHECK(v->version == "7.1.0");
  CHECK(v->source.find(".info/version") != std::string::npos);

  v = hsa::rocm_version_of("/opt/rocm-6.2.3/lib/libhsa-runtime64.so.1.14.0");
  REQUIRE(v);
  CHECK(v->version == "6.2.3");

  v = hsa::rocm_version_of(
      "/usr/lib/python3/site-packages/torch/lib/libhsa-runtime64.so.1.18.70100");
  REQUIRE(v);
  CHECK(v->version == "7.1.0");

  // Debian's ROCr says nothing about the ROCm release it came from.
  CHECK_FALSE(
      hsa::rocm_version_of("/usr/lib/x86_64-linux-gnu/libhsa-runtime64.so.1.5.0").has_value());
}

TEST_CASE("hsa: device types and segments are named as rocminfo does", "[hsa]") {
  CHECK(hsa::device_type_name(0) == "cpu");
  CHECK(hsa::device_type_name(1) == "gpu");
  CHECK(hsa::device_type_name(2) == "dsp");
  CHECK(hsa::device_type_name(3) == "aie");
  CHECK(hsa::device_type_name(9) == "unknown(9)");
  CHECK(hsa::segment_name(0) == "global");
  CHECK(hsa::segment_name(3) == "group");
}

TEST_CASE("child runner: lines, hang and crash", "[hsa][child]") {
  SECTION("lines written by the child come back in order") {
    const child::Result r = run_in_child(
        [](int fd) {
          write_all(fd, "one\ntwo\n");
          write_all(fd, "three\nunterminated");
        },
        10.0);
    CHECK(child::complete_lines(r.out) == std::vector<std::string>{"one", "two", "three"});
    CHECK(r.end == child::End::exited);
    CHECK(r.exit_code == 0);
    CHECK(child::describe_end(r, 10.0) == "ended normally");
  }
  SECTION("a child that never answers is killed at the time limit") {
    const child::Result r = run_in_child(
        [](int fd) {
          write_all(fd, "started\n");
          for (;;)
            ::pause();
        },
        0.3);
    CHECK(r.end == child::End::timed_out);
    CHECK(r.signal == SIGKILL);
    CHECK(child::complete_lines(r.out) == std::vector<std::string>{"started"});
    CHECK(child::describe_end(r, 0.3).find("hung") != std::string::npos);
  }
  SECTION("a child that aborts is a crash, not the doctor's") {
    const child::Result r = run_in_child([](int) { std::abort(); }, 10.0);
    CHECK(r.end != child::End::timed_out);
    CHECK((r.signal == SIGABRT || (r.end == child::End::exited && r.exit_code != 0)));
    CHECK(child::describe_end(r, 10.0).find("crashed") != std::string::npos);
  }
}

TEST_CASE("hsa: skipped with --no-runtime and on a fixture root without --hsa-library", "[hsa]") {
  ProbeOptions opt;
  opt.no_runtime = true;
  FactSet f = run_hsa(Root("/"), opt);
  const Fact* s = f.find("hsa.status");
  REQUIRE(s != nullptr);
  CHECK(s->status == Status::missing);
  CHECK(s->reason == "skipped: --no-runtime");
  CHECK(f.find("hsa.gpu.0.coarse_pool_bytes")->reason == "skipped: --no-runtime");

  ProbeOptions live;
  f = run_hsa(Root(test::fixture("strix-halo-fixed")), live);
  s = f.find("hsa.status");
  REQUIRE(s != nullptr);
  CHECK(s->status == Status::missing);
  CHECK(s->reason.find("--root is not /") != std::string::npos);
}

TEST_CASE("hsa: a library that cannot be loaded or is not ROCr is an error fact", "[hsa]") {
  ProbeOptions opt;
  opt.hsa_library = "/nonexistent/libhsa-runtime64.so.1";
  FactSet f = run_hsa(Root(test::fixture("strix-halo-fixed")), opt);
  CHECK(text(f, "hsa.status") == "error");
  CHECK(text(f, "hsa.error").find("/nonexistent/libhsa-runtime64.so.1") != std::string::npos);
  CHECK(f.find("hsa.library_path")->status == Status::missing);

  opt.hsa_library = "libm.so.6";
  f = run_hsa(Root(test::fixture("strix-halo-fixed")), opt);
  CHECK(text(f, "hsa.status") == "error");
  CHECK(text(f, "hsa.error").find("not ROCr, lacks hsa_init") != std::string::npos);
}

TEST_CASE("hsa: on this machine the facts say what ROCr said", "[hsa][live]") {
  ProbeOptions opt;
  FactSet f = run_hsa(Root("/"), opt);
  const Fact* s = f.find("hsa.status");
  REQUIRE(s != nullptr);
  REQUIRE(s->ok());
  if (fs::exists("/dev/kfd")) {
    SUCCEED("a KFD is present: the live answer depends on the GPU");
    return;
  }
  CHECK(text(f, "hsa.status") == "error");
  if (f.find("hsa.library_path")->ok()) {
    // ROCr found, no /dev/kfd: hsa_init fails and its own status string is the fact.
    CHECK(text(f, "hsa.init_status").rfind("HSA_STATUS_ERROR", 0) == 0);
    CHECK(text(f, "hsa.error").rfind("hsa_init failed: HSA_STATUS_ERROR", 0) == 0);
    CHECK(f.find("hsa.agent_count")->status == Status::error);
  } else {
    CHECK(text(f, "hsa.error").find("could not be loaded") != std::string::npos);
  }
}

// SPDX-License-Identifier: MIT
// Untrusted input (issue 12): roots confine every path, input files are bounded, JSON depth and
// numbers are checked, number conversions never overflow.
#include "fixture_tree.hpp"
#include "gpus/gfx.hpp"
#include "probe_util.hpp"
#include "runtime/hsa.hpp"

#include <halo/error.hpp>
#include <halo/io.hpp>
#include <halo/root.hpp>

#include <catch2/catch.hpp>

#include <sys/stat.h>

#include <filesystem>
#include <fstream>

using namespace halo;
using halo::test::FixtureTree;

TEST_CASE("symlinks under a root resolve inside it, as on the target system", "[root][security]") {
  FixtureTree t;
  t.file("/usr/lib/os-release", "ID=inside\n");
  t.link("/etc/os-release", "/usr/lib/os-release");                   // absolute: from the root
  t.link("/etc/up", "../../../../../../../../../usr/lib/os-release"); // `..` stops at the root
  t.link("/etc/host-shadow", "/etc/shadow"); // the host's file is never read
  t.link("/etc/loop", "/etc/loop");
  t.link("/sys/dev/driver", "../../../bus/pci/drivers/amdgpu");
  const Root r = t.root();
  const auto base = r.base().string();
  CHECK(r.read("/etc/os-release").text == "ID=inside\n");
  CHECK(r.read("/etc/up").text == "ID=inside\n");
  CHECK(r.read("/etc/host-shadow").status == Status::missing);
  CHECK(r.read("/etc/loop").status == Status::error); // ELOOP
  CHECK(r.resolve("/etc/os-release").string() == base + "/usr/lib/os-release");
  CHECK(r.resolve("/etc/up").string() == base + "/usr/lib/os-release");
  CHECK(r.resolve("/etc/host-shadow").string() == base + "/etc/shadow");
  CHECK(r.resolve("/../../etc/passwd").string() == base + "/etc/passwd");
  CHECK(r.resolve("/etc/os-release", /*follow_last=*/false).string() == base + "/etc/os-release");
  CHECK(r.link_name("/sys/dev/driver") == "amdgpu");
  CHECK_FALSE(r.exists("/etc/host-shadow"));
}

TEST_CASE("a FIFO or device under a root is not read", "[root][security]") {
  FixtureTree t;
  t.dir("/proc");
  const Root r = t.root();
  const auto fifo = r.base() / "proc/cmdline";
  REQUIRE(::mkfifo(fifo.c_str(), 0644) == 0);
  const ReadResult res = r.read("/proc/cmdline"); // would block or hang without the check
  CHECK(res.status == Status::error);
  CHECK(res.reason == "not a regular file; not read");
}

TEST_CASE("input files are regular and bounded", "[io][security]") {
  CHECK_THROWS_WITH(read_input_file("/dev/zero"),
                    "/dev/zero: cannot be read: a character device, not a regular file");
  FixtureTree t;
  t.file("/f.json", std::string(100, ' '));
  const std::string f = (t.root().base() / "f.json").string();
  CHECK(read_input_file(f).size() == 100);
  CHECK_THROWS_AS(read_input_file(f, 99), InputError);
}

TEST_CASE("JSON input: depth bounded, number overflow a clear error", "[io][security]") {
  CHECK(parse_json_input(std::string(64, '[') + std::string(64, ']'), "x").is_array());
  CHECK_THROWS_WITH(parse_json_input("\n" + std::string(65, '[') + std::string(65, ']'), "f.json"),
                    "f.json:2: not valid JSON: nested deeper than 64 levels");
  CHECK(parse_json_input(R"(["[[[[", "\"{{{{"])", "x", false, 2).size() == 2); // in strings
  CHECK_THROWS_AS(parse_json_input(R"({"v": 1e400})", "f.json"), InputError);
}

TEST_CASE("number conversions are checked", "[probes][security]") {
  FixtureTree t;
  t.file("/sys/big", "4611686018427387904\n");  // 2^62
  t.file("/sys/max", "18446744073709551615\n"); // 2^64-1: not an int64
  FactSet facts;
  CHECK_FALSE(probes::put_int(facts, t.root(), "big_bytes", "/sys/big", 4096));
  CHECK(facts.find("big_bytes")->status == Status::error);
  CHECK_FALSE(probes::put_int(facts, t.root(), "max", "/sys/max", 1));
  CHECK(facts.find("max")->status == Status::error);
  CHECK(probes::gfx_from_override(std::string(30000, '1') + ".0.0") == std::nullopt);
  CHECK(probes::gfx_from_override("11.5.1") == "gfx1151");
  CHECK(probes::gfx_from_override("-1.5.1") == std::nullopt);
}

TEST_CASE("a malformed ROCr child report is a fact, never an exception", "[hsa][security]") {
  // Inputs found by tests/fuzz/fuzz_hsa_child.cpp: a field of the wrong type (nlohmann::json
  // type_error ended the run with exit 70) and a floating-point number where the protocol has an
  // unsigned integer (an out-of-range conversion, undefined behaviour).
  const Root root("/nonexistent-halo-root");
  const ProbeOptions opt;
  const ProbeContext ctx{root, opt};
  const std::string load = R"({"event":"load","requested":"x","path":"x","errors":[]})";
  const std::string init = R"({"event":"init","code":0,"string":"HSA_STATUS_SUCCESS"})";
  for (const std::string agent :
       {R"({"event":"agent","index":0,"name":7,"device_type":1,"errors":{}})",
        R"({"event":"agent","index":0,"name":"gfx1151","device_type":2.2e31,"errors":{}})",
        R"({"event":"agent","index":"zero","name":"gfx1151","device_type":1,"errors":[]})"}) {
    FactSet facts;
    REQUIRE_NOTHROW(probes::hsa::decode_child_lines(
        ctx, {load, init, agent, R"({"event":"agents_done","count":"x"})"}, facts));
    CHECK(facts.find("hsa.status") != nullptr);
  }
}

TEST_CASE("a bundle's device-node sidecar is checked", "[root][security]") {
  FixtureTree t;
  t.file("/.halo/nodes.json", R"({"/dev/kfd": {"type": "char", "mode": "0666", "uid": 1e30},
                                  "/dev/dri/renderD128": {"mode": "0660", "uid": 0, "gid": -5},
                                  "/dev/dri/card1": {"mode": "0660", "uid": 0, "gid": 44}})");
  const Root r = t.root();
  CHECK(r.node("/dev/kfd").status == Status::error);
  CHECK(r.node("/dev/dri/renderD128").status == Status::error);
  const NodeInfo ok = r.node("/dev/dri/card1");
  CHECK(ok.status == Status::ok);
  CHECK(ok.gid == 44);
}

// SPDX-License-Identifier: MIT
#include "fixture_tree.hpp"

#include <catch2/catch.hpp>

using namespace halo;
using halo::test::FixtureTree;
using halo::test::probe_one;

TEST_CASE("kfd probe: GPU nodes, decoded gfx targets and memory banks", "[probe][kfd]") {
  FactSet f = probe_one(halo::test::fixture("strix-halo-default-ttm"), "kfd_topology");
  CHECK(f.get<std::vector<std::string>>("kfd.gpu_nodes") == std::vector<std::string>{"1"});
  CHECK(f.get_int("kfd.node.1.gfx_target_version") == 110501);
  CHECK(f.get<std::string>("kfd.node.1.gfx_target") == std::string("gfx1151"));
  CHECK(f.get_int("kfd.node.1.device_id") == 5510);
  CHECK(f.get_int("kfd.node.1.simd_count") == 80);
  CHECK(f.get_int("kfd.node.1.mem_bank.0.size_bytes") == 536870912);
  CHECK(f.find("kfd.node.0.gfx_target") == nullptr);
}

TEST_CASE("kfd probe: no topology, and a malformed properties line", "[probe][kfd]") {
  FixtureTree none;
  none.dir("/sys");
  FactSet n = probe_one(none.path(), "kfd_topology");
  CHECK(n.get<bool>("kfd.topology.present") == false);
  CHECK(n.find("kfd.gpu_nodes")->status == Status::missing);
  FixtureTree bad;
  bad.file("/sys/class/kfd/kfd/topology/nodes/1/properties",
           "gfx_target_version eleven\nsimd_count 80\n");
  FactSet b = probe_one(bad.path(), "kfd_topology");
  CHECK(b.find("kfd.node.1.gfx_target_version")->status == Status::error);
  CHECK(b.get_int("kfd.node.1.simd_count") == 80);
  CHECK(b.find("kfd.node.1.device_id")->status == Status::missing);
}

TEST_CASE("kfd topology: node ids are ordered as numbers", "[probe][kfd]") {
  FixtureTree t;
  for (int n : {0, 2, 10, 11})
    t.file("/sys/class/kfd/kfd/topology/nodes/" + std::to_string(n) + "/properties",
           n == 0 ? "cpu_cores_count 16\ngfx_target_version 0\n"
                  : "cpu_cores_count 0\ngfx_target_version 90402\ndevice_id 29857\n");
  FactSet f = probe_one(t.path(), "kfd_topology");
  CHECK(f.get<std::vector<std::string>>("kfd.gpu_nodes") ==
        std::vector<std::string>{"2", "10", "11"});
}

// SPDX-License-Identifier: MIT
#include "fixture_tree.hpp"

#include <catch2/catch.hpp>

using namespace halo;
using halo::test::FixtureTree;
using halo::test::probe_one;

namespace {
void identity(FixtureTree& t, const std::string& groups_line, const std::string& etc_group) {
  t.file("/proc/self/status",
         "Name:\tx\nUid:\t1000\t1000\t1000\t1000\nGid:\t1000\t1000\t1000\t1000\nGroups:\t" +
             groups_line + "\n");
  t.file("/etc/passwd", "root:x:0:0::/root:/bin/sh\nann:x:1000:1000::/home/ann:/bin/bash\n");
  t.file("/etc/group", etc_group);
  t.file("/.halo/nodes.json", R"({"/dev/kfd": {"mode": "0660", "uid": 0, "gid": 992},
                                  "/dev/dri/renderD128": {"mode": "0666", "uid": 0, "gid": 992}})");
  t.file("/sys/class/kfd/kfd/topology/nodes/1/properties",
         "gfx_target_version 110501\ndrm_render_minor 128\n");
}
} // namespace

TEST_CASE("device access: group membership decides, from /proc/self/status and /etc/group",
          "[probe][access]") {
  FixtureTree t;
  identity(t, "1000 992", "render:x:992:ann\nann:x:1000:\n");
  FactSet f = probe_one(t.path(), "device_access");
  CHECK(f.get<std::string>("user.name") == std::string("ann"));
  CHECK(f.get<bool>("access.kfd.rw") == true);
  CHECK(f.get<std::string>("access.kfd.group") == std::string("render"));
  CHECK(f.get<std::string>("access.kfd.mode") == std::string("0660"));
  CHECK(f.get<std::string>("access.render.0.path") == std::string("/dev/dri/renderD128"));
  CHECK(f.get<bool>("access.render.0.rw") == true);
}

TEST_CASE("device access: added to render but not logged in again", "[probe][access]") {
  FixtureTree t;
  identity(t, "1000", "render:x:992:ann\nann:x:1000:\n");
  FactSet f = probe_one(t.path(), "device_access");
  CHECK(f.get<bool>("access.kfd.rw") == false);
  CHECK(f.get<bool>("access.kfd.rw_after_relogin") == true);
  // renderD128 is 0666 here: anyone may open it.
  CHECK(f.get<bool>("access.render.0.rw") == true);
  CHECK(f.get<std::vector<std::string>>("user.configured_groups") ==
        std::vector<std::string>{"render", "ann"});
}

TEST_CASE("device access: root may open anything; a missing node is data", "[probe][access]") {
  FixtureTree t;
  identity(t, "0", "render:x:992:\n");
  t.file("/proc/self/status", "Uid:\t0\t0\t0\t0\nGid:\t0\t0\t0\t0\nGroups:\t0\n");
  t.file("/.halo/nodes.json", R"({"/dev/kfd": {"mode": "0600", "uid": 0, "gid": 0}})");
  FactSet f = probe_one(t.path(), "device_access");
  CHECK(f.get<bool>("access.kfd.rw") == true);
  CHECK(f.get<bool>("access.render.0.exists") == false);
  CHECK(f.find("access.render.0.rw")->status == Status::missing);
}

TEST_CASE("device access: under sudo, access is judged for the invoking user", "[probe][access]") {
  FixtureTree t;
  identity(t, "0", "render:x:992:\nann:x:1000:\n");
  t.file("/proc/self/status", "Uid:\t0\t0\t0\t0\nGid:\t0\t0\t0\t0\nGroups:\t0\n");
  t.file("/proc/self/environ",
         std::string("SUDO_USER=ann") + '\0' + "SUDO_UID=1000" + '\0' + "SUDO_GID=1000" + '\0');
  FactSet f = probe_one(t.path(), "device_access");
  CHECK(f.get<bool>("user.via_sudo") == true);
  CHECK(f.get<std::string>("user.name") == std::string("ann"));
  CHECK(f.get<bool>("access.kfd.rw") == false);
  t.file("/etc/group", "render:x:992:ann\nann:x:1000:\n");
  CHECK(probe_one(t.path(), "device_access").get<bool>("access.kfd.rw") == true);
}

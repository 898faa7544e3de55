// SPDX-License-Identifier: MIT
// The host tuning probe (checks/host/host_tuning.cpp): CPU governors, C-states, transparent
// hugepages, limits.
#include "fixture_tree.hpp"

#include <catch2/catch.hpp>

#include <filesystem>
#include <string>

using namespace halo;

TEST_CASE("host_tuning probe: governors, C2, transparent hugepages and the limits a run inherits",
          "[probe][host]") {
  halo::test::FixtureTree t;
  // An EPYC host after `cpupower idle-set -d 2` on all but cpu3 (brought online later).
  for (int i = 0; i < 4; ++i) {
    const std::string cpu = "/sys/devices/system/cpu/cpu" + std::to_string(i);
    t.file(cpu + "/cpufreq/scaling_governor", i == 2 ? "powersave\n" : "performance\n");
    t.file(cpu + "/cpuidle/state2/name", "C2\n");
    t.file(cpu + "/cpuidle/state2/disable", i == 3 ? "0\n" : "1\n");
  }
  t.file("/sys/devices/system/cpu/online", "0-3\n"); // not a cpuN directory: ignored
  t.file("/sys/kernel/mm/transparent_hugepage/enabled", "always madvise [never]\n");
  // proc(5)'s layout, as this machine's /proc/self/limits shows it.
  t.file("/proc/self/limits",
         "Limit                     Soft Limit           Hard Limit           Units     \n"
         "Max open files            1024                 524288               files     \n"
         "Max locked memory         unlimited            unlimited            bytes     \n");
  const FactSet f = halo::test::probe_one(t.path(), "host_tuning");
  CHECK(f.get<std::vector<std::string>>("host.cpufreq_governors") ==
        std::vector<std::string>{"performance", "powersave"});
  CHECK(f.get_int("host.cpuidle_c2_enabled_cpus") == 1);
  CHECK_THAT(f.find("host.cpuidle_c2_enabled_cpus")->source, Catch::EndsWith("(C2)"));
  CHECK(f.get<std::string>("host.thp_enabled") == "never");
  // "unlimited" is RLIM_INFINITY: the largest integer, so that a ">= N bytes" rule passes.
  CHECK(f.get_int("user.limits.memlock_soft") == std::numeric_limits<std::int64_t>::max());
  CHECK(f.get<bool>("user.limits.memlock_soft_unlimited") == true);
  CHECK(f.get_int("user.limits.nofile_soft") == 1024);
  CHECK(f.get<bool>("user.limits.nofile_soft_unlimited") == false);
  // A garbled limits file is an error naming the row, never a number.
  t.file("/proc/self/limits", "Max open files  lots\n");
  const FactSet g = halo::test::probe_one(t.path(), "host_tuning");
  CHECK(g.find("user.limits.nofile_soft")->status == Status::error);
  CHECK(g.find("user.limits.memlock_soft")->status == Status::error);
  CHECK(g.find("user.limits.memlock_soft_unlimited")->status == Status::error);
}

TEST_CASE("host_tuning probe: the compaction sysctls AMD's MI300A page sets, as integers",
          "[probe][host]") {
  halo::test::FixtureTree t;
  // A RHEL host as AMD's MI300A page describes it: proactive compaction off (0).
  t.file("/proc/sys/vm/compaction_proactiveness", "0\n");
  t.file("/proc/sys/vm/compact_unevictable_allowed", "1\n");
  const FactSet f = halo::test::probe_one(t.path(), "host_tuning");
  // Integers, as the mi300a-compaction rule compares them (a string "0" would never be lt 20).
  CHECK(f.get_int("host.compaction_proactiveness") == 0);
  CHECK(f.get_int("host.compact_unevictable_allowed") == 1);
  CHECK(f.find("host.compaction_proactiveness")->source == "/proc/sys/vm/compaction_proactiveness");
  // A kernel before 5.9 has no compaction_proactiveness: missing, not 0.
  std::filesystem::remove(t.path() / "proc/sys/vm/compaction_proactiveness");
  t.file("/proc/sys/vm/compact_unevictable_allowed", "yes\n");
  const FactSet g = halo::test::probe_one(t.path(), "host_tuning");
  CHECK(g.find("host.compaction_proactiveness")->status == Status::missing);
  CHECK(g.find("host.compact_unevictable_allowed")->status == Status::error);
}

// halo-doctor fleet compare: which node differs from the majority (include/halo/fleet.hpp).
#include <halo/fleet.hpp>

#include <catch2/catch.hpp>

using namespace halo;

TEST_CASE("fleet compare: the majority value, ties to the earliest node, error-level rows",
          "[fleet]") {
  auto node = [](const std::string& name, const std::string& kernel, const std::string& os) {
    fleet::Node n;
    n.name = name;
    n.facts.put_ok("kernel.release", kernel, "/proc/sys/kernel/osrelease");
    n.facts.put_ok("os.pretty_name", os, "/etc/os-release");
    return n;
  };
  // Three nodes, one with another kernel: it alone differs, and the kernel is error-level.
  auto c = fleet::compare({node("a", "6.8.0-79-generic", "Ubuntu 22.04"),
                           node("b", "6.8.0-79-generic", "Ubuntu 22.04"),
                           node("c", "6.8.0-40-generic", "Ubuntu 22.04")});
  REQUIRE(c.rows.size() == 2);
  CHECK(c.rows[0].label == "kernel");
  CHECK(c.rows[0].majority == "6.8.0-79-generic");
  CHECK(c.rows[0].differs == std::vector<bool>{false, false, true});
  CHECK(c.error_difference());
  // Only a warning-level quantity differs: no error-level difference.
  c = fleet::compare({node("a", "6.8", "Ubuntu 22.04"), node("b", "6.8", "Ubuntu 24.04")});
  CHECK(c.rows[1].differs == std::vector<bool>{false, true}); // tie: the earliest node's value
  CHECK_FALSE(c.error_difference());
  // A fact no node could read is not a row.
  for (const auto& r : c.rows)
    CHECK(r.pattern != "hsa.rocm_version");
}

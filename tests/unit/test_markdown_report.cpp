// SPDX-License-Identifier: MIT
// The Markdown report (`check --format markdown`, issue 35): hostile strings from facts cannot
// make markup, HTML, mentions or a broken table, and what a bundle redacts is redacted here.
#include <halo/redact.hpp>
#include <halo/report.hpp>

#include <catch2/catch.hpp>

#include <string>

using namespace halo;

namespace {

FactSet machine() {
  FactSet f;
  f.put_ok("host.name", std::string("gpu-box-17"), "/proc/sys/kernel/hostname");
  f.put_ok("user.name", std::string("alice"), "/etc/passwd");
  f.put_ok("gpu.count", std::int64_t{1}, "derived");
  f.put_ok("gpu.0.name", std::string("Radeon | <b>evil</b>"), "pci ids");
  f.put_ok("gpu.0.gfx_target", std::string("gfx1151"), "kfd");
  f.put_ok("gpu.0.pci_slot", std::string("0000:c5:00.0"), "drm");
  f.put_ok("gpu.0.serial_number", std::string("0xdeadbeef1234"), "/sys/.../serial_number");
  f.put_ok("framework.python_env", std::string("/home/bob/venv/lib/python3.12/site-packages"),
           "VIRTUAL_ENV=/home/bob/venv");
  return f;
}

} // namespace

TEST_CASE("markdown report: untrusted text is escaped, identities are redacted",
          "[report][markdown]") {
  const FactSet facts = machine();
  ReportContext ctx;
  ctx.tool_version = "0.1.0";
  ctx.hostname = "gpu-box-17";
  ctx.os = "Debian GNU/Linux 12 (bookworm)";
  ctx.kernel = "6.1.0-x86_64";
  ctx.exit_code = 1;
  Result r;
  r.id = "ttm-limit-low";
  r.area = "memory";
  r.status = Outcome::fail;
  r.severity = Severity::error;
  r.message = "on gpu-box-17 user alice: `rm -rf` *bold* [x](javascript:1) <img src=x> @octocat #1 "
              "https://alice:hunter2@proxy:3128 serial 0xdeadbeef1234\n# heading\x1b[2J";
  r.evidence.push_back(Evidence{"gpu.0.name", "a | b", "ok", "/home/alice/.config/x", "", ""});
  r.fix = nlohmann::json{{"summary", "run ``` then <b> in /home/alice on gpu-box-17"}};
  const std::string md = markdown_report({r}, ctx, facts);
  INFO(md);
  // Redacted as a bundle: the host name, the user names (from user.name and /home/NAME), the
  // URL credentials and the serial number appear nowhere.
  for (const char* secret : {"gpu-box-17", "alice", "bob", "hunter2", "deadbeef1234"})
    CHECK(md.find(secret) == std::string::npos);
  CHECK(md.find("redacted-host") != std::string::npos);
  CHECK(md.find("/home/user1/") != std::string::npos);
  CHECK(md.find("https://\\<masked\\>\\@proxy:3128") != std::string::npos);
  // No raw HTML, no link, no mention, no reference, no emphasis, no code span from the message.
  // (Every `<` outside the fenced fix and the report's own comment is escaped.)
  std::size_t raw_lt = 0;
  bool in_fence = false;
  std::size_t start = 0;
  while (start < md.size()) {
    std::size_t end = md.find('\n', start);
    if (end == std::string::npos) end = md.size();
    const std::string line = md.substr(start, end - start);
    start = end + 1;
    if (line.find("````") != std::string::npos) in_fence = !in_fence;
    if (in_fence || line.starts_with("<!-- halo-doctor")) continue;
    for (std::size_t i = 0; i < line.size(); ++i)
      if (line[i] == '<' && (i == 0 || line[i - 1] != '\\')) ++raw_lt;
  }
  CHECK(raw_lt == 0);
  CHECK(md.find("\\<img src=x\\>") != std::string::npos);
  CHECK(md.find("\\[x\\](javascript:1)") != std::string::npos);
  CHECK(md.find("\\@octocat") != std::string::npos);
  CHECK(md.find("\\#1") != std::string::npos);
  CHECK(md.find("\\*bold\\*") != std::string::npos);
  CHECK(md.find("\\`rm -rf\\`") != std::string::npos);
  // The newline and the escape sequence cannot start a heading or reach a terminal.
  CHECK(md.find("\n# heading") == std::string::npos);
  CHECK(md.find('\x1b') == std::string::npos);
  // A `|` in a table cell is escaped, so the GPU row keeps its two cells.
  CHECK(md.find("| GPU 0 | Radeon \\| \\<b\\>evil\\</b\\>; gfx1151; 0000:c5:00.0 |") !=
        std::string::npos);
  // The fix is a fenced block whose fence is longer than the ``` inside it.
  CHECK(md.find("    ````\n    run ``` then <b> in /home/user1 on redacted-host\n    ````\n") !=
        std::string::npos);
}

TEST_CASE("Redactor: names as words, not inside paths", "[report][markdown][redact]") {
  FactSet f;
  f.put_ok("host.name", std::string("dev"), "/proc/sys/kernel/hostname");
  f.put_ok("user.name", std::string("render"), "/etc/passwd");
  const Redactor redact(nullptr, f);
  // /dev/kfd and the group named like the user in a path stay; the words are replaced.
  CHECK(redact("dev: /dev/kfd is rw for render (/home/render/x, /etc/render.d)") ==
        "redacted-host: /dev/kfd is rw for user1 (/home/user1/x, /etc/render.d)");
  CHECK(redact("user render.") == "user user1.");
  CHECK(redact("root stays root") == "root stays root");
}

TEST_CASE("Redactor: the capture bundle's naming rules", "[report][markdown][redact]") {
  // The same rules as src/core/bundle_redact.cpp (src/core/redact_rules.hpp): a serial number
  // gets a pseudonym, a DMI placeholder and an all-zero value identify nothing and stay, and
  // /var/home (Fedora Silverblue, where /home links to it) names a person as /home does.
  FactSet f;
  f.put_ok("dmi.product_serial", std::string("PF4XK2LM"), "/sys/class/dmi/id/product_serial");
  f.put_ok("dmi.board_serial", std::string("To be filled by O.E.M."),
           "/sys/class/dmi/id/board_serial");
  f.put_ok("gpu.0.serial_number", std::string("0000000000000000"), "amdgpu serial_number");
  f.put_ok("framework.python_env", std::string("/var/home/alice/.venv/lib/python3.12"), "PATH");
  const Redactor redact(nullptr, f);
  CHECK(redact("serial PF4XK2LM of alice") == "serial redacted-serial-1 of user1");
  CHECK(redact("board To be filled by O.E.M., vendor Default string, 0000000000000000") ==
        "board To be filled by O.E.M., vendor Default string, 0000000000000000");
  CHECK(redact("/var/home/alice/.venv") == "/var/home/user1/.venv");
}

TEST_CASE("Redactor: host names on a diskless node's command line", "[report][markdown][redact]") {
  // nfsroot.rst: ip=<client-ip>:<server-ip>:<gw-ip>:<netmask>:<hostname>:<device>:<autoconf>;
  // dracut.cmdline(7) brackets IPv6 addresses, which hold ':'.
  FactSet f;
  f.put_ok("host.name", std::string("node7"), "/proc/sys/kernel/hostname");
  f.put_ok("kernel.cmdline",
           std::string("ip=[fd00::7]::[fd00::1]:64:node7.hpc.example:eno1:none "
                       "nfsroot=10.0.0.1:/srv/roots/node7,vers=4 systemd.hostname=boot-7"),
           "/proc/cmdline");
  const Redactor redact(nullptr, f);
  CHECK(redact("ip=[fd00::7]::[fd00::1]:64:node7.hpc.example:eno1:none") ==
        "ip=[fd00::7]::[fd00::1]:64:redacted-host-2:eno1:none");
  CHECK(redact("nfsroot=10.0.0.1:/srv/roots/node7,vers=4 on node7") ==
        "nfsroot=10.0.0.1:/srv/roots/redacted-host,vers=4 on redacted-host");
  CHECK(redact("boot-7 systemd.hostname=boot-7") ==
        "redacted-host-3 systemd.hostname=redacted-host-3");
  // A `%s` in nfsroot is the client's address, filled in by the kernel: no name to learn.
  FactSet g;
  g.put_ok("kernel.cmdline", std::string("nfsroot=/srv/roots/%s ip=dhcp"), "/proc/cmdline");
  CHECK(Redactor(nullptr, g)("nfsroot=/srv/roots/%s ip=dhcp") == "nfsroot=/srv/roots/%s ip=dhcp");
}

TEST_CASE("Redactor: a replayed bundle's pseudonyms are not learnt again",
          "[report][markdown][redact]") {
  // The facts of `check --bundle` hold the bundle's pseudonyms already: the report keeps them, so
  // user2 of the bundle is user2 of its report.
  FactSet f;
  f.put_ok("host.name", std::string("redacted-host"), "/proc/sys/kernel/hostname");
  f.put_ok("framework.python_env", std::string("/home/user2/venv/lib/python3.12/site-packages"),
           "VIRTUAL_ENV=/home/user2/venv");
  f.put_ok("env.rocr_visible_devices", std::string("GPU-0000000000000001"), "/proc/self/environ");
  f.put_ok(
      "boot.loader_entries",
      std::vector<std::string>{"/boot/loader/entries/00000000000000000000000000000001-6.8.conf"},
      "/boot/loader/entries");
  const Redactor redact(nullptr, f);
  CHECK(redact("/home/user2/venv GPU-0000000000000001 on redacted-host") ==
        "/home/user2/venv GPU-0000000000000001 on redacted-host");
  CHECK(redact("00000000000000000000000000000001-6.8.conf") ==
        "00000000000000000000000000000001-6.8.conf");
  CHECK(redact.user_count() == 0);
}

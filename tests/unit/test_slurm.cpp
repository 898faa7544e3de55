// SPDX-License-Identifier: MIT
// halo-doctor slurm: parsing scontrol's node lines, drain reasons, the drain/resume decision and
// the bounded command runner. The real Slurm end to end is tests/cli/slurm.sh.
#include <halo/checks.hpp>
#include <halo/policy.hpp>
#include <halo/probe.hpp>
#include <halo/rules.hpp>
#include <halo/slurm.hpp>

#include <catch2/catch.hpp>

#include <algorithm>

using namespace halo;
using namespace halo::slurm;

namespace {
// Recorded from `scontrol -o show node halonode` of Debian 12's slurm-wlm 22.05.8 (the
// tests/cli/slurm.sh cluster), drained and not.
constexpr const char* kIdle =
    "NodeName=halonode Arch=x86_64 CoresPerSocket=1  CPUAlloc=0 CPUEfctv=1 CPUTot=1 CPULoad=12.15 "
    "AvailableFeatures=(null) ActiveFeatures=(null) Gres=(null) NodeAddr=127.0.0.1 NodeHostName=vm "
    "Version=22.05.8 OS=Linux 6.18.44-fc-v769 #1 SMP PREEMPT_DYNAMIC @0  RealMemory=100 AllocMem=0 "
    "FreeMem=16502 Sockets=1 Boards=1 State=IDLE ThreadsPerCore=1 TmpDisk=0 Weight=1 Owner=N/A "
    "MCS_label=N/A Partitions=debug  BootTime=2026-11-24T08:12:38 "
    "SlurmdStartTime=2026-11-24T08:25:04 LastBusyTime=2026-11-24T08:25:04 "
    "CfgTRES=cpu=1,mem=100M,billing=1 AllocTRES= CapWatts=n/a CurrentWatts=0 AveWatts=0 "
    "ExtSensorsJoules=n/s ExtSensorsWatts=0 ExtSensorsTemp=n/s\n";
constexpr const char* kDrained =
    "NodeName=halonode Arch=x86_64 CoresPerSocket=1  CPUAlloc=0 CPUEfctv=1 CPUTot=1 "
    "NodeAddr=127.0.0.1 NodeHostName=vm Version=22.05.8 State=IDLE+DRAIN ThreadsPerCore=1 "
    "TmpDisk=0 Weight=1 Owner=N/A MCS_label=N/A Partitions=debug  ExtSensorsTemp=n/s "
    "Reason=halo-doctor: ttm-limit-low,kfd-access [root@2026-11-24T08:25:13]\n";

Node node(std::string state, std::string reason) {
  return Node{"n1", "n1", std::move(state), std::move(reason)};
}
} // namespace

TEST_CASE("scontrol -o show node lines give name, host, state and the reason without its stamp",
          "[slurm]") {
  const auto idle = parse_show_node(kIdle);
  REQUIRE(idle.size() == 1);
  CHECK(idle[0].name == "halonode");
  CHECK(idle[0].hostname == "vm");
  CHECK(idle[0].state == "IDLE");
  CHECK(idle[0].reason.empty());
  CHECK_FALSE(idle[0].drain());

  const auto drained = parse_show_node(kDrained);
  REQUIRE(drained.size() == 1);
  CHECK(drained[0].state == "IDLE+DRAIN");
  CHECK(drained[0].reason == "halo-doctor: ttm-limit-low,kfd-access");
  CHECK(drained[0].drain());
  CHECK(drained[0].ours());

  // An admin's reason with spaces, brackets inside, and a Comment= after it.
  const auto admin = parse_show_node(
      "NodeName=a State=MIXED+DRAIN Reason=bad DIMM [slot 3] please [alice@2026-01-02T03:04:05] "
      "Comment=rack 4\nnot a node line\nNodeName=b NodeHostName=b.example "
      "State=DOWN+NOT_RESPONDING "
      "Reason=Not responding [slurm@2026-01-02T03:04:05]\n");
  REQUIRE(admin.size() == 2);
  CHECK(admin[0].reason == "bad DIMM [slot 3] please");
  CHECK(admin[0].drain());
  CHECK_FALSE(admin[0].ours());
  CHECK(admin[1].down());
  CHECK_FALSE(admin[1].drain());
  CHECK(parse_show_node("").empty());
  // A reason that merely mentions halo-doctor later is not ours.
  CHECK_FALSE(node("IDLE+DRAIN", "NHC: halo-doctor: x").ours());
  CHECK_FALSE(node("IDLE+DRAIN", "halo-doctor").ours());
}

TEST_CASE("the node for this host is the one named like it or with its NodeHostName", "[slurm]") {
  const std::vector<Node> nodes = {{"gpu01", "gpu01", "IDLE", ""}, {"halonode", "vm", "IDLE", ""}};
  CHECK(node_for_host(nodes, "vm") == std::optional<std::string>("halonode"));
  CHECK(node_for_host(nodes, "gpu01") == std::optional<std::string>("gpu01"));
  CHECK_FALSE(node_for_host(nodes, "other").has_value());
  const std::vector<Node> twice = {{"a", "vm", "IDLE", ""}, {"b", "vm", "IDLE", ""}};
  CHECK_FALSE(node_for_host(twice, "vm").has_value());
}

TEST_CASE("drain reasons name the rules, fit the limit and say how many were left out", "[slurm]") {
  CHECK(drain_reason("", {"ttm-limit-low"}, 60) == "halo-doctor: ttm-limit-low");
  CHECK(drain_reason("", {"ttm-limit-low", "kfd-access"}, 60) ==
        "halo-doctor: ttm-limit-low,kfd-access");
  CHECK(drain_reason("reboot pending: ", {"ttm-limit-low"}, 60) ==
        "halo-doctor: reboot pending: ttm-limit-low");
  // 13 + 13 + 1 + 10 = 37 > 30: the second id goes, " +1" says so.
  const std::string two = drain_reason("", {"ttm-limit-low", "kfd-access"}, 30);
  CHECK(two == "halo-doctor: ttm-limit-low +1");
  CHECK(two.size() <= 30);
  const std::string cut = drain_reason("", {"a-very-long-rule-id-that-does-not-fit", "x"}, 30);
  CHECK(cut.size() <= 30);
  CHECK(cut.rfind("halo-doctor: a-very", 0) == 0);
  CHECK(cut.find(" +1") != std::string::npos);
  CHECK(drain_reason("could not check: timed out", {}, 60) ==
        "halo-doctor: could not check: timed out");
}

TEST_CASE("the verdict follows the gate: severity, waivers and pending reboot", "[slurm]") {
  std::vector<Result> rs(5);
  rs[0].id = "a";
  rs[0].status = Outcome::fail;
  rs[0].severity = Severity::error;
  rs[1].id = "b";
  rs[1].status = Outcome::fail;
  rs[1].severity = Severity::warning;
  rs[2].id = "c";
  rs[2].status = Outcome::fail;
  rs[2].severity = Severity::error;
  rs[2].pending_reboot = true;
  rs[3].id = "d";
  rs[3].status = Outcome::fail;
  rs[3].severity = Severity::error;
  rs[3].waiver = Waiver{"known", "ops", "2999-01-01"};
  rs[4] = rs[0]; // the same rule failing on a second GPU
  auto v = verdict_from_results(rs, FailOn::error);
  CHECK(v.failed == std::vector<std::string>{"a"});
  CHECK(v.pending == std::vector<std::string>{"c"});
  v = verdict_from_results(rs, FailOn::warning);
  CHECK(v.failed == std::vector<std::string>{"a", "b"});
  CHECK(verdict_from_results(rs, FailOn::never).failed.empty());
}

TEST_CASE("failures drain a node with no reason or ours, never someone else's", "[slurm]") {
  Verdict v;
  v.failed = {"kfd-access"};
  const Settings s;
  auto d = decide(v, node("IDLE", ""), s);
  CHECK(d.action == Action::drain);
  CHECK(d.reason == "halo-doctor: kfd-access");
  CHECK(d.exit_code == 1);
  // Our own older reason is replaced by the current one; the same reason is not rewritten.
  CHECK(decide(v, node("IDLE+DRAIN", "halo-doctor: ttm-limit-low"), s).action == Action::drain);
  CHECK(decide(v, node("IDLE+DRAIN", "halo-doctor: kfd-access"), s).action == Action::none);
  // An admin's drain, a down node, NHC: left alone, but the gate still fails.
  for (const auto& n : {node("IDLE+DRAIN", "maintenance"), node("DOWN", "Not responding"),
                        node("IDLE+DRAIN", "NHC: check_fs_mount: /scratch not mounted")}) {
    d = decide(v, n, s);
    CHECK(d.action == Action::none);
    CHECK(d.exit_code == 1);
  }
}

TEST_CASE("a healthy node is resumed only from halo-doctor's own drain", "[slurm]") {
  Verdict clean; // a health check of every rule, the drained-for rules among them passing
  clean.cleared = {"kfd-access", "ttm-limit-low"};
  clean.complete = true;
  const Settings s;
  CHECK(decide(clean, node("IDLE+DRAIN", "halo-doctor: kfd-access"), s).action == Action::resume);
  CHECK(decide(clean, node("DOWN+DRAIN", "halo-doctor: reboot pending: ttm-limit-low"), s).action ==
        Action::resume);
  CHECK(decide(clean, node("IDLE+DRAIN", "maintenance"), s).action == Action::none);
  CHECK(decide(clean, node("IDLE", ""), s).action == Action::none);
  // Our reason on a node that is no longer drained (someone resumed it by hand): nothing to do.
  CHECK(decide(clean, node("IDLE", "halo-doctor: kfd-access"), s).action == Action::none);
  CHECK(decide(clean, node("IDLE", ""), s).exit_code == 0);
}

TEST_CASE("a drain is lifted only by a run that judged its rules passing (issue 44 item 5)",
          "[slurm]") {
  // The epilog evaluated the volatile rules only: amdgpu-gpu-hang passed, ttm-limit-low was not
  // evaluated (it is a boot-time rule; a health check drained for it).
  Verdict epilog;
  epilog.cleared = {"amdgpu-gpu-hang", "kfd-access"};
  Settings s;
  s.mode = Mode::epilog;
  auto d = decide(epilog, node("IDLE+DRAIN", "halo-doctor: ttm-limit-low"), s);
  CHECK(d.action == Action::none);
  CHECK(d.exit_code == 0);
  CHECK(d.summary.find("kept drained") != std::string::npos);
  CHECK(d.summary.find("ttm-limit-low") != std::string::npos);
  CHECK(decide(epilog, node("IDLE+DRAIN", "halo-doctor: amdgpu-gpu-hang"), s).action ==
        Action::resume);
  // Every named rule must be judged: one of two is not enough.
  CHECK(
      decide(epilog, node("IDLE+DRAIN", "halo-doctor: amdgpu-gpu-hang,ttm-limit-low"), s).action ==
      Action::none);
  CHECK(
      decide(epilog, node("IDLE+DRAIN", "halo-doctor: reboot pending: ttm-limit-low"), s).action ==
      Action::none);
  // A reason that names no rule or not all of them: only a run of every rule lifts it.
  for (const char* reason : {"halo-doctor: could not check: timed out",
                             "halo-doctor: amdgpu-gpu-hang +2", "halo-doctor: amdgpu-gpu-h..."}) {
    CAPTURE(reason);
    CHECK(decide(epilog, node("IDLE+DRAIN", reason), s).action == Action::none);
    Verdict full = epilog;
    full.complete = true;
    Settings hc;
    CHECK(decide(full, node("IDLE+DRAIN", reason), hc).action == Action::resume);
  }
  // A complete run still keeps a named rule it did not find passing (skipped).
  Verdict full;
  full.complete = true;
  CHECK(decide(full, node("IDLE+DRAIN", "halo-doctor: ttm-limit-low"), Settings{}).action ==
        Action::none);
}

TEST_CASE("the reason's rules are read back as drain_reason wrote them", "[slurm]") {
  const std::vector<std::string> ids = {"kfd-access", "render-node-access", "ttm-limit-low"};
  auto r = rules_of_reason(drain_reason("", ids, 200));
  CHECK(r.ids == ids);
  CHECK(r.all);
  r = rules_of_reason(drain_reason("reboot pending: ", {"ttm-limit-low"}, 60));
  CHECK(r.ids == std::vector<std::string>{"ttm-limit-low"});
  CHECK(r.all);
  r = rules_of_reason(drain_reason("", ids, 30)); // "halo-doctor: kfd-access +2"
  CHECK(r.ids == std::vector<std::string>{"kfd-access"});
  CHECK_FALSE(r.all);
  CHECK_FALSE(rules_of_reason("halo-doctor: could not check: timed out").all);
  CHECK(rules_of_reason("NHC: x").ids.empty());
}

TEST_CASE("cleared: every result of the rule passed or failed uncounted", "[slurm]") {
  std::vector<Result> rs(4);
  rs[0].id = "a"; // passes on GPU 0, fails on GPU 1: not cleared
  rs[1].id = "a";
  rs[1].status = Outcome::fail;
  rs[1].severity = Severity::error;
  rs[2].id = "b"; // skipped: not judged
  rs[2].status = Outcome::skip;
  rs[3].id = "c"; // a warning under --fail-on error: cleared
  rs[3].status = Outcome::fail;
  rs[3].severity = Severity::warning;
  CHECK(verdict_from_results(rs, FailOn::error).cleared == std::vector<std::string>{"c"});
}

TEST_CASE("pending reboot drains with a reboot reason, or leaves the node", "[slurm]") {
  Verdict v;
  v.pending = {"ttm-limit-low"};
  Settings s;
  auto d = decide(v, node("IDLE", ""), s);
  CHECK(d.action == Action::drain);
  CHECK(d.reason == "halo-doctor: reboot pending: ttm-limit-low");
  CHECK(d.exit_code == 4);
  s.pending_reboot = PendingReboot::leave;
  d = decide(v, node("IDLE", ""), s);
  CHECK(d.action == Action::none);
  CHECK(d.exit_code == 4);
  s.mode = Mode::prolog;
  CHECK(decide(v, node("IDLE", ""), s).exit_code == 0); // the job may run
  // Failures and pending ones together: one drain naming both.
  v.failed = {"kfd-access"};
  CHECK(decide(v, node("IDLE", ""), s).reason == "halo-doctor: kfd-access,ttm-limit-low");
}

TEST_CASE("when the doctor cannot judge, the node is left alone unless the site asks", "[slurm]") {
  Verdict v;
  v.internal_error = "policy or rules error";
  v.failed = {"ignored"}; // never acted on with an internal error
  Settings s;
  auto d = decide(v, node("IDLE+DRAIN", "halo-doctor: kfd-access"), s);
  CHECK(d.action == Action::none);
  CHECK(d.exit_code == 70);
  s.mode = Mode::prolog;
  CHECK(decide(v, node("IDLE", ""), s).exit_code == 0);
  s.drain_on_internal_error = true;
  d = decide(v, node("IDLE", ""), s);
  CHECK(d.action == Action::drain);
  CHECK(d.reason == "halo-doctor: could not check: policy or rules error");
  CHECK(d.exit_code == 1);
  CHECK(decide(v, node("IDLE+DRAIN", "maintenance"), s).action == Action::none);
}

TEST_CASE("without the node's state nothing is changed, and the prolog still fails", "[slurm]") {
  Verdict v;
  v.failed = {"kfd-access"};
  Settings s;
  s.mode = Mode::prolog;
  auto d = decide(v, std::nullopt, s);
  CHECK(d.action == Action::none);
  CHECK(d.exit_code == 1); // Slurm drains it ("Prolog error") and holds the job
  s.mode = Mode::health_check;
  CHECK(decide(Verdict{}, std::nullopt, s).exit_code == 70);
  CHECK(decide(v, std::nullopt, s).exit_code == 70);
}

TEST_CASE("scontrol runs bounded, without a shell, with its environment", "[slurm]") {
  using std::chrono::milliseconds;
  auto r = run_bounded({"sh", "-c", "echo out; echo err >&2; exit 3"}, {}, milliseconds(5000));
  CHECK(r.started);
  CHECK(r.exit_code == 3);
  CHECK(r.output == "out\nerr\n");
  CHECK_FALSE(r.ok());

  r = run_bounded({"sh", "-c", "printf %s \"$SLURM_CONF\""}, {{"SLURM_CONF", "/x/slurm.conf"}},
                  milliseconds(5000));
  CHECK(r.ok());
  CHECK(r.output == "/x/slurm.conf");

  // Arguments are passed as they are: a reason with spaces and quotes stays one argument.
  r = run_bounded({"printf", "%s|", "reason=halo-doctor: a,b", "x\"y"}, {}, milliseconds(5000));
  CHECK(r.output == "reason=halo-doctor: a,b|x\"y|");

  // A hang is killed at the limit, with what it started (the process group).
  const auto t0 = std::chrono::steady_clock::now();
  r = run_bounded({"sh", "-c", "sleep 30 & sleep 30"}, {}, milliseconds(300));
  CHECK(r.timed_out);
  CHECK_FALSE(r.ok());
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(5));

  r = run_bounded({"halo-doctor-no-such-scontrol"}, {}, milliseconds(1000));
  CHECK_FALSE(r.started);
  CHECK(r.error.find("not found") != std::string::npos);
}

TEST_CASE("the built-in rules that can change between jobs are marked volatile", "[slurm]") {
  const ProbeRegistry reg = builtin_probes();
  const RuleSet rs = load_builtin_rules(&reg);
  std::vector<std::string> ids;
  for (const auto& r : rs.rules)
    if (r.volatile_verdict) ids.push_back(r.id);
  std::sort(ids.begin(), ids.end());
  // Device access, the driver, the runtime, firmware, a GPU hang, RAS errors, the PCIe link (it
  // retrains after a GPU reset), the DPM level a job may leave forced, throttling: not the
  // boot-time configuration. On WSL2 (issue 37): /dev/dxg and its access, librocdxg and DXCore
  // (installed or mounted between jobs), not the ROCm release or the job's environment; the
  // GPU-PV channel behind /dev/dxg and the librocdxg a venv's TheRock ROCr reaches, likewise.
  CHECK(ids == std::vector<std::string>{"amdgpu-driver-loaded",
                                        "amdgpu-gpu-hang",
                                        "gfx1151-mes-firmware",
                                        "gpu-bad-pages",
                                        "gpu-pcie-link",
                                        "gpu-perf-level",
                                        "gpu-power-cap",
                                        "gpu-ras-uncorrectable",
                                        "gpu-throttling",
                                        "hsa-runtime-init",
                                        "kfd-access",
                                        "kfd-present",
                                        "render-node-access",
                                        "wsl-dxg-access",
                                        "wsl-gpupv-no-adapter",
                                        "wsl-libdxcore-missing",
                                        "wsl-librocdxg-missing",
                                        "wsl-librocdxg-not-on-loader-path",
                                        "wsl-no-dxg-device",
                                        "wsl-sdk-librocdxg-not-on-loader-path"});
  const std::string rule = R"({"area": "a", "rules": [
    {"id": "x", "title": "x", "pass_message": "ok", "why": "w", "volatile": "yes",
     "fail": [{"severity": "error", "when": {"fact": "mem.total_bytes", "lt": 1}, "message": "m"}],
     "sources": ["https://example.org"]}]})";
  CHECK_THROWS_WITH(parse_rules_file(rule, "r.json", &reg),
                    Catch::Contains("volatile") && Catch::Contains("true or false"));
}

TEST_CASE("a site policy names the rules of the prolog and the epilog", "[slurm][policy]") {
  const Policy p = parse_policy(
      "{\"slurm\": {\"prolog\": [\"kfd-access\"],\n \"epilog\": [\"hsa-runtime-init\"]}}",
      "p.json");
  REQUIRE(p.slurm_prolog_rules.has_value());
  CHECK(*p.slurm_prolog_rules == std::vector<std::string>{"kfd-access"});
  CHECK(*p.slurm_epilog_rules == std::vector<std::string>{"hsa-runtime-init"});
  CHECK(p.id_lines.at("hsa-runtime-init") == 2); // unknown ids are reported with their line
  CHECK_FALSE(parse_policy("{}", "p.json").slurm_prolog_rules.has_value());
  CHECK_THROWS_WITH(parse_policy(R"({"slurm": {"prolog": "kfd-access"}})", "p.json"),
                    Catch::Contains("p.json:1: slurm/prolog"));
  CHECK_THROWS_WITH(parse_policy(R"({"slurm": {"health-check": []}})", "p.json"),
                    Catch::Contains("unknown key 'health-check'"));
}

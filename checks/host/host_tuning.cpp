// SPDX-License-Identifier: MIT
// Probe: host settings a lab tunes on GPU nodes, read without root:
//   /sys/devices/system/cpu/cpuN/cpufreq/scaling_governor   the cpufreq governor of each CPU
//       (Documentation/admin-guide/pm/cpufreq.rst); the distinct ones are kept
//   /sys/devices/system/cpu/cpuN/cpuidle/state2/{name,disable}  the third idle state (C2 on AMD
//       EPYC) and whether it is disabled (Documentation/admin-guide/pm/cpuidle.rst: "disable" is
//       1 when the state is disabled for that CPU); AMD's MI300X guide disables it with
//       `cpupower idle-set -d 2`
//   /sys/kernel/mm/transparent_hugepage/enabled             "always [madvise] never": the
//       bracketed mode (Documentation/admin-guide/mm/transhuge.rst)
//   /proc/sys/vm/compaction_proactiveness                   0..100, how hard kcompactd compacts
//       memory in the background (Documentation/admin-guide/sysctl/vm.rst: default 20, 0 turns
//       proactive compaction off; the file exists from Linux 5.9); AMD's MI300A page sets 20
//   /proc/sys/vm/compact_unevictable_allowed                1: compaction may move unevictable
//       (mlocked) pages (vm.rst: default 1, 0 on PREEMPT_RT); AMD's MI300A page sets 1
//   /proc/self/limits                                       "Max locked memory" and "Max open
//       files", soft limits of this process (proc(5)): what a training run started the same way
//       inherits
// At most kMaxCpus CPUs are read.
#include "probe_util.hpp"
#include "probes.hpp"

#include <halo/fact_keys.hpp>

#include <fmt/format.h>

#include <re2/re2.h>

#include <cstdint>
#include <limits>
#include <set>

namespace halo::probes {
namespace {

constexpr std::size_t kMaxCpus = 4096; // CONFIG_NR_CPUS of distribution kernels is 8192 at most

void collect_cpus(const ProbeContext& ctx, FactSet& facts) {
  const std::string base = "/sys/devices/system/cpu";
  Status st = Status::ok;
  const auto names = ctx.root.list(base, &st);
  if (!names) {
    for (const std::string_view k :
         {fact_keys::host::cpufreq_governors, fact_keys::host::cpuidle_c2_enabled_cpus})
      facts.put_status(std::string(k), st, base, "cannot list " + base);
    return;
  }
  static const RE2 cpu_re("cpu[0-9]+");
  std::set<std::string> governors;
  std::int64_t c2_enabled = 0;
  std::size_t cpus = 0;
  std::size_t with_state2 = 0;
  std::string state2_name;
  for (const auto& n : *names) {
    if (!RE2::FullMatch(n, cpu_re)) continue;
    if (++cpus > kMaxCpus) break;
    const std::string dir = fmt::format("{}/{}", base, n);
    if (ReadResult g = ctx.root.read_trimmed(dir + "/cpufreq/scaling_governor"); g.ok())
      governors.insert(g.text.substr(0, 32));
    ReadResult d = ctx.root.read_trimmed(dir + "/cpuidle/state2/disable");
    if (!d.ok()) continue;
    ++with_state2;
    if (state2_name.empty())
      if (ReadResult nm = ctx.root.read_trimmed(dir + "/cpuidle/state2/name"); nm.ok())
        state2_name = nm.text.substr(0, 32);
    if (parse_int(d.text) == 0) ++c2_enabled;
  }
  const std::string gsrc = base + "/cpu*/cpufreq/scaling_governor";
  if (governors.empty())
    facts.put_status(std::string(fact_keys::host::cpufreq_governors), Status::missing, gsrc,
                     "no cpufreq governor (no cpufreq driver, or a VM)");
  else
    facts.put_ok(std::string(fact_keys::host::cpufreq_governors),
                 std::vector<std::string>(governors.begin(), governors.end()), gsrc);
  const std::string csrc = base + "/cpu*/cpuidle/state2/disable";
  if (with_state2 == 0) {
    facts.put_status(std::string(fact_keys::host::cpuidle_c2_enabled_cpus), Status::missing, csrc,
                     "no third idle state (cpuidle off, or a VM)");
  } else {
    facts.put_ok(std::string(fact_keys::host::cpuidle_c2_enabled_cpus), c2_enabled,
                 fmt::format("{} ({})", csrc, state2_name.empty() ? "state2" : state2_name));
  }
}

/// One soft limit of /proc/self/limits ("Max locked memory  8388608  8388608  bytes"): the soft
/// value as an integer, and whether it is unlimited. The kernel prints "unlimited" for
/// RLIM_INFINITY (fs/proc/base.c, proc_pid_limits), which is 2^64-1 and does not fit a fact's
/// signed 64-bit integer: it is recorded as the largest one, so that `>=` comparisons hold, and
/// `<key>_unlimited` says so.
void collect_limit(const ReadResult& r, std::string_view row, const std::string& key,
                   FactSet& facts) {
  const std::string unlimited_key = key + "_unlimited";
  if (!r.ok()) {
    facts.put_status(key, r.status, r.path, r.reason);
    facts.put_status(unlimited_key, r.status, r.path, r.reason);
    return;
  }
  for (const auto& line : split_lines(r.text)) {
    if (line.rfind(row, 0) != 0) continue;
    const auto fields = split_list(line.substr(row.size()), ' ', 4);
    if (fields.empty()) break;
    if (fields[0] == "unlimited") {
      facts.put_ok(key, std::numeric_limits<std::int64_t>::max(), r.path + " (unlimited)");
      facts.put_ok(unlimited_key, true, r.path);
    } else if (auto v = parse_int(fields[0]); v && *v >= 0) {
      facts.put_ok(key, *v, r.path);
      facts.put_ok(unlimited_key, false, r.path);
    } else {
      break;
    }
    return;
  }
  const std::string why = fmt::format("no '{}' row", row);
  facts.put_status(key, Status::error, r.path, why);
  facts.put_status(unlimited_key, Status::error, r.path, why);
}

void collect(const ProbeContext& ctx, FactSet& facts) {
  collect_cpus(ctx, facts);
  const std::string thp = "/sys/kernel/mm/transparent_hugepage/enabled";
  if (ReadResult r = ctx.root.read_trimmed(thp); !r.ok()) {
    facts.put_status(std::string(fact_keys::host::thp_enabled), r.status, r.path, r.reason);
  } else {
    static const RE2 bracket_re(R"(.*\[([a-z]+)\].*)");
    std::string mode;
    if (RE2::FullMatch(r.text, bracket_re, &mode))
      facts.put_ok(std::string(fact_keys::host::thp_enabled), mode, r.path);
    else
      facts.put_status(std::string(fact_keys::host::thp_enabled), Status::error, r.path,
                       "no bracketed mode: '" + r.text.substr(0, 64) + "'");
  }
  put_int(facts, ctx.root, std::string(fact_keys::host::compaction_proactiveness),
          "/proc/sys/vm/compaction_proactiveness");
  put_int(facts, ctx.root, std::string(fact_keys::host::compact_unevictable_allowed),
          "/proc/sys/vm/compact_unevictable_allowed");
  const ReadResult limits = ctx.root.read("/proc/self/limits");
  collect_limit(limits, "Max locked memory", std::string(fact_keys::user::limits_memlock_soft),
                facts);
  collect_limit(limits, "Max open files", std::string(fact_keys::user::limits_nofile_soft), facts);
}

} // namespace

std::unique_ptr<Probe> make_host_tuning_probe() {
  return std::make_unique<BasicProbe>("host_tuning", collect);
}

} // namespace halo::probes

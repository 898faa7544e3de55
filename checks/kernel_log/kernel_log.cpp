// SPDX-License-Identifier: MIT
// Probe: the kernel log, for why amdgpu is not driving a GPU. On the live root it reads the
// records in /dev/kmsg (Documentation/ABI/testing/dev-kmsg: one record per read(), "prefix;text",
// EAGAIN at the end with O_NONBLOCK, EPIPE when a record was overwritten); under --root it reads
// ROOT/.halo/dmesg.txt, a text capture (`dmesg` output). kernel.dmesg_restrict=1 makes /dev/kmsg
// EPERM for users without CAP_SYSLOG: that is a `denied` fact with the command to run instead.
// Messages matched, each from the kernel source that prints it:
//   "probe with driver amdgpu failed with error -22"  drivers/base/dd.c really_probe() (6.x);
//   "amdgpu: probe of 0000:03:00.0 failed with error -12"  the same, kernels before 6.3;
//   "Direct firmware load for amdgpu/X.bin failed with error -2"  firmware_loader/main.c;
//   "Loading of unsigned module is rejected", "Loading of module with unavailable key is
//   rejected"  kernel/module/signing.c module_sig_check() where signatures are enforced;
//   "Lockdown: modprobe: unsigned module loading is restricted; see man kernel_lockdown.7"
//   security/lockdown/lockdown.c lockdown_is_locked_down(), the same check where only the
//   lockdown (Secure Boot) stops the module;
//   "ring gfx_0.0.0 timeout"  amdgpu_job.c amdgpu_job_timedout().
// Each firmware file that failed to load is looked up again, now, where the kernel looks for it
// (drivers/base/firmware_loader/main.c: fw_path[] = {firmware_class.path=,
// "/lib/firmware/updates/" UTS_RELEASE, "/lib/firmware/updates", "/lib/firmware/" UTS_RELEASE,
// "/lib/firmware"}; _request_firmware() tries the plain name in every directory, then ".zst",
// then ".xz" with CONFIG_FW_LOADER_COMPRESS_ZSTD/_XZ): a file there now was installed after
// the boot, or is on disk but not in the initramfs amdgpu loaded from.
#include "probe_util.hpp"
#include "probes.hpp"

#include <halo/fact_keys.hpp>
#include <halo/root.hpp>

#include <fmt/format.h>

#include <fcntl.h>
#include <re2/re2.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>

namespace halo::probes {
namespace {

constexpr std::size_t kMaxRecords = 100000;
constexpr std::size_t kMaxBytes = std::size_t{16} * 1024 * 1024;

struct LogText {
  Status status = Status::ok;
  std::string source;
  std::string reason;
  std::vector<std::string> lines;
  std::vector<std::string> times; ///< seconds since boot of each line ("8133.520117"), or ""
};

/// The live kernel's records, text only (the part after ';', up to the first newline).
LogText read_kmsg() {
  LogText t;
  t.source = "/dev/kmsg";
  const UniqueFd fd(::open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC));
  if (!fd) {
    const int err = errno;
    t.status = err == EPERM || err == EACCES ? Status::denied
               : err == ENOENT               ? Status::missing
                                             : Status::error;
    t.reason = err == EPERM || err == EACCES
                   ? "the kernel log needs privileges (kernel.dmesg_restrict=1): run `sudo "
                     "halo-doctor check`, or `sudo dmesg | grep -i amdgpu`"
                   : std::strerror(err);
    return t;
  }
  std::string rec(8192, '\0');
  std::size_t bytes = 0;
  while (t.lines.size() < kMaxRecords && bytes < kMaxBytes) {
    const ssize_t n = ::read(fd.get(), rec.data(), rec.size());
    if (n < 0) {
      if (errno == EPIPE) continue; // overwritten while reading: the next read resumes
      if (errno == EINTR) continue;
      break; // EAGAIN: no more records
    }
    if (n == 0) break;
    bytes += static_cast<std::size_t>(n);
    std::string_view r(rec.data(), static_cast<std::size_t>(n));
    const auto semi = r.find(';');
    if (semi == std::string_view::npos) continue;
    // "prio,seq,usec,flags;text" (Documentation/ABI/testing/dev-kmsg): usec since boot.
    const auto fields = split_list(r.substr(0, semi), ',', 4);
    const auto usec = fields.size() >= 3 ? parse_int(fields[2]) : std::nullopt;
    t.times.push_back(usec && *usec >= 0
                          ? fmt::format("{}.{:06d}", *usec / 1000000, *usec % 1000000)
                          : std::string());
    r.remove_prefix(semi + 1);
    t.lines.emplace_back(r.substr(0, r.find('\n')));
  }
  return t;
}

LogText read_capture(const Root& root) {
  LogText t;
  t.source = "/.halo/dmesg.txt";
  ReadResult r = root.read(t.source, kMaxBytes);
  if (!r.ok()) {
    t.status = r.status;
    // A fixture or bundle without a capture: not probed (rules skip), not an error.
    t.reason = r.status == Status::missing
                   ? std::string(kNotProbedPrefix) +
                         "no kernel log in this root (a capture goes in ROOT/.halo/dmesg.txt)"
                   : r.reason;
    return t;
  }
  // `dmesg` output: drop the "[    5.120394] " timestamp so lines read like /dev/kmsg's text.
  // Only a timestamp is removed ("[drm] ..." is the message's own text).
  static const RE2 stamp(R"(^\[\s*(\d+\.\d+)\] )");
  for (auto& line : split_lines(r.text)) {
    std::string when;
    RE2::PartialMatch(line, stamp, &when);
    RE2::Replace(&line, stamp, "");
    t.lines.push_back(std::move(line));
    t.times.push_back(std::move(when));
  }
  return t;
}

/// Where the kernel would find firmware file `name` ("amdgpu/gc_11_5_1_mes_2.bin") now, as the
/// path on the target system, or "" when it finds none. `custom` is firmware_class.path.
std::string find_firmware(const Root& root, const std::string& name, const std::string& release,
                          const std::string& custom) {
  std::vector<std::string> dirs;
  if (!custom.empty()) dirs.push_back(custom);
  if (!release.empty() && release.find('/') == std::string::npos && release != "..")
    dirs.push_back("/lib/firmware/updates/" + release);
  dirs.emplace_back("/lib/firmware/updates");
  if (!release.empty() && release.find('/') == std::string::npos && release != "..")
    dirs.push_back("/lib/firmware/" + release);
  dirs.emplace_back("/lib/firmware");
  for (const char* suffix : {"", ".zst", ".xz"})
    for (const auto& d : dirs) {
      std::string p = fmt::format("{}/{}{}", d, name, suffix);
      if (root.exists(p) && !root.is_dir(p)) return p;
    }
  return {};
}

void collect(const ProbeContext& ctx, FactSet& facts) {
  const LogText log = ctx.root.is_live() ? read_kmsg() : read_capture(ctx.root);
  constexpr std::array keys = {
      fact_keys::kernel_log::amdgpu_probe_errors, fact_keys::kernel_log::firmware_load_failures,
      fact_keys::kernel_log::firmware_on_disk,    fact_keys::kernel_log::module_signature_rejected,
      fact_keys::kernel_log::ring_timeouts,       fact_keys::kernel_log::lines,
      fact_keys::kernel_log::gpu_resets,          fact_keys::kernel_log::mes_failures,
      fact_keys::kernel_log::page_faults,         fact_keys::kernel_log::hang_events};
  if (log.status != Status::ok) {
    facts.put_status(std::string(fact_keys::kernel_log::status), log.status, log.source,
                     log.reason);
    for (const std::string_view k : keys)
      facts.put_status(std::string(k), log.status, log.source, log.reason);
    return;
  }
  facts.put_ok(std::string(fact_keys::kernel_log::status), std::string("ok"), log.source);
  static const RE2 probe_new(
      R"(amdgpu ([0-9a-fA-F:.]+): probe with driver amdgpu failed with error (-?\d+))");
  static const RE2 probe_old(R"(amdgpu: probe of ([0-9a-fA-F:.]+) failed with error (-?\d+))");
  static const RE2 firmware(R"(Direct firmware load for (amdgpu/\S+) failed with error (-?\d+))");
  static const RE2 ring(R"(amdgpu.*ring (\S+) timeout)");
  std::vector<std::string> probe_errors;
  std::vector<std::string> fw;
  std::vector<std::string> sig;
  std::vector<std::string> rings;
  std::vector<std::string> kept; // the lines that matter here, for capture bundles
  std::int64_t resets = 0;
  std::int64_t mes = 0;
  std::int64_t faults = 0;
  std::vector<std::string> events; // "<seconds since boot> s: <message>", the first 32
  // GPU hang signatures (ROCm issues 6273, 6018, 5724; amdgpu_mes.c, gmc_v*.c, amdgpu_device.c):
  // MES not answering ("MES failed to respond to msg=..."; older kernels "failed to response"),
  // GPU page faults ("[gfxhub] page fault", "[mmhub] page fault"), resets and wedged devices.
  static const RE2 mes_re(R"(MES failed to respon|MES might be in unrecoverable state)");
  static const RE2 fault_re(R"(\[(gfxhub|mmhub)\S*\] (retry|no-retry )?page fault)");
  static const RE2 event_re(
      R"(ring \S+ timeout|GPU reset begin|GPU reset\S* failed|reset failed|device wedged|MES failed to respon|MES might be in unrecoverable state|\[(gfxhub|mmhub)\S*\] (retry |no-retry )?page fault)");
  auto add_once = [](std::vector<std::string>& v, std::string s) {
    if (std::find(v.begin(), v.end(), s) == v.end() && v.size() < 64) v.push_back(std::move(s));
  };
  for (std::size_t li = 0; li < log.lines.size(); ++li) {
    const std::string& line = log.lines[li];
    if ((line.find("amdgpu") != std::string::npos || line.find("firmware") != std::string::npos ||
         line.find("Loading of") != std::string::npos || line.find("kfd") != std::string::npos ||
         line.find("unsigned module loading is restricted") != std::string::npos) &&
        kept.size() < 2000)
      // With its time as dmesg prints it, so a capture bundle replays the times too.
      kept.push_back(li < log.times.size() && !log.times[li].empty()
                         ? fmt::format("[{:>12}] {}", log.times[li], line)
                         : line);
    std::string a;
    std::string b;
    if (RE2::PartialMatch(line, probe_new, &a, &b) || RE2::PartialMatch(line, probe_old, &a, &b))
      add_once(probe_errors, fmt::format("{}: {}", a, b));
    else if (RE2::PartialMatch(line, firmware, &a, &b))
      add_once(fw, fmt::format("{}: {}", a, b));
    else if (line.find("Loading of unsigned module is rejected") != std::string::npos ||
             line.find("Loading of module with unavailable key is rejected") != std::string::npos ||
             line.find("unsigned module loading is restricted") != std::string::npos)
      add_once(sig, line.substr(0, 200));
    else if (RE2::PartialMatch(line, ring, &a))
      add_once(rings, a);
    // amdgpu_device.c amdgpu_device_gpu_recover(): "GPU reset begin!" once per reset.
    if (line.find("amdgpu") != std::string::npos &&
        line.find("GPU reset begin") != std::string::npos)
      ++resets;
    if (line.find("amdgpu") == std::string::npos) continue;
    if (RE2::PartialMatch(line, mes_re)) ++mes;
    if (RE2::PartialMatch(line, fault_re)) ++faults;
    if (events.size() < 32 && RE2::PartialMatch(line, event_re)) {
      const std::string& when = li < log.times.size() ? log.times[li] : std::string();
      events.push_back(
          fmt::format("{}: {}", when.empty() ? "(no time)" : when + " s", line.substr(0, 160)));
    }
  }
  facts.put_ok(std::string(fact_keys::kernel_log::amdgpu_probe_errors), probe_errors, log.source);
  facts.put_ok(std::string(fact_keys::kernel_log::firmware_load_failures), fw, log.source);
  facts.put_ok(std::string(fact_keys::kernel_log::module_signature_rejected), sig, log.source);
  facts.put_ok(std::string(fact_keys::kernel_log::ring_timeouts), rings, log.source);
  facts.put_ok(std::string(fact_keys::kernel_log::lines), kept, log.source);
  facts.put_ok(std::string(fact_keys::kernel_log::gpu_resets), resets, log.source);
  facts.put_ok(std::string(fact_keys::kernel_log::mes_failures), mes, log.source);
  facts.put_ok(std::string(fact_keys::kernel_log::page_faults), faults, log.source);
  facts.put_ok(std::string(fact_keys::kernel_log::hang_events), events, log.source);
  // The failed files as the kernel would find them now ("name: path"), for those it would find.
  const std::string release = facts.get<std::string>(keys::kernel_release).value_or("");
  ReadResult custom = ctx.root.read_trimmed("/sys/module/firmware_class/parameters/path");
  std::vector<std::string> on_disk;
  const char* fw_source = "/lib/firmware/updates/<release>, /lib/firmware/updates, "
                          "/lib/firmware/<release>, /lib/firmware (and firmware_class.path), each "
                          "as .bin, .bin.zst, .bin.xz";
  // Nothing failed: nothing to look up, whatever the root holds. Else a root without firmware
  // (a fixture, a bundle, a container) is not probed, not "missing".
  if (!fw.empty() && !ctx.root.is_dir("/lib/firmware") &&
      !(custom.ok() && ctx.root.is_dir(custom.text))) {
    facts.put_status(std::string(fact_keys::kernel_log::firmware_on_disk), Status::missing,
                     "/lib/firmware",
                     std::string(kNotProbedPrefix) + "no /lib/firmware in this root");
    return;
  }
  for (const auto& entry : fw) {
    const std::string name = entry.substr(0, entry.rfind(": "));
    if (name.find("..") != std::string::npos) continue; // never a name that climbs
    if (const std::string p =
            find_firmware(ctx.root, name, release, custom.ok() ? custom.text : "");
        !p.empty())
      on_disk.push_back(fmt::format("{}: {}", name, p));
  }
  facts.put_ok(std::string(fact_keys::kernel_log::firmware_on_disk), on_disk, fw_source);
}

} // namespace

std::unique_ptr<Probe> make_kernel_log_probe() {
  return std::make_unique<BasicProbe>("kernel_log", collect);
}

} // namespace halo::probes

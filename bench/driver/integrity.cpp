// SPDX-License-Identifier: MIT
// halo-bench integrity part: host <-> device transfers of known patterns on every copy path and
// size, the device's bf16 conversions, and on ROCm the same again with HSA_ENABLE_SDMA=0.
#include "halo_bench/integrity.hpp"

#include "driver.hpp"

#include <nlohmann/json.hpp>

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <string>
#include <string_view>

extern char** environ;

namespace halo_bench::driver {

namespace {

/// Runs the transfer matrix and the conversion check; facts under bench.integrity.<mode>.
/// Returns true when everything matched.
bool run_integrity_checks(const Plan& plan, const std::string& mode, FactSet& facts) {
  const std::string base = "bench.integrity." + mode;
  bool all_ok = true;
  std::string first_failure;
  const struct {
    gpu::CopyPath path;
    const char* name;
  } paths[] = {{gpu::CopyPath::pageable, "pageable"},
               {gpu::CopyPath::pinned, "pinned"},
               {gpu::CopyPath::pinned_async, "async"}};
  std::printf("Transfer integrity (%s): host -> device -> host, %zu sizes x 3 paths\n",
              mode.c_str(), plan.integrity_sizes.size());
  for (const auto& path : paths) {
    for (const std::uint64_t bytes : plan.integrity_sizes) {
      const std::string key = base + "." + path.name + "." + halo_bench::size_label(bytes);
      // Every pattern up to 64 MiB; above, the address hash and the bf16 specials (the patterns
      // that show misplaced pages and lost special values) keep the run short.
      std::vector<int> kinds;
      for (int k = 0; k < halo_bench::pattern_kind_count; ++k)
        if (bytes <= (std::uint64_t{64} << 20) || k == halo_bench::pattern_address_hash ||
            k == halo_bench::pattern_bf16_specials)
          kinds.push_back(k);
      std::string failure;
      double seconds = 0.0;
      try {
        for (const int kind : kinds) {
          const gpu::RoundTrip r =
              gpu::run_round_trip(path.path, bytes, kind, static_cast<std::uint32_t>(bytes));
          seconds += r.seconds;
          if (!r.ok) {
            halo_bench::Mismatch m{r.first_bad_offset, r.first_bad_offset / 4, r.expected_word,
                                   r.got_word, r.bad_words};
            failure = std::string(halo_bench::pattern_name(kind)) + " pattern, " + r.stage + ": " +
                      halo_bench::describe(m, bytes / 4);
            facts.set_ok(key + ".first_bad_offset", r.first_bad_offset,
                         "halo-bench integrity (" + r.stage + ")");
            break;
          }
        }
      } catch (const gpu::GpuError& e) {
        failure = e.what();
      }
      if (failure.empty()) {
        facts.set_ok(key, "pass",
                     "halo-bench integrity: " + std::to_string(kinds.size()) +
                         " patterns round-tripped bit for bit in " + std::to_string(seconds) +
                         " s");
      } else {
        facts.set_error(key, failure);
        std::printf("  %-8s %-8s MISMATCH %s\n", path.name, halo_bench::size_label(bytes).c_str(),
                    failure.c_str());
        if (all_ok)
          first_failure =
              std::string(path.name) + " " + halo_bench::size_label(bytes) + ": " + failure;
        all_ok = false;
      }
    }
  }
  // On-device fp32 <-> bf16 conversion against the CPU's round to nearest even.
  try {
    const auto in = halo_bench::conversion_inputs();
    const auto widen = halo_bench::widening_inputs();
    const gpu::DeviceConversion d = gpu::convert_on_device(in, widen);
    const auto to = halo_bench::check_to_bf16(in, d.to_bf16);
    const auto back = halo_bench::check_widening(widen, d.widened);
    if (to) {
      facts.set_error(base + ".to_bf16",
                      "device " + d.function + ": " + halo_bench::describe(*to, in.size()));
      all_ok = false;
      if (first_failure.empty()) first_failure = "fp32 -> bf16 on the device";
    } else {
      facts.set_ok(base + ".to_bf16", "pass",
                   "device " + d.function + " vs CPU round to nearest even, " +
                       std::to_string(in.size()) + " inputs incl. subnormals, ties, inf, NaN");
    }
    if (back) {
      facts.set_error(base + ".from_bf16",
                      "device " + d.function + ": " + halo_bench::describe(*back, widen.size()));
      all_ok = false;
      if (first_failure.empty()) first_failure = "bf16 -> fp32 on the device";
    } else {
      facts.set_ok(base + ".from_bf16", "pass",
                   "device " + d.function + ", all 65536 bf16 patterns widened exactly");
    }
    std::printf("  bf16 conversion on the device (%s): to_bf16 %s, from_bf16 %s\n",
                d.function.c_str(), to ? "MISMATCH" : "pass", back ? "MISMATCH" : "pass");
  } catch (const gpu::GpuError& e) {
    facts.set_error(base + ".to_bf16", e.what());
    all_ok = false;
    if (first_failure.empty()) first_failure = e.what();
  }
  facts.set_ok(base + ".ok", all_ok, "halo-bench integrity (" + mode + ")");
  if (!all_ok) facts.set_ok(base + ".first_failure", first_failure, "halo-bench integrity");
  std::printf("  integrity (%s): %s\n", mode.c_str(), all_ok ? "all transfers intact" : "CORRUPT");
  return all_ok;
}

/// Re-runs the integrity part in a child with HSA_ENABLE_SDMA=0 (ROCm: copies by blit kernels
/// instead of the SDMA engines; ROCR-Runtime src/core/util/flag.h `enable_sdma`), reads its facts
/// and records them under bench.integrity.sdma_off.
void run_sdma_off_child(const Options& o, FactSet& facts) {
  char self[4096];
  const ssize_t len = ::readlink("/proc/self/exe", self, sizeof self - 1);
  if (len <= 0) {
    facts.set_error("bench.integrity.sdma_off.ok", "cannot find /proc/self/exe for the child");
    return;
  }
  self[len] = '\0';
  char dir_template[] = "/tmp/halo-bench-sdma.XXXXXX";
  const char* dir = ::mkdtemp(dir_template);
  if (dir == nullptr) {
    facts.set_error("bench.integrity.sdma_off.ok", "cannot create a temporary directory");
    return;
  }
  const std::string json = std::string(dir) + "/facts.json";
  std::vector<std::string> args = {self,
                                   "--only",
                                   "integrity",
                                   "--integrity-sizes",
                                   o.integrity_sizes,
                                   "--integrity-child",
                                   "--device",
                                   std::to_string(o.device),
                                   "--json",
                                   json};
  std::vector<char*> argv;
  for (auto& a : args)
    argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<std::string> env_s;
  for (char** e = environ; *e != nullptr; ++e)
    if (std::string_view(*e).rfind("HSA_ENABLE_SDMA=", 0) != 0) env_s.emplace_back(*e);
  env_s.emplace_back("HSA_ENABLE_SDMA=0");
  std::vector<char*> envp;
  for (auto& e : env_s)
    envp.push_back(e.data());
  envp.push_back(nullptr);
  std::printf("Transfer integrity with HSA_ENABLE_SDMA=0 (child process)\n");
  std::fflush(stdout);
  pid_t pid = 0;
  int status = 0;
  if (::posix_spawn(&pid, self, nullptr, nullptr, argv.data(), envp.data()) != 0 ||
      ::waitpid(pid, &status, 0) != pid) {
    facts.set_error("bench.integrity.sdma_off.ok", "could not run the HSA_ENABLE_SDMA=0 child");
  } else {
    try {
      std::ifstream in(json);
      const auto doc = nlohmann::json::parse(in);
      bool found = false;
      for (const auto& [key, fact] : doc.at("facts").items()) {
        if (key.rfind("bench.integrity.default.", 0) != 0) continue;
        const std::string mine = "bench.integrity.sdma_off." + key.substr(24);
        const std::string st = fact.at("status").get<std::string>();
        if (st == "ok") {
          facts.set_ok(mine, fact.at("value"),
                       fact.at("source").get<std::string>() + " (child, HSA_ENABLE_SDMA=0)");
        } else {
          facts.set_error(mine, fact.value("reason", st));
        }
        found = true;
      }
      if (!found)
        facts.set_error("bench.integrity.sdma_off.ok",
                        "the HSA_ENABLE_SDMA=0 child wrote no integrity facts (exit status " +
                            std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1) + ")");
    } catch (const std::exception& e) {
      facts.set_error("bench.integrity.sdma_off.ok",
                      std::string("cannot read the child's facts: ") + e.what());
    }
  }
  std::remove(json.c_str());
  ::rmdir(dir);
}

} // namespace

void run_integrity_part(const Options& o, const Plan& plan, FactSet& facts) {
  const bool hip = std::string(gpu::backend_name()) == "hip";
  const char* sdma = std::getenv("HSA_ENABLE_SDMA");
  facts.set_ok("bench.integrity.hsa_enable_sdma", sdma != nullptr ? sdma : "unset",
               "environment of this run");
  const bool ok = run_integrity_checks(plan, "default", facts);
  if (o.integrity_child) return;
  if (!hip) {
    facts.set_missing("bench.integrity.sdma_off.ok",
                      "not a ROCm run: HSA_ENABLE_SDMA is a ROCm runtime setting");
  } else if (o.no_sdma_child) {
    facts.set_missing("bench.integrity.sdma_off.ok", "not requested (--no-sdma-child)");
  } else {
    run_sdma_off_child(o, facts);
  }
  facts.set_ok("bench.integrity.ok", ok,
               "halo-bench integrity with the run's own settings (bench.integrity.default.*)");
}

} // namespace halo_bench::driver

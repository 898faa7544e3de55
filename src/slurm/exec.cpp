// SPDX-License-Identifier: MIT
// A bounded child process for scontrol through the core runner (include/halo/child.hpp): execve
// (no shell), a time limit, stdout and stderr together, output capped.
#include <halo/child.hpp>
#include <halo/slurm.hpp>

#include <fmt/format.h>

#include <csignal>

namespace halo::slurm {
namespace {

constexpr std::size_t kMaxOutput = 1u << 20;

} // namespace

CommandResult run_bounded(const std::vector<std::string>& argv,
                          const std::map<std::string, std::string>& env_overrides,
                          std::chrono::milliseconds timeout) {
  child::Options options;
  options.limits.time_limit = timeout;
  options.limits.max_output_bytes = kMaxOutput;
  options.limits.on_overflow = child::Overflow::truncate;
  options.stderr_to = child::Stderr::merge;
  options.env_set = env_overrides;
  child::Result r = child::run(argv, options);
  CommandResult res;
  if (!r.started()) {
    res.error = std::move(r.start_error);
    return res;
  }
  res.started = true;
  res.output = std::move(r.out);
  if (r.end == child::End::timed_out) {
    res.timed_out = true;
    res.error = fmt::format("{} timed out after {:.1f} s (killed)", argv[0],
                            static_cast<double>(timeout.count()) / 1000.0);
    res.signal = SIGKILL;
    return res;
  }
  res.exit_code = r.exit_code;
  res.signal = r.signal;
  return res;
}

} // namespace halo::slurm

// SPDX-License-Identifier: MIT
// The probes' line-oriented view of the core child runner (src/core/child.cpp): the ROCr queries
// (checks/runtime/hsa.cpp), the module reading (checks/kernel_args/module_file.cpp), the user's
// Python (checks/framework/framework_deep.cpp, checks/plan/plan_measure.cpp).
#include "child_run.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>

namespace halo::probes {
namespace {

/// A time limit in seconds as the runner's milliseconds: negative or NaN is 0, and at most a day.
std::chrono::milliseconds limit_of(double timeout_s) {
  const double s = timeout_s > 0 ? std::min(timeout_s, 86400.0) : 0.0;
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::duration<double>(s));
}

child::Limits limits_of(double timeout_s, std::size_t max_bytes) {
  child::Limits limits;
  limits.time_limit = limit_of(timeout_s);
  limits.max_output_bytes = max_bytes;
  limits.on_overflow = child::Overflow::kill;
  return limits;
}

ChildRun from_result(const child::Result& r) {
  ChildRun run;
  run.started = r.started();
  run.start_error = r.start_error;
  if (!run.started) return run;
  run.lines = child::complete_lines(r.out);
  run.timed_out = r.end == child::End::timed_out;
  run.too_much_output = r.end == child::End::output_overflow;
  run.exited = r.exit_code >= 0;
  run.exit_code = std::max(r.exit_code, 0);
  run.term_signal = r.signal;
  return run;
}

} // namespace

ChildRun run_in_child(const std::function<void(int fd)>& body, double timeout_s,
                      std::size_t max_bytes) {
  return from_result(child::run_function(body, limits_of(timeout_s, max_bytes)));
}

ChildRun run_program(const std::vector<std::string>& argv, double timeout_s,
                     std::size_t max_bytes) {
  child::Options options;
  options.limits = limits_of(timeout_s, max_bytes);
  options.stderr_to = child::Stderr::discard;
  options.search_path = false;
  return from_result(child::run(argv, options));
}

std::string describe_end(const ChildRun& run, double timeout_s) {
  child::Result r;
  r.start_error = run.start_error;
  r.signal = run.term_signal;
  r.exit_code = run.exited ? run.exit_code : -1;
  if (!run.started)
    r.end = child::End::not_started;
  else if (run.timed_out)
    r.end = child::End::timed_out;
  else if (run.too_much_output)
    r.end = child::End::output_overflow;
  else if (run.term_signal != 0)
    r.end = child::End::signalled;
  else
    r.end = child::End::exited;
  return child::describe_end(r, timeout_s);
}

} // namespace halo::probes

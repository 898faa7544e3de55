// SPDX-License-Identifier: MIT
#include "common.hpp"

#include <halo/error.hpp>
#include <halo/io.hpp>
#include <halo/sanitize.hpp>

#include <fmt/format.h>

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>

namespace halo::cli {

CLI::Validator finite_number() {
  return {[](std::string& s) -> std::string {
            double v = 0;
            const char* end = s.data() + s.size();
            const auto [p, ec] = std::from_chars(s.data(), end, v);
            if (ec != std::errc() || p != end || !std::isfinite(v))
              return fmt::format("'{}' is not a finite number", s);
            return {};
          },
          "FINITE"};
}

void add_probe_options(CLI::App* sub, CommonOptions& o) {
  sub->add_option(
         "--root", o.root,
         "Read the system under DIR instead of / (a fixture, or a host mounted in a container)")
      ->option_text("DIR");
  sub->add_option("--facts", o.facts_file,
                  "Use the facts saved by `halo-doctor facts --format json` instead of probing")
      ->option_text("FILE");
  sub->add_option("--bundle", o.bundle, "Replay a capture bundle written by `halo-doctor capture`")
      ->option_text("FILE.tar.gz");
  sub->add_option(
         "--add-facts", o.add_facts,
         "Merge facts from FILE (e.g. `halo-doctor bench --json FILE`) into the probed ones")
      ->option_text("FILE ...");
  sub->add_option("--reserve", o.probe.reserve_gib,
                  "GiB of memory left to the OS when recommending the TTM limit (0 to 4096; "
                  "default 4)")
      ->check(CLI::Range(0, 4096))
      ->option_text("GiB");
  sub->add_flag("--no-runtime", o.probe.no_runtime, "Do not load ROCr or libdrm (sysfs only)");
  sub->add_option("--hsa-library", o.probe.hsa_library,
                  "ROCr library (libhsa-runtime64.so.1) to load first; with --root DIR, a replay "
                  "library for a fixture (docs/hsa.md)")
      ->option_text("FILE");
  sub->add_option("--host-root", o.probe.host_root,
                  "The host's / as mounted in this container (docker -v /:/host:ro: --host-root "
                  "/host); toolbox and distrobox are found at /run/host without it")
      ->option_text("DIR");
  sub->add_option("--runtime-timeout", o.probe.runtime_timeout_s,
                  "Seconds the ROCr queries may take before they count as hung (0.1 to 600; "
                  "default 10)")
      ->check(finite_number())
      ->check(CLI::Range(0.1, 600.0))
      ->option_text("SECONDS");
  sub->add_flag("--framework-deep", o.probe.framework_deep,
                "Also ask PyTorch itself: import torch in a child process and query its GPUs "
                "(docs/framework.md)");
  sub->add_option("--python", o.probe.python,
                  "The Python environment to judge: the venv or prefix this interpreter belongs "
                  "to (read without running it), and the interpreter --framework-deep runs "
                  "(default: the active venv or conda environment's, else python3 on PATH)")
      ->option_text("PATH");
  sub->add_option("--framework-timeout", o.probe.framework_timeout_s,
                  "Seconds importing torch and querying the GPUs may take (--framework-deep; 1 "
                  "to 600; default 60)")
      ->check(finite_number())
      ->check(CLI::Range(1.0, 600.0))
      ->option_text("SECONDS");
}

void add_rule_options(CLI::App* sub, CommonOptions& o) {
  sub->add_option("--rules", o.rules_dir, "Load rules from DIR instead of the built-in set")
      ->option_text("DIR");
  sub->add_option("--only", o.only, "Evaluate only these rule ids (`halo-doctor rules` lists them)")
      ->delimiter(',')
      ->option_text("RULE,...");
  sub->add_option("--skip", o.skip, "Do not evaluate these rule ids")
      ->delimiter(',')
      ->option_text("RULE,...");
}

void require_machine_root(const CommonOptions& o) {
  if (!o.bundle.empty() || !o.facts_file.empty()) return;
  std::error_code ec;
  if (std::filesystem::weakly_canonical(o.root, ec) == "/" && !ec) return;
  if (!std::filesystem::is_directory(o.root, ec))
    throw InputError(
        fmt::format("--root {}: not a directory{}", o.root,
                    std::filesystem::exists(o.root, ec) ? "" : " (it does not exist)"));
  // A machine's root has the kernel's /proc and /sys and the configuration in /etc (hier(7)); a
  // fixture or a host's / mounted in a container has at least one of them. Without any, every
  // probe reads "missing", every rule skips, and the report would read as a healthy machine.
  for (const char* dir : {"proc", "sys", "etc"})
    if (std::filesystem::exists(std::filesystem::path(o.root) / dir, ec)) return;
  throw InputError(fmt::format(
      "--root {}: no proc, sys or etc under it, so it is not the root of a machine (give the "
      "directory a host's / is mounted at, or a fixture: see docs/fixtures.md)",
      o.root));
}

DoctorOptions doctor_options(const CommonOptions& o) {
  require_python_exists(o);
  require_machine_root(o);
  return o;
}

void require_python_exists(const CommonOptions& o) {
  if (o.probe.python.empty() || !o.bundle.empty() || !o.facts_file.empty()) return;
  std::error_code ec;
  if (std::filesystem::weakly_canonical(o.root, ec) != "/" || ec) return;
  // lstat-free: a dangling link names no interpreter either.
  if (!std::filesystem::exists(o.probe.python, ec))
    throw InputError(fmt::format("--python {}: no such file (give the path of the interpreter "
                                 "whose environment to judge, e.g. ~/venv/bin/python)",
                                 o.probe.python));
  if (std::filesystem::is_directory(o.probe.python, ec))
    throw InputError(fmt::format("--python {}: is a directory, not an interpreter (e.g. {}/bin/"
                                 "python)",
                                 o.probe.python, o.probe.python));
}

FailOn parse_fail_on(const std::string& s) {
  if (s == "info") return FailOn::info;
  if (s == "warning") return FailOn::warning;
  if (s == "never") return FailOn::never;
  return FailOn::error;
}

void write_output(const std::string& path, const std::string& text) {
  if (path.empty() || path == "-") {
    write_stdout(text);
    return;
  }
  write_output_file(path, text);
}

void write_text_output(const std::string& path, const std::string& text) {
  write_output(path, terminal_safe(text, /*keep_sgr=*/true));
}

std::size_t terminal_width(bool to_stdout) {
  constexpr std::size_t kMin = 40;
  constexpr std::size_t kMax = 1000;
  constexpr std::size_t kDefault = 100;
  winsize ws{};
  if (to_stdout && ::ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
    return std::clamp<std::size_t>(ws.ws_col, kMin, kMax);
  const char* env = std::getenv("COLUMNS");
  if (env != nullptr && *env != '\0') {
    std::size_t n = 0;
    const char* end = env + std::strlen(env);
    const auto [p, ec] = std::from_chars(env, end, n);
    if (ec == std::errc() && p == end && n > 0) return std::clamp(n, kMin, kMax);
  }
  return kDefault;
}

bool use_color(const std::string& mode) {
  if (mode == "always") return true;
  if (mode == "never") return false;
  const char* no_color = std::getenv("NO_COLOR");
  if (no_color != nullptr && *no_color != '\0') return false;
  const char* term = std::getenv("TERM");
  if (term != nullptr && std::string_view(term) == "dumb") return false;
  return ::isatty(STDOUT_FILENO) != 0;
}

} // namespace halo::cli

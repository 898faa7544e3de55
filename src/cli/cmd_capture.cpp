// halo-doctor capture: writes the files the probes read, device-node ownership, the runtime
// probes' facts and a manifest into one .tar.gz for a bug report; `check --bundle` replays it.
#include "commands.hpp"
#include "common.hpp"

#include <halo/bundle.hpp>
#include <halo/error.hpp>
#include <halo/result.hpp>
#include <halo/version.hpp>

#include <fmt/format.h>

#include <iostream>
#include <memory>

namespace halo::cli {

namespace {
struct CaptureCliOptions {
  CommonOptions common;
  std::string output;
  bool no_redact = false;
};

int run(const CaptureCliOptions& o) {
  const ProbeRegistry reg = builtin_probes();
  const FactSet facts = gather(o.common, reg);
  const Root root(o.common.root);
  CaptureOptions opt;
  opt.redact = !o.no_redact;
  opt.tool_version = fmt::format("{} (git {})", kVersion, kGitRevision);
  const CaptureManifest m = write_capture_bundle(reg, root, facts, opt, o.output);
  std::cout << fmt::format(
      "{}: {} files, {} links, {} missing, {} denied, {} skipped; {}\n", o.output, m.files.size(),
      m.links.size(), m.missing.size(), m.denied.size(), m.skipped.size(),
      opt.redact ? fmt::format("{} redactions (--no-redact keeps them)", m.redacted.size())
                 : std::string("not redacted"));
  return exit_code::ok;
}
} // namespace

Runner add_capture_command(CLI::App& app) {
  auto o = std::make_shared<CaptureCliOptions>();
  auto* sub = app.add_subcommand(
      "capture", "Write the files the probes read, device-node modes, runtime facts and a manifest "
                 "to a .tar.gz for a bug report (host name, user names and serials redacted); "
                 "replay it with `check --bundle FILE`");
  sub->add_option("-o,--output", o->output, "Bundle to write (FILE.tar.gz, written atomically)")
      ->required();
  sub->add_option("--root", o->common.root,
                  "Capture the system under DIR instead of / (a fixture or a mounted host)");
  sub->add_flag("--no-redact", o->no_redact,
                "Keep host name, user names and serial numbers as they are");
  sub->add_flag("--no-runtime", o->common.no_runtime, "Do not load ROCr or libdrm (sysfs only)");
  sub->add_option("--hsa-library", o->common.hsa_library,
                  "ROCr library (libhsa-runtime64.so.1) to load first");
  sub->add_option("--runtime-timeout", o->common.runtime_timeout_s,
                  "Seconds the ROCr queries may take before they count as hung")
      ->check(CLI::Range(0.1, 600.0));
  return [sub, o]() { return *sub ? run(*o) : -1; };
}

} // namespace halo::cli

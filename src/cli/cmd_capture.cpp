// SPDX-License-Identifier: MIT
// halo-doctor capture: writes the files the probes read, device-node ownership, the runtime
// probes' facts and a manifest into one .tar.gz for a bug report; `check --bundle` replays it.
#include "commands.hpp"
#include "common.hpp"

#include <halo/bundle.hpp>
#include <halo/error.hpp>
#include <halo/io.hpp>
#include <halo/result.hpp>
#include <halo/version.hpp>

#include <fmt/format.h>

#include <unistd.h>

#include <array>
#include <cstdlib>
#include <memory>

namespace halo::cli {

namespace {
struct CaptureCliOptions {
  CommonOptions common;
  std::string output;
  bool no_redact = false;
};

/// The bundle path with `%N` replaced by the Slurm node name ($SLURMD_NODENAME, which slurmd sets
/// for every task of a job step; else the short host name), `%h` by the short host name and `%%`
/// by `%`, so one `srun --nodes=N --ntasks-per-node=1 halo-doctor capture -o DIR/%N.tar.gz`
/// writes one bundle per node into a shared directory (docs/slurm.md).
std::string expand_output(const std::string& pattern) {
  std::array<char, 256> buf = {};
  std::string host =
      ::gethostname(buf.data(), buf.size() - 1) == 0 ? std::string(buf.data()) : "localhost";
  host = host.substr(0, host.find('.'));
  const char* slurm_node = std::getenv("SLURMD_NODENAME");
  const std::string node = slurm_node != nullptr && *slurm_node != '\0' ? slurm_node : host;
  std::string out;
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] != '%' || i + 1 == pattern.size()) {
      out += pattern[i];
      continue;
    }
    const char c = pattern[++i];
    if (c == 'N')
      out += node;
    else if (c == 'h')
      out += host;
    else if (c == '%')
      out += '%';
    else
      throw InputError(fmt::format("-o {}: unknown %{} (use %N, %h or %%)", pattern, c));
  }
  if (node.find('/') != std::string::npos || host.find('/') != std::string::npos)
    throw InputError(fmt::format("-o {}: the node name holds a '/'", pattern));
  return out;
}

int run(const CaptureCliOptions& opts) {
  CaptureCliOptions o = opts;
  o.output = expand_output(o.output);
  const ProbeRegistry& reg = probe_set();
  const FactSet facts = gather_facts(doctor_options(o.common), reg);
  const Root root(o.common.root);
  CaptureOptions opt;
  opt.redact = !o.no_redact;
  opt.tool_version = fmt::format("{} (git {})", kVersion, kGitRevision);
  if (o.no_redact)
    write_stderr_text(
        "halo-doctor capture: warning: --no-redact keeps the host name, user names (in "
        "/etc/passwd, /etc/group, home directories and the kept environment variables), "
        "serial numbers and UUIDs (DMI, PCI, NVMe, GPU unique_id, ROCr GPU UUIDs), the "
        "machine-id and the host names on the kernel command line as they are: share the "
        "bundle only with whom you would tell those. Secrets are "
        "still not stored (environment variables no probe reads, URL credentials, "
        "container secret mounts).\n");
  const CaptureManifest m = write_capture_bundle(reg, root, facts, opt, o.output);
  write_stdout_text(fmt::format(
      "{}: {} files, {} links, {} missing, {} denied, {} skipped; {}\n", o.output, m.files.size(),
      m.links.size(), m.missing.size(), m.denied.size(), m.skipped.size(),
      opt.redact
          ? fmt::format("{} redactions (.halo/manifest.json lists them)", m.redacted.size())
          : fmt::format("identities not redacted; {} redactions of secrets", m.redacted.size())));
  return exit_code::ok;
}
} // namespace

Runner add_capture_command(CLI::App& app) {
  auto o = std::make_shared<CaptureCliOptions>();
  auto* sub = app.add_subcommand(
      "capture",
      "Write the files the probes read, device-node modes, runtime facts and a manifest to a "
      ".tar.gz for a bug report; replay it with `check --bundle FILE`. Never stored: the values of "
      "environment variables no probe reads (kept as NAME=<dropped>; tokens such as HF_TOKEN go), "
      "credentials in URLs (scheme://<masked>@host), container secret mounts. Replaced unless "
      "--no-redact: the host name, user names (user1, ...), serial numbers and UUIDs, the "
      "machine-id (stable pseudonyms, the same as `check --format markdown` uses). "
      "docs/security.md");
  // The options are built only when this command is the one parsed (commands.hpp).
  sub->preparse_callback([sub, o](std::size_t) {
    sub->add_option("-o,--output", o->output,
                    "Bundle to write (FILE.tar.gz, written atomically); %N: the Slurm node name "
                    "($SLURMD_NODENAME, else the short host name), %h: the short host name")
        ->required()
        ->option_text("FILE.tar.gz");
    sub->add_option("--root", o->common.root,
                    "Capture the system under DIR instead of / (a fixture or a mounted host)")
        ->option_text("DIR");
    sub->add_flag(
        "--no-redact", o->no_redact,
        "Keep the host name, user names, serial numbers, UUIDs and the machine-id as they are "
        "(a warning on stderr says so); secrets are still not stored");
    sub->add_flag("--no-runtime", o->common.probe.no_runtime,
                  "Do not load ROCr or libdrm (sysfs only)");
    sub->add_option("--hsa-library", o->common.probe.hsa_library,
                    "ROCr library (libhsa-runtime64.so.1) to load first")
        ->option_text("FILE");
    sub->add_option("--runtime-timeout", o->common.probe.runtime_timeout_s,
                    "Seconds the ROCr queries may take before they count as hung")
        ->check(finite_number())
        ->check(CLI::Range(0.1, 600.0))
        ->option_text("SECONDS");
  });
  return [sub, o]() { return *sub ? run(*o) : -1; };
}

} // namespace halo::cli

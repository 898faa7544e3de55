// SPDX-License-Identifier: MIT
// The halo-doctor command line: registers the subcommands (src/cli/cmd_*.cpp) and maps errors
// to exit codes. Exceptions stop here.
#include "commands.hpp"

#include <halo/error.hpp>
#include <halo/io.hpp>
#include <halo/result.hpp>
#include <halo/version.hpp>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <spdlog/sinks/base_sink.h>
#include <spdlog/spdlog.h>

#include <memory>
#include <mutex>
#include <sstream>
#include <vector>

namespace {
/// The log's one sink: each formatted line goes to stderr through halo::write_stderr_text, so an
/// error message quoting a file name or a fact never carries a raw escape sequence (issue 32).
class TerminalSafeStderrSink final : public spdlog::sinks::base_sink<std::mutex> {
protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    spdlog::memory_buf_t buf;
    formatter_->format(msg, buf);
    halo::write_stderr_text(std::string_view(buf.data(), buf.size()));
  }
  void flush_() override {}
};

/// CLI11's messages (usage errors quote the arguments given) through the same sanitiser.
int exit_with(const CLI::App& app, const CLI::Error& e) {
  std::ostringstream out;
  std::ostringstream err;
  const int rc = app.exit(e, out, err);
  halo::write_stdout_text(out.str());
  halo::write_stderr_text(err.str());
  return rc;
}
} // namespace

int main(int argc, char** argv) {
  spdlog::set_default_logger(
      std::make_shared<spdlog::logger>("halo", std::make_shared<TerminalSafeStderrSink>()));
  spdlog::set_pattern("halo-doctor: %l: %v");
  spdlog::set_level(spdlog::level::warn);

  CLI::App app{"halo-doctor: preflight and configuration doctor for AMD GPU (ROCm) machines that "
               "train ML models"};
  app.set_version_flag("--version",
                       fmt::format("halo-doctor {} (git {})", halo::kVersion, halo::kGitRevision));
  app.require_subcommand(1);
  bool debug = false;
  app.add_flag("--debug", debug, "Log probe timings and details to stderr");
  std::vector<halo::cli::Runner> runners = {
      halo::cli::add_check_command(app), halo::cli::add_facts_command(app),
      halo::cli::add_rules_command(app), halo::cli::add_explain_command(app),
      halo::cli::add_bench_command(app), halo::cli::add_capture_command(app),
      halo::cli::add_fix_command(app),   halo::cli::add_slurm_command(app),
      halo::cli::add_plan_command(app),  halo::cli::add_fleet_command(app),
  };

  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {
    return exit_with(app, e);
  } catch (const CLI::ParseError& e) {
    exit_with(app, e);
    return halo::exit_code::usage;
  }
  if (debug) spdlog::set_level(spdlog::level::debug);

  try {
    for (const auto& run : runners) {
      const int rc = run();
      if (rc >= 0) return rc;
    }
  } catch (const halo::InputError& e) {
    spdlog::error("{}", e.what());
    return halo::exit_code::usage;
  } catch (const halo::OutputError& e) {
    spdlog::error("{}", e.what());
    return halo::exit_code::internal;
  } catch (const std::exception& e) {
    spdlog::critical("internal error: {}", e.what());
    return halo::exit_code::internal;
  }
  return halo::exit_code::usage;
}

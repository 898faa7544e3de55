// SPDX-License-Identifier: MIT
// The halo-doctor command line: registers the subcommands (src/cli/cmd_*.cpp) and maps errors
// to exit codes. Exceptions stop here.
#include "commands.hpp"

#include <halo/error.hpp>
#include <halo/result.hpp>
#include <halo/version.hpp>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <vector>

int main(int argc, char** argv) {
  spdlog::set_default_logger(spdlog::stderr_color_mt("halo"));
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
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
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

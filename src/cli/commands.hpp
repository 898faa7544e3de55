// SPDX-License-Identifier: MIT
// The subcommands. Each lives in its own src/cli/cmd_*.cpp: `add_*` registers it with CLI11 and
// returns a function that runs it after parsing.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>

namespace halo::cli {

/// Runs a parsed subcommand and returns the process exit code.
using Runner = std::function<int()>;

Runner add_check_command(CLI::App& app);   // src/cli/cmd_check.cpp
Runner add_facts_command(CLI::App& app);   // src/cli/cmd_facts.cpp
Runner add_rules_command(CLI::App& app);   // src/cli/cmd_rules.cpp (rules, explain)
Runner add_explain_command(CLI::App& app); // src/cli/cmd_rules.cpp
Runner add_bench_command(CLI::App& app);   // src/cli/cmd_bench.cpp
Runner add_capture_command(CLI::App& app); // src/cli/cmd_capture.cpp
Runner add_fix_command(CLI::App& app);     // src/cli/cmd_fix.cpp
Runner add_slurm_command(CLI::App& app);   // src/cli/cmd_slurm.cpp
Runner add_plan_command(CLI::App& app);    // src/cli/cmd_plan.cpp
Runner add_fleet_command(CLI::App& app);   // src/cli/cmd_fleet.cpp

} // namespace halo::cli

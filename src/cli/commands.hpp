// SPDX-License-Identifier: MIT
// The subcommands. Each lives in its own src/cli/cmd_*.cpp: `add_*` registers it with CLI11 and
// returns a function that runs it after parsing. A subcommand's options are added in its CLI11
// `preparse_callback`, which runs when the subcommand itself is parsed (before its own arguments
// and its --help), so a run builds the options of the command it runs only (issue 33: building
// every command's options was 3 M instructions of a check). A runner reads an option's count
// (`get_option`) only after its subcommand was parsed.
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

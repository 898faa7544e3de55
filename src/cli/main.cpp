// SPDX-License-Identifier: MIT
// The halo-doctor command line: registers the subcommands (src/cli/cmd_*.cpp) and maps errors
// to exit codes. Exceptions stop here.
#include "commands.hpp"
#include "common.hpp"

#include <halo/checks.hpp>
#include <halo/error.hpp>
#include <halo/io.hpp>
#include <halo/result.hpp>
#include <halo/version.hpp>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <spdlog/sinks/base_sink.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <string_view>
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

/// --help names what an option's value means ("--reserve GiB", "--root DIR": the option_text
/// each command sets, src/cli/common.cpp meaning()) instead of CLI11's type and validator names
/// ("FLOAT:FINITE:FLOAT in [0.1 - 600]"); an option without one shows its choices ("a|b|c") or
/// VALUE, N, NUMBER.
class ValueFormatter final : public CLI::Formatter {
public:
  std::string make_option_opts(const CLI::Option* opt) const override {
    // A flag (CLI11 gives it no type name) takes no value.
    if (opt->get_type_size() == 0 ||
        (opt->get_option_text().empty() && opt->get_type_name().empty()))
      return {};
    std::string name = opt->get_option_text().empty() ? derived_name(opt) : opt->get_option_text();
    if (!opt->get_default_str().empty() && opt->get_default_str() != "\"\"")
      name += fmt::format(" (default {})", opt->get_default_str());
    return " " + name;
  }

private:
  static std::string derived_name(const CLI::Option* opt) {
    std::string name = "VALUE";
    const std::string type = opt->get_type_name();
    if (const auto open = type.find('{'); open != std::string::npos) {
      name = type.substr(open + 1, type.find('}', open) - open - 1);
      std::replace(name.begin(), name.end(), ',', '|');
    } else if (type.starts_with("INT") || type.starts_with("UINT")) {
      name = "N";
    } else if (type.starts_with("FLOAT")) {
      name = "NUMBER";
    }
    if (opt->get_expected_max() == CLI::detail::expected_max_vector_size) name += " ...";
    return name;
  }
};

/// The first word of a description: up to its first ". ", "? ", ": " or "; " outside
/// parentheses, for the one-line-per-command list.
std::string first_clause(const std::string& s) {
  int depth = 0;
  for (std::size_t i = 0; i + 1 < s.size(); ++i) {
    if (s[i] == '(') ++depth;
    if (s[i] == ')' && depth > 0) --depth;
    if (depth == 0 && s[i + 1] == ' ' && std::string_view(".?:;").find(s[i]) != std::string::npos)
      return s.substr(0, s[i] == '?' ? i + 1 : i);
  }
  return s;
}

/// The commands, one line each: what a bare `halo-doctor`, `halo-doctor help` and a mistyped
/// command print.
std::string command_list(const CLI::App& app) {
  std::string out = "usage: halo-doctor [--debug] COMMAND [OPTIONS]   (halo-doctor COMMAND --help: "
                    "its options)\n\ncommands:\n";
  for (const CLI::App* sub : app.get_subcommands({}))
    out += fmt::format("  {:<9} {}\n", sub->get_name(), first_clause(sub->get_description()));
  return out;
}

/// Levenshtein distance: how many letters to insert, delete or change to turn `a` into `b`.
std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j)
    row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diag = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

/// The command a mistyped word most likely meant (at most two edits away, or a prefix of it);
/// empty when none is close.
std::string closest_command(const CLI::App& app, std::string_view word) {
  std::string best;
  std::size_t best_d = 3;
  for (const CLI::App* sub : app.get_subcommands({})) {
    const std::string& name = sub->get_name();
    const std::size_t d = name.starts_with(word) && !word.empty() ? 1 : edit_distance(word, name);
    if (d < best_d) {
      best_d = d;
      best = name;
    }
  }
  return best;
}

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

namespace halo::cli {

// The top of the program assembles the probe set (issue 42 item 4): the one place that names
// checks/, built on first use (a `rules` or `--help` run never builds it).
const ProbeRegistry& probe_set() {
  static const ProbeRegistry probes = builtin_probes();
  return probes;
}

} // namespace halo::cli

int main(int argc, char** argv) {
  spdlog::set_default_logger(
      std::make_shared<spdlog::logger>("halo", std::make_shared<TerminalSafeStderrSink>()));
  spdlog::set_pattern("halo-doctor: %l: %v");
  spdlog::set_level(spdlog::level::warn);

  CLI::App app{"halo-doctor: preflight and configuration doctor for AMD GPU (ROCm) machines that "
               "train ML models"};
  app.set_version_flag("--version",
                       fmt::format("halo-doctor {} (git {})", halo::kVersion, halo::kGitRevision));
  app.formatter(std::make_shared<ValueFormatter>());
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

  // The command word: the first argument that is not --debug. None, `help` or an unknown word
  // get the list of commands (CLI11 alone says only "A subcommand is required"); an option
  // (--help, --version, a mistake) is CLI11's to answer.
  std::vector<std::string> args(argv, argv + argc);
  auto word = std::find_if(args.begin() + 1, args.end(),
                           [](const std::string& a) { return a != "--debug"; });
  if (word == args.end()) {
    halo::write_stderr_text("halo-doctor: a command is required\n" + command_list(app));
    return halo::exit_code::usage;
  }
  if (*word == "help") {
    // `halo-doctor help CMD` is `halo-doctor CMD --help`.
    if (word + 1 == args.end()) {
      halo::write_stdout_text(command_list(app));
      return halo::exit_code::ok;
    }
    word = args.erase(word);
    args.emplace_back("--help");
    word = std::find_if(args.begin() + 1, args.end(),
                        [](const std::string& a) { return a != "--debug"; });
  }
  const auto subs = app.get_subcommands({});
  const bool known = std::any_of(subs.begin(), subs.end(),
                                 [&](const CLI::App* sub) { return sub->get_name() == *word; });
  if (!word->starts_with("-") && !known) {
    const std::string near = closest_command(app, *word);
    halo::write_stderr_text(fmt::format(
        "halo-doctor: unknown command '{}'{}\n{}", *word,
        near.empty() ? std::string() : fmt::format("; did you mean {}?", near), command_list(app)));
    return halo::exit_code::usage;
  }
  std::vector<char*> argp;
  argp.reserve(args.size());
  for (auto& a : args)
    argp.push_back(a.data());

  try {
    app.parse(static_cast<int>(argp.size()), argp.data());
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

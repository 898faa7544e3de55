// SPDX-License-Identifier: MIT
// Judging modprobe.d install commands as kmod and /bin/sh run them; see kmod_install.hpp.
// Sources: kmod libkmod/libkmod-module.c (module_do_install_commands: "$CMDLINE_OPTS"
// replaced textually before the shell sees the command; command_do: system(cmd) with
// MODPROBE_MODULE set, a non-zero WEXITSTATUS is -EINVAL), kmod tools/modprobe.c (cmdopts_s
// "arw:RibfDcnC:d:S:sqvVh" and the long options, parsed by getopt_long), kmod tools/insmod.c,
// modprobe.d(5), and the POSIX Shell Command Language (2.2 quoting, 2.3 token recognition,
// 2.7 redirection, 2.9.2 pipelines, 2.9.3 lists, 2.14 exit).
#include "kmod_install.hpp"

#include "cmdline.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <optional>
#include <vector>

namespace halo::probes {
namespace {

/// A path the shell may take: whether the module is loaded (0 no, 1 yes, 2 cannot tell), the
/// last exit status (0 or not), and whether `exit` ended the shell.
struct Path {
  int loaded = 0;
  bool ok = true;
  bool exited = false;
  bool operator==(const Path&) const = default;
};
constexpr std::size_t kMaxPaths = 64;
constexpr int kMaxDepth = 4; // sh -c "sh -c '...'" nesting

struct Token {
  enum Kind { word, op } kind = word;
  std::string text;
};

struct Unknown {
  std::string why;
};

/// POSIX 2.3 token recognition over one command string, with quote removal and the two
/// expansions kmod gives the command. nullopt with `why` set when the string needs more shell
/// than this (command substitution, other parameters, here-documents, subshells).
std::optional<std::vector<Token>> tokenize(std::string_view s, std::string_view module,
                                           std::string& why) {
  std::vector<Token> out;
  std::string cur;
  bool in_word = false;
  bool cur_quoted = false;
  bool skip_next_word = false; // the target of a redirection
  auto finish = [&] {
    if (!in_word) return;
    if (skip_next_word) {
      skip_next_word = false;
    } else {
      out.push_back({Token::word, cur});
    }
    cur.clear();
    in_word = false;
    cur_quoted = false;
  };
  auto expand = [&](std::size_t& i) -> bool { // s[i] == '$'
    static constexpr std::string_view kVar = "MODPROBE_MODULE";
    std::string_view rest = s.substr(i + 1);
    if (rest.starts_with(kVar) &&
        (rest.size() == kVar.size() ||
         !(std::isalnum(static_cast<unsigned char>(rest[kVar.size()])) != 0 ||
           rest[kVar.size()] == '_'))) {
      cur += module;
      i += kVar.size();
      in_word = true;
      return true;
    }
    if (rest.starts_with("{MODPROBE_MODULE}")) {
      cur += module;
      i += kVar.size() + 2;
      in_word = true;
      return true;
    }
    if (rest.empty() || rest[0] == ' ' || rest[0] == '\t' || rest[0] == '"') {
      cur.push_back('$');
      in_word = true;
      return true;
    }
    why = fmt::format("it expands `${}`, which the doctor cannot know",
                      rest.substr(0, std::min<std::size_t>(rest.size(), 16)));
    return false;
  };
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '\\') {
      if (i + 1 < s.size()) {
        if (s[i + 1] != '\n') {
          cur.push_back(s[i + 1]);
          in_word = true;
        }
        ++i;
      }
      continue;
    }
    if (c == '\'') {
      const auto end = s.find('\'', i + 1);
      if (end == std::string_view::npos) {
        why = "an unterminated quote: /bin/sh refuses it (syntax error, exit status 2)";
        return std::nullopt;
      }
      cur += s.substr(i + 1, end - i - 1);
      in_word = cur_quoted = true;
      i = end;
      continue;
    }
    if (c == '"') {
      std::size_t j = i + 1;
      for (; j < s.size() && s[j] != '"'; ++j) {
        if (s[j] == '\\' && j + 1 < s.size() &&
            (s[j + 1] == '$' || s[j + 1] == '`' || s[j + 1] == '"' || s[j + 1] == '\\')) {
          cur.push_back(s[++j]);
        } else if (s[j] == '\\' && j + 1 < s.size() && s[j + 1] == '\n') {
          ++j;
        } else if (s[j] == '$') {
          if (!expand(j)) return std::nullopt;
        } else if (s[j] == '`') {
          why = "it runs a command substitution (`...`)";
          return std::nullopt;
        } else {
          cur.push_back(s[j]);
        }
      }
      if (j >= s.size()) {
        why = "an unterminated quote: /bin/sh refuses it (syntax error, exit status 2)";
        return std::nullopt;
      }
      in_word = cur_quoted = true;
      i = j;
      continue;
    }
    if (c == '$') {
      if (!expand(i)) return std::nullopt;
      continue;
    }
    if (c == '`') {
      why = "it runs a command substitution (`...`)";
      return std::nullopt;
    }
    if (c == ' ' || c == '\t' || c == '\n') {
      const bool nl = c == '\n';
      finish();
      if (nl) out.push_back({Token::op, ";"});
      continue;
    }
    if (c == '#' && !in_word) { // 2.3 rule 10: a comment to the end of the line
      const auto nl = s.find('\n', i);
      if (nl == std::string_view::npos) break;
      i = nl - 1;
      continue;
    }
    if (c == ';' || c == '&' || c == '|') {
      finish();
      std::string op(1, c);
      if (i + 1 < s.size() && s[i + 1] == c && c != ';') {
        op.push_back(c);
        ++i;
      } else if (c == ';' && i + 1 < s.size() && s[i + 1] == ';') {
        why = "it uses `;;` (a case statement)";
        return std::nullopt;
      }
      out.push_back({Token::op, op});
      continue;
    }
    if (c == '<' || c == '>') {
      // An all-digit unquoted word just before the operator is its file descriptor (2.7).
      if (in_word && !cur_quoted &&
          std::all_of(cur.begin(), cur.end(), [](char d) { return d >= '0' && d <= '9'; })) {
        cur.clear();
        in_word = false;
      } else {
        finish();
      }
      if (c == '<' && i + 1 < s.size() && s[i + 1] == '<') {
        why = "it uses a here-document";
        return std::nullopt;
      }
      if (i + 1 < s.size() && (s[i + 1] == '>' || s[i + 1] == '&' || s[i + 1] == '|')) ++i;
      skip_next_word = true;
      continue;
    }
    if (c == '(' || c == ')') {
      why = "it uses a subshell or function `( )`";
      return std::nullopt;
    }
    cur.push_back(c);
    in_word = true;
  }
  finish();
  if (skip_next_word) {
    why = "a redirection without a target: /bin/sh refuses it (syntax error)";
    return std::nullopt;
  }
  return out;
}

std::string base_name(std::string_view w) {
  const auto slash = w.rfind('/');
  return std::string(slash == std::string_view::npos ? w : w.substr(slash + 1));
}

/// A module name as kmod compares it: '-' and '_' are one (modname_normalize).
std::string normalise(std::string_view name) {
  std::string n(name);
  std::replace(n.begin(), n.end(), '-', '_');
  return n;
}

/// tools/modprobe.c's options: the letter each long option stands for, and which take an
/// argument. getopt_long accepts an unambiguous prefix, and a prefix shared only by options
/// with the same letter (--ignore- is --ignore-install and --ignore-remove, both 'i').
struct LongOpt {
  std::string_view name;
  char val;
  bool arg;
};
constexpr std::array<LongOpt, 27> kLong = {{
    {"all", 'a', false},
    {"remove", 'r', false},
    {"remove-dependencies", '5', false},
    {"remove-holders", '5', false},
    {"wait", 'w', true},
    {"resolve-alias", 'R', false},
    {"first-time", '3', false},
    {"ignore-install", 'i', false},
    {"ignore-remove", 'i', false},
    {"use-blacklist", 'b', false},
    {"force", 'f', false},
    {"force-modversion", '2', false},
    {"force-vermagic", '1', false},
    {"show-depends", 'D', false},
    {"showconfig", 'c', false},
    {"show-config", 'c', false},
    {"show-modversions", '4', false},
    {"dump-modversions", '4', false},
    {"show-exports", '6', false},
    {"dry-run", 'n', false},
    {"show", 'n', false},
    {"config", 'C', true},
    {"dirname", 'd', true},
    {"set-version", 'S', true},
    {"syslog", 's', false},
    {"quiet", 'q', false},
    {"verbose", 'v', false},
}};
constexpr std::string_view kShortWithArg = "wCdS";
constexpr std::string_view kShort = "arwRibfDcnCdSsqvVh";

enum class LoadKind { none, loads, recursion, other_module, bad_usage };

/// What `modprobe ARGS` does for `module`: load it, run its install line again (no -i), load
/// other modules only, or nothing at all.
LoadKind modprobe_effect(const std::vector<std::string>& args, std::string_view module) {
  bool all = false;
  bool ignore_install = false;
  bool no_load = false;
  std::vector<std::string> operands;
  bool options_end = false;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (options_end || a.size() < 2 || a[0] != '-') {
      operands.push_back(a);
      continue;
    }
    if (a == "--") {
      options_end = true;
      continue;
    }
    char val = 0;
    bool takes_arg = false;
    bool inline_arg = false;
    if (a[1] == '-') {
      std::string_view name = std::string_view(a).substr(2);
      const auto eq = name.find('=');
      inline_arg = eq != std::string_view::npos;
      name = name.substr(0, eq);
      const LongOpt* hit = nullptr;
      bool ambiguous = false;
      for (const auto& o : kLong) {
        if (o.name == name) {
          hit = &o;
          ambiguous = false;
          break;
        }
        if (o.name.starts_with(name)) {
          if (hit != nullptr && hit->val != o.val) ambiguous = true;
          if (hit == nullptr) hit = &o;
        }
      }
      if (hit == nullptr || ambiguous) return LoadKind::bad_usage; // getopt: error, exit 1
      val = hit->val;
      takes_arg = hit->arg;
      if (takes_arg && !inline_arg && ++i >= args.size()) return LoadKind::bad_usage;
      if (!takes_arg && inline_arg) return LoadKind::bad_usage;
    } else {
      for (std::size_t k = 1; k < a.size(); ++k) {
        const char o = a[k];
        if (kShort.find(o) == std::string_view::npos) return LoadKind::bad_usage;
        if (kShortWithArg.find(o) != std::string_view::npos) {
          // The argument is the rest of this word, else the next word (getopt: missing
          // argument, exit 1, when there is none).
          if (k + 1 == a.size() && ++i >= args.size()) return LoadKind::bad_usage;
          break;
        }
        if (o == 'a') all = true;
        if (o == 'i') ignore_install = true;
        if (std::string_view("nDrcRVh").find(o) != std::string_view::npos) no_load = true;
      }
      continue;
    }
    if (val == 'a') all = true;
    if (val == 'i') ignore_install = true;
    // --remove*, --show*, --dry-run, --resolve-alias, --version, --help load nothing.
    if (std::string_view("nDrcRVh456").find(val) != std::string_view::npos) no_load = true;
  }
  if (no_load) return LoadKind::none;
  if (operands.empty()) return LoadKind::bad_usage;
  const std::size_t n = all ? operands.size() : 1;
  for (std::size_t k = 0; k < n; ++k) {
    if (normalise(operands[k]) == module)
      return ignore_install ? LoadKind::loads : LoadKind::recursion;
  }
  return LoadKind::other_module;
}

/// insmod FILE [params]: the module is the file's name less .ko and a compression suffix.
LoadKind insmod_effect(const std::vector<std::string>& args, std::string_view module) {
  for (const auto& a : args) {
    if (!a.empty() && a[0] == '-') continue;
    std::string b = base_name(a);
    for (std::string_view suf : {".xz", ".zst", ".gz"})
      if (b.ends_with(suf)) b.resize(b.size() - suf.size());
    if (!b.ends_with(".ko")) return LoadKind::bad_usage;
    b.resize(b.size() - 3);
    return normalise(b) == module ? LoadKind::loads : LoadKind::other_module;
  }
  return LoadKind::bad_usage;
}

class Judge {
public:
  explicit Judge(std::string_view module) : module_(module) {}

  /// The paths after running `script` from `in`; nullopt when it cannot be followed.
  std::optional<std::vector<Path>> run_script(std::string_view script, int depth) {
    if (depth > kMaxDepth) {
      why_ = "`sh -c` nested too deeply to follow";
      return std::nullopt;
    }
    auto tokens = tokenize(script, module_, why_);
    if (!tokens) return std::nullopt;
    return run_list(*tokens, {Path{}}, depth);
  }

  /// Why the command could not be followed (after run_script returned std::nullopt).
  [[nodiscard]] const std::string& why() const { return why_; }
  /// What loads or loops, one sentence per simple command that matters.
  [[nodiscard]] const std::vector<std::string>& notes() const { return notes_; }

private:
  std::string why_;
  std::vector<std::string> notes_;
  std::string module_;

  /// One simple command's possible outcomes (the shell's state before it is `before`).
  std::optional<std::vector<Path>> run_simple(std::vector<std::string> words, const Path& before,
                                              int depth, bool in_pipeline) {
    // Leading assignments and the prefixes that run the rest as the command.
    while (!words.empty()) {
      const std::string& w = words.front();
      const auto eq = w.find('=');
      const bool assignment = eq != std::string::npos && eq > 0 &&
                              std::all_of(w.begin(), w.begin() + static_cast<long>(eq), [](char c) {
                                return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_';
                              });
      if (assignment || w == "exec" || w == "command" || base_name(w) == "env" ||
          base_name(w) == "nohup") {
        words.erase(words.begin());
        continue;
      }
      break;
    }
    Path p = before;
    if (words.empty()) return std::vector<Path>{p};
    const std::string& w0 = words.front();
    const std::string prog = base_name(w0);
    std::vector<std::string> args(words.begin() + 1, words.end());
    static constexpr std::array kReserved = {"if",   "then",  "else",  "elif", "fi",
                                             "for",  "while", "until", "do",   "done",
                                             "case", "esac",  "{",     "}",    "function"};
    if (std::find(kReserved.begin(), kReserved.end(), w0) != kReserved.end()) {
      why_ = fmt::format("it uses the shell's `{}`", w0);
      return std::nullopt;
    }
    if (prog == "true" || w0 == ":" || prog == "echo" || prog == "printf" || prog == "logger" ||
        prog == "sleep") {
      p.ok = true;
      return std::vector<Path>{p};
    }
    if (prog == "false") {
      p.ok = false;
      return std::vector<Path>{p};
    }
    if (w0 == "exit") {
      // exit [n]: the status is n (default: the last command's), and the shell ends; inside a
      // pipeline only that element's subshell ends.
      if (!args.empty()) {
        const std::string& n = args[0];
        if (n.empty() ||
            !std::all_of(n.begin(), n.end(), [](char c) { return c >= '0' && c <= '9'; })) {
          why_ = fmt::format("`exit {}`", n);
          return std::nullopt;
        }
        unsigned status = 0; // the shell keeps the low 8 bits
        for (const char d : n)
          status = (status * 10 + static_cast<unsigned>(d - '0')) % 256;
        p.ok = status == 0;
      }
      if (!in_pipeline) p.exited = true;
      return std::vector<Path>{p};
    }
    if ((prog == "sh" || prog == "bash" || prog == "dash") && !args.empty()) {
      // sh [-e...] -c STRING: judge STRING in a new shell (its exit ends only that shell).
      std::size_t k = 0;
      bool dash_c = false;
      for (; k < args.size(); ++k) {
        const std::string& a = args[k];
        if (a.size() < 2 || a[0] != '-') break;
        if (a.find('c') != std::string::npos) dash_c = true;
        if (a.find('e') != std::string::npos && a[0] == '-') {
          why_ = "it runs `sh -e`";
          return std::nullopt;
        }
      }
      if (!dash_c || k >= args.size()) {
        why_ = fmt::format("it runs a shell script (`{}`)", w0);
        return std::nullopt;
      }
      auto inner = run_script(args[k], depth + 1);
      if (!inner) return std::nullopt;
      std::vector<Path> out;
      for (Path q : *inner) {
        q.exited = false;
        if (before.loaded == 1 && q.loaded == 0) q.loaded = 1;
        if (before.loaded == 2 && q.loaded == 0) q.loaded = 2;
        out.push_back(q);
      }
      return out;
    }
    LoadKind kind = LoadKind::bad_usage;
    if (prog == "modprobe") {
      kind = modprobe_effect(args, module_);
    } else if (prog == "insmod") {
      kind = insmod_effect(args, module_);
    } else {
      why_ = fmt::format("it runs `{}`, which the doctor cannot follow", w0);
      return std::nullopt;
    }
    switch (kind) {
    case LoadKind::loads:
      p.loaded = 1;
      p.ok = true;
      notes_.push_back(fmt::format("`{}` loads {}", fmt::join(words, " "), module_));
      return std::vector<Path>{p};
    case LoadKind::recursion:
      // Without --ignore-install the inner modprobe runs this same install line again, and so
      // on: modprobe.d(5), "Note the --ignore-install, which stops the second modprobe from
      // running the same install command again". Nothing ever inserts the module.
      p.ok = false;
      notes_.push_back(fmt::format("`{}` has no --ignore-install: it runs this install line "
                                   "again, endlessly, and never loads {}",
                                   fmt::join(words, " "), module_));
      return std::vector<Path>{p};
    case LoadKind::none:
      p.ok = true;
      return std::vector<Path>{p};
    case LoadKind::bad_usage:
      p.ok = false; // modprobe/insmod print their usage and exit 1
      return std::vector<Path>{p};
    case LoadKind::other_module: {
      // Another module: it may or may not load; both exit statuses are possible.
      Path fail = p;
      fail.ok = false;
      p.ok = true;
      return std::vector<Path>{p, fail};
    }
    }
    return std::nullopt;
  }

  std::optional<std::vector<Path>> run_pipeline(const std::vector<std::vector<std::string>>& cmds,
                                                bool negate, const Path& before, int depth) {
    const bool multi = cmds.size() > 1;
    std::vector<Path> acc{before};
    for (const auto& cmd : cmds) {
      std::vector<Path> next;
      for (const Path& a : acc) {
        Path start = a;
        auto outs = run_simple(cmd, start, depth, multi);
        if (!outs) return std::nullopt;
        for (Path q : *outs) {
          q.loaded = std::max(q.loaded, a.loaded);
          if (std::find(next.begin(), next.end(), q) == next.end()) next.push_back(q);
        }
      }
      if (next.size() > kMaxPaths) {
        why_ = "too many cases to follow";
        return std::nullopt;
      }
      acc = std::move(next);
    }
    if (negate)
      for (Path& q : acc)
        q.ok = !q.ok;
    return acc;
  }

  std::optional<std::vector<Path>> run_list(const std::vector<Token>& tokens,
                                            std::vector<Path> paths, int depth) {
    // Split into and-or items: pipeline (op pipeline)*, separated by ; and &.
    std::size_t i = 0;
    std::string pending = ";"; // the operator before the next pipeline
    while (i < tokens.size()) {
      // One pipeline.
      bool negate = false;
      std::vector<std::vector<std::string>> cmds(1);
      bool any_word = false;
      while (i < tokens.size()) {
        const Token& t = tokens[i];
        if (t.kind == Token::word) {
          if (t.text == "!" && cmds.back().empty() && cmds.size() == 1 && !any_word) {
            negate = !negate;
          } else {
            cmds.back().push_back(t.text);
            any_word = true;
          }
          ++i;
          continue;
        }
        if (t.text == "|") {
          if (cmds.back().empty()) {
            why_ = "a syntax error near `|`";
            return std::nullopt;
          }
          cmds.emplace_back();
          ++i;
          continue;
        }
        break;
      }
      std::string op = i < tokens.size() ? tokens[i].text : ";";
      if (i < tokens.size()) ++i;
      if (cmds.back().empty() && (cmds.size() > 1 || negate || op == "&&" || op == "||")) {
        why_ = fmt::format("a syntax error near `{}`", op);
        return std::nullopt;
      }
      if (cmds.size() == 1 && cmds[0].empty()) {
        pending = op;
        continue;
      }
      std::vector<Path> next;
      for (const Path& p : paths) {
        const bool runs = !p.exited && (pending == ";" || pending == "&" ||
                                        (pending == "&&" && p.ok) || (pending == "||" && !p.ok));
        std::vector<Path> outs{p};
        if (runs) {
          auto r = run_pipeline(cmds, negate, p, depth);
          if (!r) return std::nullopt;
          outs = *r;
          if (op == "&") // an asynchronous list: status 0, the shell goes on
            for (Path& q : outs) {
              q.ok = true;
              q.exited = false;
            }
        }
        for (const Path& q : outs)
          if (std::find(next.begin(), next.end(), q) == next.end()) next.push_back(q);
      }
      if (next.size() > kMaxPaths) {
        why_ = "too many cases to follow";
        return std::nullopt;
      }
      paths = std::move(next);
      pending = op;
    }
    return paths;
  }
};

} // namespace

std::string_view to_string(InstallEffect e) {
  switch (e) {
  case InstallEffect::loads:
    return "loads";
  case InstallEffect::blocks:
    return "blocks";
  case InstallEffect::unknown:
    return "unknown";
  }
  return "unknown";
}

InstallJudgement judge_install_command(std::string_view command, std::string_view module) {
  // module_do_install_commands(): every "$CMDLINE_OPTS" is replaced by the options before the
  // shell runs; the options are module parameters, which never change which module loads.
  std::string cmd(command);
  for (std::size_t at = cmd.find("$CMDLINE_OPTS"); at != std::string::npos;
       at = cmd.find("$CMDLINE_OPTS"))
    cmd.erase(at, std::string_view("$CMDLINE_OPTS").size());
  Judge j(module);
  auto paths = j.run_script(cmd, 0);
  InstallJudgement r;
  if (!paths) {
    r.why = j.why();
    return r;
  }
  bool all_loaded = true;
  bool none_loaded = true;
  bool all_ready = true; // loaded and exit status 0
  bool none_ready = true;
  for (const Path& p : *paths) {
    if (p.loaded == 2) all_loaded = none_loaded = all_ready = none_ready = false;
    if (p.loaded != 1) all_loaded = false;
    if (p.loaded != 0) none_loaded = false;
    const bool ready = p.loaded == 1 && p.ok;
    if (!ready) all_ready = false;
    if (ready) none_ready = false;
  }
  r.effect = all_loaded    ? InstallEffect::loads
             : none_loaded ? InstallEffect::blocks
                           : InstallEffect::unknown;
  r.effect_as_dependency = all_ready    ? InstallEffect::loads
                           : none_ready ? InstallEffect::blocks
                                        : InstallEffect::unknown;
  if (!j.notes().empty()) {
    r.why = fmt::format("{}", fmt::join(j.notes(), "; "));
  } else if (r.effect == InstallEffect::blocks) {
    r.why = fmt::format("nothing in it loads {}", module);
  } else if (r.effect == InstallEffect::unknown) {
    r.why = fmt::format("it loads {} on some paths only", module);
  }
  if (r.effect == InstallEffect::loads && r.effect_as_dependency != InstallEffect::loads)
    r.why += "; it can exit with a non-zero status, which stops kmod before the module that "
             "needs this one";
  return r;
}

} // namespace halo::probes

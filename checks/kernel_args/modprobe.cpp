// SPDX-License-Identifier: MIT
// Probe: modprobe configuration, read as kmod reads it (libkmod/libkmod-config.c:
// conf_files_list, conf_files_filter_out, kmod_config_parse; shared/util.c: freadline_wrapped,
// underscores). See ../shared/reference/parsing-facts.md.
//
// Files: names ending in ".conf" (and ".alias", which kmod up to v32 also reads: Debian 12 has
// kmod 30, Ubuntu 24.04 kmod 31) in /etc/modprobe.d, /run/modprobe.d,
// /usr/local/lib/modprobe.d, /usr/lib/modprobe.d and /lib/modprobe.d; names starting with '.'
// and directories are skipped; a name in an earlier directory hides the same name in a later
// one; the survivors are read in one list sorted by file name.
// Lines: a backslash joins the next line (and drops itself before any other byte); a line is a
// comment only when its first byte is '#'; words are split on space and tab only, so a CRLF
// file keeps '\r' in the last word (`blacklist amdgpu\r` names no module); an `options` line
// hands the rest of the line, tabs turned to spaces, to the kernel, which splits it with
// next_arg() (kernel/params.c) when the module loads.
#include "cmdline.hpp"
#include "kmod_install.hpp"
#include "probe_util.hpp"
#include "probes.hpp"
#include "ttm/ttm_modules.hpp"

#include <halo/fact_keys.hpp>

#include <fmt/format.h>

#include <fnmatch.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <map>
#include <set>

namespace halo::probes {
namespace {

constexpr std::array kDirs = {"/etc/modprobe.d", "/run/modprobe.d", "/usr/local/lib/modprobe.d",
                              "/usr/lib/modprobe.d", "/lib/modprobe.d"};
const std::set<std::string, std::less<>> kModules = {"amdgpu",       kTtmModules[0], kTtmModules[1],
                                                     kTtmModules[2], "amdkfd",       "drm"};
/// kmod has no size limit; this bound is reported, never silently applied.
constexpr std::size_t kMaxConfBytes = std::size_t{16} * 1024 * 1024;

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

/// freadline_wrapped(): logical lines with the number of their first physical line.
std::vector<std::pair<std::size_t, std::string>> logical_lines(std::string_view text) {
  std::vector<std::pair<std::size_t, std::string>> out;
  std::string cur;
  std::size_t line = 1;
  std::size_t start = 1;
  bool any = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '\n') {
      out.emplace_back(start, std::move(cur));
      cur.clear();
      ++line;
      start = line;
      any = false;
      continue;
    }
    any = true;
    if (c == '\\') {
      if (i + 1 >= text.size()) break; // a backslash before EOF is dropped
      const char n = text[++i];
      if (n == '\n') {
        ++line;
        continue;
      }
      cur.push_back(n);
      continue;
    }
    cur.push_back(c);
  }
  if (any || !cur.empty()) out.emplace_back(start, std::move(cur));
  // The line is a C string to kmod: a NUL byte ends it.
  for (auto& [n, l] : out)
    if (auto z = l.find('\0'); z != std::string::npos) l.resize(z);
  return out;
}

/// strtok_r(…, "\t ") over a line: the next word, and the position just past its delimiter.
std::optional<std::string_view> next_word(std::string_view line, std::size_t& pos) {
  while (pos < line.size() && (line[pos] == ' ' || line[pos] == '\t'))
    ++pos;
  if (pos >= line.size()) return std::nullopt;
  const std::size_t start = pos;
  while (pos < line.size() && line[pos] != ' ' && line[pos] != '\t')
    ++pos;
  const std::string_view w = line.substr(start, pos - start);
  if (pos < line.size()) ++pos; // strtok_r writes NUL over the delimiter and resumes after it
  return w;
}

/// strtok_r(NULL, "\0"): the rest of the line, or nothing when it is empty.
std::optional<std::string> rest_of(std::string_view line, std::size_t pos) {
  if (pos >= line.size()) return std::nullopt;
  return std::string(line.substr(pos));
}

/// The modules whose `install` lines the doctor judges: the driver, the TTM modules it may
/// depend on (in-kernel `ttm`; ROCm's DKMS `amdttm`, newer `amd_ttm`) and `amdkfd`.
constexpr std::array<const char*, 5> kInstallModules = {"amdgpu", kTtmModules[0], kTtmModules[1],
                                                        kTtmModules[2], "amdkfd"};

/// An `install PATTERN COMMAND` or `softdep PATTERN ...` line, in kmod's order.
struct PatternLine {
  std::string pattern; ///< after underscores(): a fnmatch(3) pattern
  std::string text;    ///< the command, or the softdep list
  std::string where;   ///< file:line
};

/// kmod_module_get_install_commands() / kmod_module_get_softdeps(): the first line, in
/// configuration order, whose pattern fnmatch(pattern, name, 0) matches the module's name
/// ("find only the first command, as modprobe from module-init-tools does").
const PatternLine* first_match(const std::vector<PatternLine>& lines, const char* module) {
  for (const auto& l : lines)
    if (::fnmatch(l.pattern.c_str(), module, 0) == 0) return &l;
  return nullptr;
}

/// Whether a softdep list names any module (kmod_config_add_softdep: words after `pre:` or
/// `post:`, split on isspace()).
bool softdep_names_modules(std::string_view list) {
  enum { none, pre, post } mode = none;
  std::size_t i = 0;
  while (i < list.size()) {
    while (i < list.size() && std::isspace(static_cast<unsigned char>(list[i])) != 0)
      ++i;
    const std::size_t b = i;
    while (i < list.size() && std::isspace(static_cast<unsigned char>(list[i])) == 0)
      ++i;
    const std::string_view w = list.substr(b, i - b);
    if (w.empty()) break;
    if (w == "pre:")
      mode = pre;
    else if (w == "post:")
      mode = post;
    else if (mode != none)
      return true;
  }
  return false;
}

struct OptionsLine {
  std::string text;
  std::string where;
};

void collect(const ProbeContext& ctx, FactSet& facts) {
  // modprobe.d is the host's configuration (the next boot's initramfs and module loads): in a
  // container it is read through the host root, never from the image's /etc.
  const Root* host = ctx.host_config_root();
  if (host == nullptr) {
    for (const std::string_view k :
         {fact_keys::modprobe::files, fact_keys::modprobe::blacklist,
          fact_keys::modprobe::install_blocked, fact_keys::modprobe::install_custom,
          fact_keys::modprobe::unreadable})
      facts.put_status(std::string(k), Status::missing, "host root", ctx.host_basis());
    return;
  }
  const Root& root = *host;
  std::map<std::string, std::string> files; // name -> absolute path of the winning file
  std::vector<std::string> unreadable;
  for (const char* d : kDirs) {
    auto names = root.list(d);
    if (!names) continue;
    for (const auto& n : *names) {
      if (n.empty() || n[0] == '.') continue;
      if (n.size() < 6 || !(ends_with(n, ".conf") || ends_with(n, ".alias"))) continue;
      if (files.contains(n)) continue;
      const std::string path = std::string(d) + "/" + n;
      if (root.is_dir(path)) {
        unreadable.push_back(fmt::format("{} (a directory; kmod skips it)", path));
        continue;
      }
      files.emplace(n, path);
    }
  }
  std::vector<std::string> used_files;
  std::vector<std::string> blacklist;
  std::vector<std::string> blocked;
  std::vector<std::string> custom;
  std::map<std::string, std::vector<OptionsLine>> options; // module -> lines in kmod's order
  std::vector<PatternLine> installs;
  std::vector<PatternLine> softdeps;
  for (const auto& [name, path] : files) {
    ReadResult r = root.read(path, kMaxConfBytes);
    if (!r.ok()) {
      unreadable.push_back(fmt::format("{} ({})", path, r.reason));
      continue;
    }
    used_files.push_back(ends_with(name, ".alias") ? path + " (read by kmod up to v32)" : path);
    for (const auto& [ln, line] : logical_lines(r.text)) {
      if (line.empty() || line[0] == '#') continue;
      std::size_t pos = 0;
      auto cmd = next_word(line, pos);
      if (!cmd) continue;
      auto mod_word = next_word(line, pos);
      if (!mod_word) continue; // kmod: syntax error, line ignored
      auto module = kmod_underscores(*mod_word);
      if (!module) continue; // kmod: syntax error, line ignored
      const std::string where = fmt::format("{}:{}", path, ln);
      // install and softdep name a fnmatch pattern; kmod keeps every such line in order.
      if (*cmd == "install" || *cmd == "softdep") {
        auto text = rest_of(line, pos);
        if (!text) continue; // kmod: syntax error
        (*cmd == "install" ? installs : softdeps).push_back({*module, *text, where});
        continue;
      }
      if (!kModules.contains(*module)) continue;
      if (*cmd == "blacklist") {
        if (std::find(blacklist.begin(), blacklist.end(), *module) == blacklist.end())
          blacklist.push_back(*module);
        facts.put_ok(fact_keys::modprobe::blacklist_source(*module), where, where);
      } else if (*cmd == "options") {
        auto text = rest_of(line, pos);
        if (!text) continue;
        std::replace(text->begin(), text->end(), '\t', ' '); // kmod_config_add_options()
        options[*module].push_back({*text, where});
      }
    }
  }
  // The install line kmod runs instead of inserting each module (libkmod-module.c,
  // kmod_module_probe_insert_module): the first whose pattern matches, unless the module has
  // soft dependencies: __kmod_module_fill_softdep() sets ignorecmd when its softdep line lists
  // modules ("mod->ignorecmd = (pre != NULL || post != NULL)"), and kmod inserts it directly.
  for (const char* m : kInstallModules) {
    const PatternLine* inst = first_match(installs, m);
    if (inst == nullptr) continue;
    const std::string mod(m);
    facts.put_ok(fact_keys::modprobe::install(mod), inst->text, inst->where);
    facts.put_ok(fact_keys::modprobe::install_pattern(mod), inst->pattern, inst->where);
    const PatternLine* soft = first_match(softdeps, m);
    if (soft != nullptr && softdep_names_modules(soft->text)) {
      facts.put_ok(fact_keys::modprobe::install_effect(mod), std::string("ignored"), inst->where);
      facts.put_ok(fact_keys::modprobe::install_effect_as_dependency(mod), std::string("ignored"),
                   inst->where);
      facts.put_ok(fact_keys::modprobe::install_why(mod),
                   fmt::format("kmod ignores the install line of a module with soft dependencies "
                               "(softdep {} {} at {}) and inserts {} itself",
                               soft->pattern, soft->text, soft->where, mod),
                   soft->where);
      continue;
    }
    const InstallJudgement j = judge_install_command(inst->text, mod);
    facts.put_ok(fact_keys::modprobe::install_effect(mod), std::string(to_string(j.effect)),
                 inst->where);
    facts.put_ok(fact_keys::modprobe::install_effect_as_dependency(mod),
                 std::string(to_string(j.effect_as_dependency)), inst->where);
    facts.put_ok(fact_keys::modprobe::install_why(mod), j.why, inst->where);
    if (j.effect == InstallEffect::blocks) {
      blocked.push_back(mod);
      facts.put_ok(fact_keys::modprobe::blocked_source(mod), inst->where, inst->where);
    } else if (j.effect == InstallEffect::unknown) {
      custom.push_back(fmt::format("install {} {} ({})", inst->pattern, inst->text, inst->where));
    }
  }
  // What the module receives from modprobe.d: the options lines joined with ' '
  // (kmod_module_get_options), split by the kernel's next_arg(); the last value of a parameter
  // wins, a bare `--` ends the list (parse_args; load_module warns "after `--' ignored").
  for (const auto& [module, lines] : options) {
    std::string joined;
    std::vector<std::pair<std::size_t, const OptionsLine*>> starts;
    std::vector<std::string> texts;
    for (const auto& l : lines) {
      if (!joined.empty()) joined += ' ';
      starts.emplace_back(joined.size(), &l);
      joined += l.text;
      texts.push_back(l.text);
    }
    facts.put_ok(fact_keys::modprobe::options_text(module), texts, lines.front().where);
    // Words after a '#' on the same line look like a note to the reader, but the kernel receives
    // them: unknown names are ignored ("unknown parameter '#' ignored"), known ones are applied.
    // They are listed so the derive stage can tell a note from a setting that still applies.
    std::vector<std::string> note_words;
    const OptionsLine* hash_line = nullptr;
    for (const KernelArg& a : split_kernel_args(joined, true)) {
      const OptionsLine* from = starts.front().second;
      for (const auto& [off, l] : starts)
        if (off <= a.offset) from = l;
      if (!a.raw_name.empty() && a.raw_name.front() == '#') hash_line = from;
      if (hash_line == from) note_words.push_back(a.name);
      facts.put_ok(fact_keys::modprobe::options(module, a.name), a.value.value_or(""), from->where);
    }
    facts.put_ok(fact_keys::modprobe::note_words(module), note_words, lines.front().where);
  }
  facts.put_ok(std::string(fact_keys::modprobe::files), used_files, "modprobe.d");
  facts.put_ok(std::string(fact_keys::modprobe::blacklist), blacklist, "modprobe.d");
  facts.put_ok(std::string(fact_keys::modprobe::install_blocked), blocked, "modprobe.d");
  facts.put_ok(std::string(fact_keys::modprobe::install_custom), custom, "modprobe.d");
  facts.put_ok(std::string(fact_keys::modprobe::unreadable), unreadable, "modprobe.d");
}

} // namespace

std::unique_ptr<Probe> make_modprobe_probe() {
  return std::make_unique<BasicProbe>("modprobe", collect);
}

} // namespace halo::probes

// SPDX-License-Identifier: MIT
// Issue 32, section 1: untrusted text never becomes code in a generated fix script or Nix snippet.
// Every field that flows into a script (the host name, PRETTY_NAME, boot-stack evidence, notes,
// manual steps and the rules that asked for them, modprobe.d file names, kernel-argument values,
// variable values, the user, the NixOS configuration lines) gets every payload below, for every
// boot stack. Each script must
//   - hold no raw control byte but newline (no ESC, CR, BEL: nothing a terminal or `cat` acts on),
//   - have the meaning of the same script with a harmless value: the same lines, and every line
//     that differs is a comment in both or the same command with another quoted word,
//   - pass `bash -n`, and run under --dry-run (HALO_FIX_ROOT = an empty root) without the
//     payload's `touch halo_canary` ever running;
// and every Nix snippet parses with the real nix-instantiate (Debian's nix-bin) with the payload's
// marker only inside string literals and comments.
#include <halo/error.hpp>
#include <halo/fix.hpp>
#include <halo/sanitize.hpp>

#include <catch2/catch.hpp>

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

using namespace halo;
using namespace halo::fix;

namespace {

namespace fs = std::filesystem;

// `touch halo_canary` in every form a shell, a comment or Nix might be tricked into running. The
// canary is relative: the scripts run in a directory of their own.
const std::vector<std::string>& payloads() {
  static const std::vector<std::string> p = {
      "$(touch halo_canary)",
      "`touch halo_canary`",
      "x; touch halo_canary; #",
      "x'; touch halo_canary; '",
      "x\"; touch halo_canary; \"",
      "x\ntouch halo_canary\n",
      "x\rtouch halo_canary",
      "x'\ntouch halo_canary\n'",
      "${IFS}touch${IFS}halo_canary",
      "* ? [a-z] ~root",
      "\x1b]52;c;dG91Y2ggaGFsb19jYW5hcnk=\x07 clipboard",
      "\x1b[2J\x1b]0;title\x07\x01\x7f",
      "\xc2\x9b"
      "31m C1 CSI",
      "\xe2\x80\xae"
      "reversed \xe2\x80\xa8 separator",
      "\xff\xfe not UTF-8",
      "x\n}; haloPwn = builtins.toFile \"p\" \"q\"; y = {\n",
      "x\"; haloPwn = 1; y = \"${builtins.currentTime}",
      "x''; haloPwn = 1; y = ''${toString 1}",
      "HALO_EOF\ntouch halo_canary\nHALO_EOF",
  };
  return p;
}

/// A plan with every step, so every renderer path runs.
Plan full_plan() {
  Plan p;
  p.kargs_set = {{"ttm.pages_limit", "27648000"}, {"amdgpu.cwsr_enable", "0"}};
  p.kargs_remove = {"amdgpu.gttsize"};
  p.modprobe = {ModprobeFile{
      "halo-doctor-ttm.conf", "ttm", {{"pages_limit", "27648000"}}, {"ttm-limit-low"}, ""}};
  p.initramfs = true;
  p.groups = {"render", "video"};
  p.udev = {R"(KERNEL=="kfd", GROUP="render", MODE="0660")"};
  p.sysctl = {{"kernel.numa_balancing", "0"}};
  p.env_unset = {"HSA_OVERRIDE_GFX_VERSION"};
  p.env_set = {{"HSA_XNACK", "0"}};
  p.reboot = true;
  p.covered = {"ttm-limit-low"};
  p.manual = {ManualStep{"gfx1151-kernel-min", "install kernel 6.18.4 or later"}};
  p.notes = {"/etc/modprobe.d/other.conf also sets ttm.pages_limit=1: remove it there"};
  for (const char* step :
       {"kernel_args", "modprobe", "initramfs", "groups", "udev", "sysctl", "env"})
    p.step_rules[step] = {"ttm-limit-low"};
  return p;
}

ScriptOptions options(Stack stack) {
  ScriptOptions o;
  o.stack = stack;
  o.user = "alice";
  o.host = "strix-halo";
  o.os = "Ubuntu 24.04.3 LTS";
  o.tool_version = "0.0.0-test";
  o.evidence = {"/etc/default/grub exists"};
  o.grub_d_files = {"init-select.cfg"};
  o.nixos_param_lines = {
      "/etc/nixos/configuration.nix:12: boot.kernelParams = [ \"ttm.pages_limit=1\" ];"};
  return o;
}

/// A field of the renderers' input and how to plant a value in it.
struct Field {
  std::string name;
  std::string harmless; ///< a value that is as valid or invalid as every payload
  std::function<void(Plan&, ScriptOptions&, const std::string&)> plant;
};

const std::vector<Field>& fields() {
  static const std::vector<Field> f = {
      {"host", "harmless value", [](Plan&, ScriptOptions& o, const std::string& v) { o.host = v; }},
      {"os", "harmless value", [](Plan&, ScriptOptions& o, const std::string& v) { o.os = v; }},
      {"evidence", "harmless value",
       [](Plan&, ScriptOptions& o, const std::string& v) { o.evidence.push_back(v); }},
      {"note", "harmless value",
       [](Plan& p, ScriptOptions&, const std::string& v) { p.notes.push_back(v); }},
      {"manual text", "harmless value",
       [](Plan& p, ScriptOptions&, const std::string& v) { p.manual[0].text = v; }},
      {"manual rule", "harmless value",
       [](Plan& p, ScriptOptions&, const std::string& v) { p.manual[0].rule = v; }},
      {"covered rule", "harmless value",
       [](Plan& p, ScriptOptions&, const std::string& v) { p.covered.push_back(v); }},
      {"step rule", "harmless value",
       [](Plan& p, ScriptOptions&, const std::string& v) {
         for (auto& [k, rules] : p.step_rules)
           rules.push_back(v);
       }},
      {"modprobe file", "harmless value",
       [](Plan& p, ScriptOptions&, const std::string& v) { p.modprobe[0].file = v; }},
      {"karg value", "harmless value",
       [](Plan& p, ScriptOptions&, const std::string& v) { p.kargs_set[0].second = v; }},
      {"env value", "harmless value",
       [](Plan& p, ScriptOptions&, const std::string& v) { p.env_set[0].second = v; }},
      {"user", "Not A User", [](Plan&, ScriptOptions& o, const std::string& v) { o.user = v; }},
      {"nixos line", "harmless value",
       [](Plan&, ScriptOptions& o, const std::string& v) {
         o.nixos_param_lines.push_back("/etc/nixos/" + v +
                                       ".nix:3: boot.kernelParams = [ \"ttm.pages_limit=2\" ];");
       }},
  };
  return f;
}

std::vector<std::string> lines(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string l; std::getline(in, l);)
    out.push_back(l);
  return out;
}

/// The text bash runs as code: `script` with comments left out and every single-quoted word,
/// $'...' word and backslash-escaped character replaced by one marker '', double-quoted text kept
/// (bash expands $(...) there), and a quoted here-document's body lexed the same way (the GRUB
/// block is sourced by grub-mkconfig). Two scripts with the same code text do the same things with
/// different data.
std::string code_text(const std::string& s) {
  enum class St { code, squote, ansi, dquote, comment };
  std::string out;
  St st = St::code;
  bool word_start = true;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    switch (st) {
    case St::code:
      if (c == '#' && word_start) {
        st = St::comment;
        continue;
      }
      if (c == '\\' && i + 1 < s.size() && s[i + 1] != '\n') {
        out += "''"; // an escaped character is data, like a quoted one
        ++i;
        word_start = false;
        continue;
      }
      if (c == '$' && i + 1 < s.size() && s[i + 1] == '\'') {
        ++i;
        st = St::ansi;
        continue;
      }
      if (c == '\'') {
        st = St::squote;
        continue;
      }
      if (c == '"') {
        out += c;
        st = St::dquote;
        continue;
      }
      out += c;
      word_start = c == ' ' || c == '\t' || c == '\n' || c == ';' || c == '(' || c == '|' ||
                   c == '&' || c == '{';
      break;
    case St::squote:
      if (c == '\'') {
        out += "''";
        st = St::code;
        word_start = false;
      }
      break;
    case St::ansi:
      if (c == '\\') {
        ++i;
      } else if (c == '\'') {
        out += "''";
        st = St::code;
        word_start = false;
      }
      break;
    case St::dquote:
      out += c;
      if (c == '\\' && i + 1 < s.size()) {
        out += s[++i];
      } else if (c == '"') {
        st = St::code;
        word_start = false;
      }
      break;
    case St::comment:
      if (c == '\n') {
        out += c;
        st = St::code;
        word_start = true;
      }
      break;
    }
  }
  // Adjacent quoted pieces are one word of data: 'a'\''b' and $'a\x27b' read the same.
  for (std::size_t p = out.find("''''"); p != std::string::npos; p = out.find("''''"))
    out.erase(p, 2);
  return out;
}

bool raw_control(const std::string& s) {
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if ((u < 0x20 && c != '\n') || u == 0x7F) return true;
  }
  return false;
}

int sh(const std::string& cmd) {
  const int rc = std::system(cmd.c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

struct TempDir {
  fs::path path;
  TempDir() {
    std::string t = (fs::temp_directory_path() / "halo-fix-hostile-XXXXXX").string();
    path = ::mkdtemp(t.data());
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
};

void write(const fs::path& p, const std::string& text) {
  std::ofstream(p, std::ios::binary) << text;
}

constexpr std::array<Stack, 6> kScriptStacks = {Stack::grubby,     Stack::grub_debian,
                                                Stack::grub_arch,  Stack::rpm_ostree,
                                                Stack::kernelstub, Stack::systemd_boot};

} // namespace

TEST_CASE("fix renderers: every payload in every field stays inert text (bash)",
          "[fix][security]") {
  REQUIRE(fs::exists("/bin/bash"));
  TempDir dir;
  fs::create_directories(dir.path / "root");
  int combos = 0;
  int executed = 0;
  int refused = 0;
  for (const Stack stack : kScriptStacks) {
    Plan plan0 = full_plan();
    ScriptOptions opt0 = options(stack);
    for (const auto& field : fields()) {
      Plan bp = plan0;
      ScriptOptions bo = opt0;
      field.plant(bp, bo, field.harmless);
      const std::string base_script = render_script(bp, bo);
      const std::vector<std::string> base = lines(base_script);
      const std::string base_code = code_text(base_script);
      for (const auto& payload : payloads()) {
        INFO("stack " << to_string(stack) << ", field " << field.name << ", payload "
                      << one_line(payload));
        Plan p = plan0;
        ScriptOptions o = opt0;
        field.plant(p, o, payload);
        ++combos;
        std::string script;
        try {
          script = render_script(p, o);
        } catch (const InputError& e) {
          // Refusing is safe too: only where POSIX sh cannot hold the value (the GRUB block,
          // which merge_fixes never lets a non-word reach), and with a message for a person.
          ++refused;
          CHECK(field.name == "karg value");
          CHECK((stack == Stack::grub_debian || stack == Stack::grub_arch));
          CHECK_FALSE(raw_control(e.what()));
          continue;
        }
        CHECK_FALSE(raw_control(script));
        CHECK(lines(script).size() == base.size());
        CHECK(code_text(script) == base_code);
        const fs::path file = dir.path / "fix.sh";
        write(file, script);
        CHECK(sh("/bin/bash -n " + file.string() + " 2>/dev/null") == 0);
        // Run it: the two stacks whose steps read the most (GRUB's block, kernel-install's
        // entries) and every field, under --dry-run and as an ordinary user of an empty root.
        if (stack == Stack::grub_debian || stack == Stack::systemd_boot) {
          ++executed;
          sh("cd " + dir.path.string() + " && HALO_FIX_ROOT=" + (dir.path / "root").string() +
             " HALO_FIX_ALLOW_NON_ROOT=1 timeout 20 /bin/bash " + file.string() +
             " --dry-run >/dev/null 2>&1 </dev/null");
          CHECK_FALSE(fs::exists(dir.path / "halo_canary"));
          CHECK_FALSE(fs::exists(dir.path / "root" / "halo_canary"));
        }
      }
    }
  }
  CHECK(combos == static_cast<int>(kScriptStacks.size() * fields().size() * payloads().size()));
  CHECK(executed > 0);
  CHECK(refused < combos / 10);
}

TEST_CASE("fix renderers: every payload in every field stays inside Nix strings or comments",
          "[fix][security]") {
  const fs::path nix = "/usr/bin/nix-instantiate";
  REQUIRE(fs::exists(nix)); // Debian's nix-bin (scripts/setup.sh)
  TempDir dir;
  // One file holding every snippet as a list element, parsed once (a parse is ~0.5 s).
  std::string all = "[\n";
  int combos = 0;
  for (const auto& field : fields())
    for (const auto& payload : payloads()) {
      Plan p = full_plan();
      ScriptOptions o = options(Stack::nixos);
      field.plant(p, o, payload);
      const std::string snippet = render_nix(p, o);
      INFO("field " << field.name << ", payload " << one_line(payload));
      CHECK_FALSE(raw_control(snippet));
      all += "(\n" + snippet + ")\n";
      ++combos;
    }
  all += "]\n";
  write(dir.path / "all.nix", all);
  const fs::path ast = dir.path / "ast.txt";
  REQUIRE(sh(nix.string() + " --parse " + (dir.path / "all.nix").string() + " >" + ast.string() +
             " 2>/dev/null") == 0);
  std::ifstream in(ast);
  std::stringstream buf;
  buf << in.rdbuf();
  // The parser prints the expression back with comments dropped and every string as "..."; with
  // the string literals taken out, the marker of the Nix payloads must be gone.
  std::string code;
  const std::string text = buf.str();
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '"') {
      code += text[i];
      continue;
    }
    for (++i; i < text.size() && text[i] != '"'; ++i)
      if (text[i] == '\\') ++i;
  }
  CHECK(code.find("haloPwn") == std::string::npos);
  CHECK(code.find("currentTime") == std::string::npos);
  CHECK(code.find("toString") == std::string::npos);
  CHECK(code.find("halo_canary") == std::string::npos);
  CHECK(combos == static_cast<int>(fields().size() * payloads().size()));
}

TEST_CASE("shell_quote: one word whose value is the input, never a raw control byte", "[fix]") {
  TempDir dir;
  for (const auto& payload : payloads()) {
    const std::string q = shell_quote(payload);
    CHECK_FALSE(raw_control(q));
    // bash reads the word back: printf '%s' WORD reproduces the bytes exactly.
    write(dir.path / "q.sh", "printf '%s' " + q + " >" + (dir.path / "out").string() + "\n");
    REQUIRE(sh("cd " + dir.path.string() + " && /bin/bash q.sh") == 0);
    std::ifstream in(dir.path / "out", std::ios::binary);
    std::stringstream got;
    got << in.rdbuf();
    CHECK(got.str() == payload);
    CHECK_FALSE(fs::exists(dir.path / "halo_canary"));
  }
  CHECK(shell_quote("it's") == "'it'\\''s'");
  CHECK(shell_quote("a\nb") == "'a\nb'");
  CHECK(shell_quote("a\x1b[2Jb") == "$'a\\x1B[2Jb'");
}

TEST_CASE("one_line: no byte below 0x20 or 0x7F survives; text stays readable", "[sanitize]") {
  CHECK(one_line("plain text, ünïcode") == "plain text, ünïcode");
  CHECK(one_line("a\nb\rc\td") == "a\\nb\\rc\\td");
  CHECK(one_line("\x1b]52;c;x\x07") == "\\x1B]52;c;x\\x07");
  CHECK(one_line("\xc2\x9b") == "\\xC2\\x9B");
  CHECK(one_line("\xe2\x80\xae") == "\\xE2\\x80\\xAE");
  CHECK(one_line("\xff") == "\\xFF");
  for (const auto& p : payloads()) {
    CHECK_FALSE(raw_control(one_line(p)));
    CHECK(one_line(p).find('\n') == std::string::npos);
    CHECK(is_one_line(one_line(p)));
  }
}

// SPDX-License-Identifier: MIT
// halo-facts-compile CHECKS_DIR OUT.cpp [OUT_KEYS.hpp] (a build step, CMakeLists.txt; issues 33,
// 42): validates the fact declarations of the built-in probes, checks/<folder>/facts.json, and
// writes them as C++ tables in static storage (checks/common/probes.hpp declared_probes(),
// declared_probe()), so the binary reads no JSON and copies no table at start-up; and, with
// OUT_KEYS.hpp, the header <halo/fact_keys.hpp>: one C++ name per declared pattern (the naming
// scheme is the header's own comment, key_header below), so code names a fact by a constant the
// declarations generate and a key not declared is a compile error.
//
// Every file is checked against checks/facts.schema.json (key pattern syntax, the type names of
// fact_type_name, the unit vocabulary of FactDecl::unit, a non-empty meaning and source), and
// then:
//  - every probe id is declared once over all files, and every pattern once;
//  - every pattern's family (its first segment) maps, in src/core/fact_families.cpp, to the folder
//    the file is in (one home per fact family);
//  - a meaning is one line;
//  - a source (Probe::source, docs/facts.md's paragraph under the probe's table) is one paragraph
//    on one line, and not only white space;
//  - what the probe reads is in its entry too (issue 42): `inputs`, the facts of other probes it
//    reads (Probe::inputs), each overlapping (patterns_overlap) a pattern another entry declares or
//    the registry provides (`probe.*.status`, `bench.**`), so a typo fails the build, not the
//    registry at start-up; `reads` (Probe::reads), each an absolute path or glob (the capture
//    bundle expands it) or, for a place found at run time, {"described": text}; `env`
//    (Probe::env_reads), variable names or `PREFIX*`; and a derivation, flagged `"derivation":
//    true`, has no reads and no env (it reads no machine: include/halo/probe.hpp Derivation).
// The first error fails the build with "checks/FOLDER/facts.json:LINE: probe 'ID' ...: what".
// The tool reads no probe: that every built-in probe has an entry, and every entry a probe, is
// checked when the registry is built (declared_probe throws) and by
// tests/unit/test_fact_declarations.cpp.
#include <halo/error.hpp>
#include <halo/fact.hpp>
#include <halo/io.hpp>
#include <halo/probe.hpp>
#include <halo/schema.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

namespace {

namespace fs = std::filesystem;

/// One declaration of a facts.json file (halo::FactDecl, owning its text).
struct Decl {
  std::string pattern;
  halo::FactType type;
  std::string unit;
  std::string meaning;
};

/// One input of an entry (Probe::inputs) and the line it is on, for the second pass (which needs
/// every file's declarations).
struct Input {
  std::string pattern;
  std::size_t line = 0;
};

/// One entry of a facts.json file, validated.
struct Entry {
  std::string id;
  std::string file;   ///< "checks/FOLDER/facts.json"
  std::string source; ///< Probe::source: one line of Markdown
  std::vector<Decl> facts;
  bool derivation = false;        ///< `"derivation": true`: a Derivation (BasicDerivation)
  std::vector<Input> inputs;      ///< Probe::inputs
  std::vector<std::string> reads; ///< Probe::reads, a described read as its text
  std::vector<std::string> env;   ///< Probe::env_reads
};

/// The FactType spelled `name` by fact_type_name (the schema admits no other).
halo::FactType type_named(std::string_view name) {
  for (const halo::FactType t :
       {halo::FactType::boolean, halo::FactType::integer, halo::FactType::number,
        halo::FactType::string, halo::FactType::list})
    if (halo::fact_type_name(t) == name) return t;
  throw std::logic_error(fmt::format("type '{}' is not a FactType", name));
}

/// `s` as the text of a C++ string literal: printable ASCII as itself, `"` and `\` escaped, every
/// other byte (UTF-8 included) as a three-digit octal escape, which ends where it must.
std::string cxx_literal(std::string_view s) {
  std::string out = "\"";
  for (const char c : s) {
    const auto b = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (b >= 0x20 && b < 0x7f) {
      out += c;
    } else {
      out += fmt::format("\\{:03o}", b);
    }
  }
  return out + "\"";
}

/// Reads and validates one facts.json; `seen_ids` and `seen_patterns` (key -> file) span all files.
std::vector<Entry> read_file(const fs::path& path, std::string_view folder,
                             const nlohmann::json& schema,
                             std::map<std::string, std::string>& seen_ids,
                             std::map<std::string, std::string>& seen_patterns) {
  const std::string origin = fmt::format("checks/{}/facts.json", folder);
  const std::string text = halo::read_input_file(path.string());
  const nlohmann::json doc = halo::parse_json_input(text, origin);
  halo::validate_against_schema(schema, doc, text, origin);
  const halo::JsonPositions pos(text);
  std::vector<Entry> out;
  for (std::size_t i = 0; i < doc.size(); ++i) {
    const nlohmann::json& p = doc[i];
    Entry e{p.at("probe").get<std::string>(),
            origin,
            p.at("source").get<std::string>(),
            {},
            false,
            {},
            {},
            {}};
    const auto fail = [&](const std::string& pointer, const std::string& what) {
      return halo::InputError(
          fmt::format("{}:{}: probe '{}': {}", origin, pos.line(pointer), e.id, what));
    };
    const std::string at = fmt::format("/{}", i);
    if (auto [it, fresh] = seen_ids.emplace(e.id, origin); !fresh)
      throw fail(at + "/probe", fmt::format("declared again (first in {})", it->second));
    if (e.source.find_first_not_of(" \t") == std::string::npos)
      throw fail(at + "/source", "the source is only white space");
    if (e.source.find_first_of("\r\n") != std::string::npos)
      throw fail(at + "/source", "the source is one paragraph on one line (no line break)");
    e.derivation = p.contains("derivation");
    if (p.contains("inputs"))
      for (std::size_t j = 0; j < p["inputs"].size(); ++j)
        e.inputs.push_back(
            Input{p["inputs"][j].get<std::string>(), pos.line(fmt::format("{}/inputs/{}", at, j))});
    if (p.contains("reads"))
      for (std::size_t j = 0; j < p["reads"].size(); ++j) {
        const nlohmann::json& r = p["reads"][j];
        if (r.is_object()) {
          e.reads.push_back(r.at("described").get<std::string>());
          continue;
        }
        // An absolute path or glob, optionally followed by a space and a comment: the capture
        // bundle expands the part before the space (src/core/bundle.cpp patterns()).
        const auto& read = r.get_ref<const std::string&>();
        if (read.front() != '/')
          throw fail(fmt::format("{}/reads/{}", at, j),
                     fmt::format("read '{}' is not an absolute path (a place found at run time "
                                 "is {{\"described\": \"...\"}})",
                                 read));
        e.reads.push_back(read);
      }
    if (p.contains("env"))
      for (const auto& v : p["env"])
        e.env.push_back(v.get<std::string>());
    if (e.derivation && (!e.reads.empty() || !e.env.empty()))
      throw fail(at + (e.reads.empty() ? "/env" : "/reads"),
                 "a derivation reads no file and no environment variable (it reads the facts of "
                 "its inputs): no \"reads\" or \"env\"");
    const nlohmann::json& facts = p.at("facts");
    for (std::size_t j = 0; j < facts.size(); ++j) {
      const std::string fat = fmt::format("{}/facts/{}", at, j);
      const auto& pattern = facts[j].at("pattern").get_ref<const std::string&>();
      const auto& meaning = facts[j].at("meaning").get_ref<const std::string&>();
      const std::string_view home = halo::family_folder(pattern);
      const std::string family = pattern.substr(0, pattern.find('.'));
      if (home.empty())
        throw fail(
            fat + "/pattern",
            fmt::format("'{}': family '{}' is not in src/core/fact_families.cpp", pattern, family));
      if (home != folder)
        throw fail(fat + "/pattern",
                   fmt::format("'{}': family '{}' lives in checks/{}/ (src/core/fact_families.cpp)",
                               pattern, family, home));
      if (auto [it, fresh] = seen_patterns.emplace(pattern, origin + " probe '" + e.id + "'");
          !fresh)
        throw fail(fat + "/pattern",
                   fmt::format("'{}' is declared again (first in {})", pattern, it->second));
      if (meaning.find_first_of("\r\n") != std::string::npos)
        throw fail(fat + "/meaning", fmt::format("'{}': the meaning is one line", pattern));
      e.facts.push_back(Decl{pattern, type_named(facts[j].at("type").get<std::string>()),
                             facts[j].at("unit").get<std::string>(), meaning});
    }
    out.push_back(std::move(e));
  }
  return out;
}

/// Checks every entry's inputs against the other entries' declarations: an input must overlap
/// (halo::patterns_overlap) a pattern another probe declares, or one the registry provides itself
/// (`probe.*.status`, `bench.**`: ProbeRegistry::resolve's rule), else it names a fact nobody
/// produces: a typo, or a declaration removed under it. Throws halo::InputError naming the file,
/// line, probe and input.
void check_inputs(const std::vector<Entry>& entries) {
  const std::vector<std::string> registry = {std::string(halo::keys::bench_all),
                                             halo::keys::probe_status("*")};
  for (const Entry& e : entries)
    for (const Input& in : e.inputs) {
      const auto overlaps = [&](std::string_view pattern) {
        return halo::patterns_overlap(pattern, in.pattern);
      };
      const bool found =
          std::ranges::any_of(registry, overlaps) ||
          std::ranges::any_of(entries, [&](const Entry& other) {
            return &other != &e && std::ranges::any_of(other.facts, [&](const Decl& d) {
              return overlaps(d.pattern);
            });
          });
      if (!found)
        throw halo::InputError(fmt::format(
            "{}:{}: probe '{}': input '{}' matches no pattern another probe declares (a typo? "
            "the facts it reads are another entry's \"facts\")",
            e.file, in.line, e.id, in.pattern));
    }
}

/// `values` as the elements of a constexpr std::string_view array, appended to `text`; returns
/// the span expression viewing them in kText (`first` counts the strings written before).
std::string text_span(std::string& text, std::size_t& first,
                      const std::vector<std::string>& values) {
  if (values.empty()) return "{}";
  for (const std::string& v : values)
    text += fmt::format("    {},\n", cxx_literal(v));
  std::string span =
      fmt::format("std::span<const std::string_view>(kText + {}, {})", first, values.size());
  first += values.size();
  return span;
}

/// The generated C++: every declaration in one constexpr array (file order), and the probes
/// sorted by id, each with its source text and its slice of it, for declared_probe()'s binary
/// search.
std::string generated_source(const std::vector<Entry>& entries) {
  std::size_t total = 0;
  for (const Entry& e : entries)
    total += e.facts.size();
  std::string text = fmt::format(
      "// Generated by halo-facts-compile (src/tools/facts_compile.cpp) from checks/*/facts.json. "
      "Do not\n// edit.\n#include \"probes.hpp\"\n\nnamespace halo::probes {{\nnamespace {{\n\n"
      "using enum FactType;\n\n// {} probes, {} declarations.\nconstexpr FactDecl kFacts[] = {{\n",
      entries.size(), total);
  std::map<std::string, std::pair<std::size_t, const Entry*>> slices; // id -> (first, entry)
  std::size_t first = 0;
  for (const Entry& e : entries) {
    text += fmt::format("    // {}: {}\n", e.file, e.id);
    for (const Decl& d : e.facts) {
      std::string_view type = "string";
      switch (d.type) {
      case halo::FactType::boolean:
        type = "boolean";
        break;
      case halo::FactType::integer:
        type = "integer";
        break;
      case halo::FactType::number:
        type = "number";
        break;
      case halo::FactType::string:
        break;
      case halo::FactType::list:
        type = "list";
        break;
      }
      text += fmt::format("    {{{}, {}, {}, {}}},\n", cxx_literal(d.pattern), type,
                          cxx_literal(d.unit), cxx_literal(d.meaning));
    }
    slices.emplace(e.id, std::pair{first, &e});
    first += e.facts.size();
  }
  // The inputs, reads and env of every probe, each probe's three lists one after the other.
  text +=
      "};\n\n// Inputs, reads and environment variables.\nconstexpr std::string_view kText[] = {\n";
  std::map<std::string, std::array<std::string, 3>> lists; // id -> span expressions
  std::size_t strings = 0;
  for (const Entry& e : entries) {
    std::vector<std::string> inputs;
    inputs.reserve(e.inputs.size());
    for (const Input& in : e.inputs)
      inputs.push_back(in.pattern);
    text += fmt::format("    // {}: {}\n", e.file, e.id);
    std::array<std::string, 3> spans;
    spans[0] = text_span(text, strings, inputs);
    spans[1] = text_span(text, strings, e.reads);
    spans[2] = text_span(text, strings, e.env);
    lists.emplace(e.id, std::move(spans));
  }
  if (strings == 0) text += "    {},\n"; // an array has one element at least
  text += "};\n\n// Sorted by id.\nconstexpr DeclaredProbe kProbes[] = {\n";
  for (const auto& [id, slice] : slices) {
    const auto& [inputs, reads, env] = lists.at(id);
    text += fmt::format(
        "    {{{}, {},\n     {},\n     std::span<const FactDecl>(kFacts + {}, {}), {},\n"
        "     {},\n     {},\n     {}}},\n",
        cxx_literal(id), cxx_literal(slice.second->file), cxx_literal(slice.second->source),
        slice.first, slice.second->facts.size(), slice.second->derivation ? "true" : "false",
        inputs, reads, env);
  }
  text += "};\n\n} // namespace\n\nstd::span<const DeclaredProbe> declared_probes() { return "
          "kProbes; }\n\n} // namespace halo::probes\n";
  return text;
}

/// The C++20 keywords and alternative tokens ([lex.key], [lex.digraph]): a segment spelled like
/// one gets a trailing `_` as its name (`amdgpu.module.signed` -> `module_signed`; alone,
/// `signed_`).
bool is_keyword(std::string_view w) {
  static const std::set<std::string_view> kKeywords = {
      "alignas",       "alignof",     "and",
      "and_eq",        "asm",         "auto",
      "bitand",        "bitor",       "bool",
      "break",         "case",        "catch",
      "char",          "char8_t",     "char16_t",
      "char32_t",      "class",       "compl",
      "concept",       "const",       "consteval",
      "constexpr",     "constinit",   "const_cast",
      "continue",      "co_await",    "co_return",
      "co_yield",      "decltype",    "default",
      "delete",        "do",          "double",
      "dynamic_cast",  "else",        "enum",
      "explicit",      "export",      "extern",
      "false",         "float",       "for",
      "friend",        "goto",        "if",
      "inline",        "int",         "long",
      "mutable",       "namespace",   "new",
      "noexcept",      "not",         "not_eq",
      "nullptr",       "operator",    "or",
      "or_eq",         "private",     "protected",
      "public",        "register",    "reinterpret_cast",
      "requires",      "return",      "short",
      "signed",        "sizeof",      "static",
      "static_assert", "static_cast", "struct",
      "switch",        "template",    "this",
      "thread_local",  "throw",       "true",
      "try",           "typedef",     "typeid",
      "typename",      "union",       "unsigned",
      "using",         "virtual",     "void",
      "volatile",      "wchar_t",     "while",
      "xor",           "xor_eq"};
  return kKeywords.contains(w);
}

/// `w` as a C++ identifier: a keyword gets a trailing `_`, a leading digit a leading `n`.
std::string identifier(std::string w) {
  if (!w.empty() && w.front() >= '0' && w.front() <= '9') w.insert(0, "n");
  if (is_keyword(w)) w += '_';
  return w;
}

/// The dotted segments of `pattern`.
std::vector<std::string> segments(std::string_view pattern) {
  std::vector<std::string> out;
  std::size_t at = 0;
  for (;;) {
    const std::size_t dot = pattern.find('.', at);
    out.emplace_back(pattern.substr(at, dot == std::string_view::npos ? dot : dot - at));
    if (dot == std::string_view::npos) return out;
    at = dot + 1;
  }
}

/// One generated name: a constant (a pattern without `*` or `**`) or a function of the pattern's
/// `*` segments and `**` tail.
struct KeyName {
  std::string family; ///< namespace: the first segment
  std::string name;   ///< the other fixed segments joined by `_`
  std::string pattern;
  std::size_t params = 0; ///< `*` segments and a `**` tail
  std::string origin;     ///< "checks/FOLDER/facts.json probe 'ID'"
};

/// The names of every declared pattern (the scheme of key_header's comment). Throws
/// halo::InputError when two patterns of one family would get one name.
std::vector<KeyName> key_names(const std::vector<Entry>& entries) {
  std::vector<KeyName> out;
  for (const Entry& e : entries)
    for (const Decl& d : e.facts) {
      const std::vector<std::string> seg = segments(d.pattern);
      KeyName k{identifier(seg.front()), "", d.pattern, 0, e.file + " probe '" + e.id + "'"};
      for (std::size_t i = 1; i < seg.size(); ++i) {
        if (seg[i] == "*" || seg[i] == "**") {
          ++k.params;
          continue;
        }
        if (!k.name.empty()) k.name += '_';
        k.name += seg[i];
      }
      if (k.name.empty()) k.name = "key";
      k.name = identifier(k.name);
      out.push_back(std::move(k));
    }
  // A function whose name a constant of its family already has takes `_of`
  // (`runenv.containerenv.*` beside `runenv.containerenv`: runenv::containerenv_of(name)).
  std::set<std::pair<std::string, std::string>> constants;
  for (const KeyName& k : out)
    if (k.params == 0) constants.emplace(k.family, k.name);
  for (KeyName& k : out)
    if (k.params > 0 && constants.contains({k.family, k.name})) k.name += "_of";
  for (const KeyName& k : out)
    if (k.name == "prefix")
      throw halo::InputError(fmt::format(
          "{}: '{}' would be named fact_keys::{}::prefix, the namespace of its family's heads in "
          "<halo/fact_keys.hpp>: rename it",
          k.origin, k.pattern, k.family));
  std::map<std::pair<std::string, std::string>, const KeyName*> seen;
  for (const KeyName& k : out)
    if (auto [it, fresh] = seen.emplace(std::pair{k.family, k.name}, &k); !fresh)
      throw halo::InputError(fmt::format(
          "{}: '{}' and '{}' ({}) would both be named fact_keys::{}::{} in <halo/fact_keys.hpp>: "
          "rename one",
          k.origin, k.pattern, it->second->pattern, it->second->origin, k.family, k.name));
  std::ranges::stable_sort(out, [](const KeyName& a, const KeyName& b) {
    return std::tie(a.family, a.name) < std::tie(b.family, b.name);
  });
  return out;
}

/// The heads of the declared patterns, by family (the scheme of key_header's comment): every
/// proper prefix of a pattern, cut at a dot, of two segments or more. Heads that would share a
/// name and an arity (`a.*.b` and `a.b.*`) are left out, both, and listed in `ambiguous`.
std::map<std::string, std::vector<KeyName>> prefix_names(const std::vector<Entry>& entries,
                                                         std::vector<std::string>& ambiguous) {
  std::map<std::tuple<std::string, std::string, std::size_t>, std::set<std::string>> named;
  for (const Entry& e : entries)
    for (const Decl& d : e.facts) {
      const std::vector<std::string> seg = segments(d.pattern);
      std::string head = seg.front();
      std::string name;
      std::size_t params = 0;
      for (std::size_t i = 1; i + 1 < seg.size(); ++i) {
        head += '.' + seg[i];
        if (seg[i] == "*") {
          ++params;
        } else {
          if (!name.empty()) name += '_';
          name += seg[i];
        }
        named[{seg.front(), name, params}].insert(head);
      }
    }
  std::map<std::string, std::vector<KeyName>> out;
  for (const auto& [key, heads] : named) {
    const auto& [family, name, params] = key;
    if (heads.size() > 1) {
      ambiguous.insert(ambiguous.end(), heads.begin(), heads.end());
      continue;
    }
    out[family].push_back(KeyName{identifier(family), identifier(name.empty() ? "key" : name),
                                  *heads.begin(), params, ""});
  }
  return out;
}

/// The generated header <halo/fact_keys.hpp>: one name per declared pattern, by family.
std::string key_header(const std::vector<Entry>& entries) {
  const std::vector<KeyName> names = key_names(entries);
  std::vector<std::string> ambiguous;
  const std::map<std::string, std::vector<KeyName>> prefixes = prefix_names(entries, ambiguous);
  std::string text =
      R"(// Generated by halo-facts-compile (src/tools/facts_compile.cpp) from checks/*/facts.json. Do not
// edit.
//
// The name of every declared fact key (issue 42): code names a fact by these, so a search for the
// name finds every place a fact is produced or read, and a key that is not declared does not
// exist here: naming it is a compile error. The scheme (docs/adding-a-probe.md), for a pattern
// FAMILY.SEG1.SEG2...:
//  - the namespace is halo::fact_keys::FAMILY;
//  - the name is the segments after the family that are not `*` or `**`, joined by `_`
//    (`ttm.pages_limit_bytes` -> ttm::pages_limit_bytes, `framework.torch.hip_version` ->
//    framework::torch_hip_version); a name spelled like a C++ keyword takes a trailing `_`
//    (`amdgpu.module.signed` -> amdgpu::module_signed, a lone `signed` -> signed_), one that
//    starts with a digit a leading `n`, and a pattern of the family alone is named `key`;
//  - a pattern without `*` is a constant, `inline constexpr std::string_view`;
//  - a pattern with `*` segments (and/or a trailing `**`) is a function taking one argument per
//    `*` and `**`, in order, anything fmt formats (an index, a card name, a string), and
//    returning the key as std::string: drm::device_id(card) is "drm." + card + ".device_id";
//    passing "*" (or "**") gives the pattern back, for FactSet::match and a probe's inputs;
//  - a function whose name a constant of its family has takes `_of`
//    (`runenv.containerenv.*` -> runenv::containerenv_of(name));
//  - two patterns that would still share a name fail the build, naming both;
//  - the heads of the patterns, for code that walks a family's keys or names a group of them
//    (`hsa.agent.*` and `hsa.agent.*.pool.*` of `hsa.agent.*.pool.*.segment`; `modprobe.options`
//    of `modprobe.options.*.*`): every proper prefix of a pattern, cut at a dot, of two segments
//    or more, is a function in FAMILY::prefix named by the same scheme, taking one argument per
//    `*` (none for a head without one) and returning the head without a trailing dot:
//    hsa::prefix::agent_pool(a, p) is "hsa.agent." + a + ".pool." + p, modprobe::prefix::options()
//    "modprobe.options". Heads of one family with one name and one arity overload by arity; two
//    with the same arity (`a.*.b` and `a.b.*`) are both left out (listed at the end).
// fact_keys::declared(key) says whether a key (or pattern) is matched by a declaration, at compile
// time, for keys written elsewhere (include/halo/fact.hpp's halo::keys).
#pragma once

#include <fmt/compile.h>
#include <fmt/format.h>

#include <array>
#include <string>
#include <string_view>

namespace halo::fact_keys {
)";
  // A function of `k.pattern` with one argument per `*` (and `**`) segment.
  const auto function = [](const KeyName& k, std::string_view name) {
    std::string params;
    std::string args;
    std::string format = k.pattern;
    for (std::size_t i = 1; i <= k.params; ++i) {
      params += fmt::format("{}const auto& s{}", i > 1 ? ", " : "", i);
      args += fmt::format(", s{}", i);
    }
    // `*` and `**` become {} in the format string ({ and } never occur in a pattern).
    for (std::size_t at = 0; (at = format.find('*', at)) != std::string::npos;) {
      const std::size_t n = format.compare(at, 2, "**") == 0 ? 2 : 1;
      format.replace(at, n, "{}");
      at += 2;
    }
    if (k.params == 0)
      return fmt::format("inline ::std::string {}() {{ return {}; }}\n", name,
                         cxx_literal(k.pattern));
    // FMT_COMPILE parses the format string at compile time (fmt/compile.h): a derivation that
    // names a thousand per-GPU keys per node in `fleet compare` spent a tenth of its time in
    // fmt::vformat parsing these strings at run time.
    return fmt::format(
        "inline ::std::string {}({}) {{ return ::fmt::format(FMT_COMPILE({}){}); }}\n", name,
        params, cxx_literal(format), args);
  };
  // The heads of `family` (prefix_names), then the end of its namespace.
  const auto close = [&](const std::string& family) {
    if (family.empty()) return;
    if (const auto it = prefixes.find(family); it != prefixes.end()) {
      text += "namespace prefix {\n";
      for (const KeyName& k : it->second)
        text += fmt::format("/// {}\n{}", k.pattern, function(k, k.name));
      text += "} // namespace prefix\n";
    }
    text += fmt::format("}} // namespace {}\n", family);
  };
  std::string family;
  for (const KeyName& k : names) {
    if (k.family != family) {
      close(family);
      family = k.family;
      text += fmt::format("\nnamespace {} {{\n", family);
    }
    if (k.params == 0) {
      text += fmt::format("inline constexpr ::std::string_view {} = {};\n", k.name,
                          cxx_literal(k.pattern));
      continue;
    }
    text += fmt::format("/// {}\n{}", k.pattern, function(k, k.name));
  }
  close(family);
  if (!ambiguous.empty())
    text += fmt::format("\n// Heads left out (two share a name and an arity): {}.\n",
                        fmt::join(ambiguous, ", "));
  text += "\n/// Every declared pattern, sorted.\ninline constexpr auto kPatterns = "
          "::std::to_array<::std::string_view>({\n";
  std::vector<std::string> patterns;
  patterns.reserve(names.size());
  for (const KeyName& k : names)
    patterns.push_back(k.pattern);
  std::ranges::sort(patterns);
  for (const std::string& p : patterns)
    text += fmt::format("    {},\n", cxx_literal(p));
  text += R"(});

/// True if dotted `key` matches declared `pattern`: a `*` segment of either matches one segment,
/// a trailing `**` of the pattern one or more (halo::key_matches, include/halo/fact.hpp, at
/// compile time).
constexpr bool matches(::std::string_view key, ::std::string_view pattern) {
  for (;;) {
    const auto kd = key.find('.');
    const auto pd = pattern.find('.');
    const ::std::string_view ks = key.substr(0, kd);
    const ::std::string_view ps = pattern.substr(0, pd);
    if (ps == "**") return pd == ::std::string_view::npos && !ks.empty();
    if (ps != "*" && ks != "*" && ps != ks) return false;
    if (kd == ::std::string_view::npos || pd == ::std::string_view::npos)
      return kd == ::std::string_view::npos && pd == ::std::string_view::npos;
    key.remove_prefix(kd + 1);
    pattern.remove_prefix(pd + 1);
  }
}

/// True if some declaration of checks/*/facts.json matches `key` (a key or a pattern).
constexpr bool declared(::std::string_view key) {
  for (const ::std::string_view p : kPatterns)
    if (matches(key, p)) return true;
  return false;
}

} // namespace halo::fact_keys
)";
  return text;
}

} // namespace

int main(int argc, char** argv) {
  if (argc != 3 && argc != 4) {
    halo::write_stderr_text("usage: halo-facts-compile CHECKS_DIR OUT.cpp [OUT_KEYS.hpp]\n");
    return 2;
  }
  const fs::path dir = argv[1];
  const std::string out = argv[2];
  try {
    const std::string schema_text = halo::read_input_file((dir / "facts.schema.json").string());
    const nlohmann::json schema = halo::parse_json_input(schema_text, "checks/facts.schema.json");
    std::vector<std::string> folders;
    for (const auto& d : fs::directory_iterator(dir))
      if (d.is_directory() && fs::exists(d.path() / "facts.json"))
        folders.push_back(d.path().filename().string());
    std::ranges::sort(folders);
    std::vector<Entry> entries;
    std::map<std::string, std::string> seen_ids;
    std::map<std::string, std::string> seen_patterns;
    for (const auto& folder : folders)
      for (Entry& e :
           read_file(dir / folder / "facts.json", folder, schema, seen_ids, seen_patterns))
        entries.push_back(std::move(e));
    check_inputs(entries);
    if (argc == 4) halo::write_output_file(argv[3], key_header(entries));
    halo::write_output_file(out, generated_source(entries));
    return 0;
  } catch (const std::exception& e) {
    halo::write_stderr_text(
        fmt::format("halo-facts-compile: invalid fact declarations: {}\n", e.what()));
    return 1;
  }
}

// SPDX-License-Identifier: MIT
// halo-facts-compile CHECKS_DIR OUT.cpp (a build step, CMakeLists.txt; issue 33): validates the
// fact declarations of the built-in probes, checks/<folder>/facts.json, and writes them as C++
// tables in static storage (checks/common/probes.hpp declared_probes(), declared_probe()), so the
// binary reads no JSON and copies no table at start-up.
//
// Every file is checked against checks/facts.schema.json (key pattern syntax, the type names of
// fact_type_name, the unit vocabulary of FactDecl::unit, a non-empty meaning and source), and
// then:
//  - every probe id is declared once over all files, and every pattern once;
//  - every pattern's family (its first segment) maps, in src/core/fact_families.cpp, to the folder
//    the file is in (one home per fact family);
//  - a meaning is one line;
//  - a source (Probe::source, docs/facts.md's paragraph under the probe's table) is one paragraph
//    on one line, and not only white space.
// The first error fails the build with "checks/FOLDER/facts.json:LINE: probe 'ID' ...: what".
// The tool reads no probe: that every built-in probe has an entry, and every entry a probe, is
// checked when the registry is built (declared_probe throws) and by
// tests/unit/test_fact_declarations.cpp.
#include <halo/error.hpp>
#include <halo/io.hpp>
#include <halo/probe.hpp>
#include <halo/schema.hpp>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
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

/// One entry of a facts.json file, validated.
struct Entry {
  std::string id;
  std::string file;   ///< "checks/FOLDER/facts.json"
  std::string source; ///< Probe::source: one line of Markdown
  std::vector<Decl> facts;
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
    Entry e{p.at("probe").get<std::string>(), origin, p.at("source").get<std::string>(), {}};
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
  text += "};\n\n// Sorted by id.\nconstexpr DeclaredProbe kProbes[] = {\n";
  for (const auto& [id, slice] : slices)
    text +=
        fmt::format("    {{{}, {},\n     {},\n     std::span<const FactDecl>(kFacts + {}, {})}},\n",
                    cxx_literal(id), cxx_literal(slice.second->file),
                    cxx_literal(slice.second->source), slice.first, slice.second->facts.size());
  text += "};\n\n} // namespace\n\nstd::span<const DeclaredProbe> declared_probes() { return "
          "kProbes; }\n\n} // namespace halo::probes\n";
  return text;
}

} // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    halo::write_stderr_text("usage: halo-facts-compile CHECKS_DIR OUT.cpp\n");
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
    halo::write_output_file(out, generated_source(entries));
    return 0;
  } catch (const std::exception& e) {
    halo::write_stderr_text(
        fmt::format("halo-facts-compile: invalid fact declarations: {}\n", e.what()));
    return 1;
  }
}

#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The build step that validates and compiles the probes' fact declarations (issue 33):
# halo-facts-compile accepts checks/*/facts.json and refuses a copy with one invalid declaration,
# naming its file, line and entry, and writes nothing then, so a bad declaration fails the build.
# Usage: facts_compile.sh HALO-FACTS-COMPILE CHECKS_DIR
set -u
tool=$(realpath "$1")
checks=$(realpath "$2")
fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
bad() { echo "FAIL: $*"; fail=1; }

"$tool" "$checks" "$tmp/ok.cpp" "$tmp/fact_keys.hpp" || bad "the source declarations were refused (exit $?)"
grep -q 'std::span<const DeclaredProbe> declared_probes()' "$tmp/ok.cpp" || bad "no tables written"
grep -q '{"ttm.module.\*.loaded", boolean, "", ' "$tmp/ok.cpp" || bad "ttm.module.*.loaded not compiled"
# The names of <halo/fact_keys.hpp> (issue 42; the scheme is docs/adding-a-probe.md): a fixed key is a
# constant in its family's namespace, a `*` pattern a function of its segments, `_of` where a constant
# of the family has the name.
for want in 'namespace ttm {' \
    'inline constexpr ::std::string_view pages_limit_bytes = "ttm.pages_limit_bytes";' \
    'inline constexpr ::std::string_view torch_hip_version = "framework.torch.hip_version";' \
    'inline ::std::string module_loaded(const auto& s1) { return ::fmt::format(FMT_COMPILE("ttm.module.{}.loaded"), s1); }' \
    'inline ::std::string options(const auto& s1, const auto& s2) { return ::fmt::format(FMT_COMPILE("modprobe.options.{}.{}"), s1, s2); }' \
    'inline ::std::string cmdline_param(const auto& s1) { return ::fmt::format(FMT_COMPILE("kernel.cmdline.param.{}"), s1); }' \
    'inline constexpr ::std::string_view containerenv = "runenv.containerenv";' \
    'inline ::std::string containerenv_of(const auto& s1) { return ::fmt::format(FMT_COMPILE("runenv.containerenv.{}"), s1); }' \
    '    "ttm.module.*.loaded",'; do
  grep -qxF "$want" "$tmp/fact_keys.hpp" || bad "<halo/fact_keys.hpp> lacks: $want"
done
# The heads of the patterns, in FAMILY::prefix: a function per proper prefix of two segments or
# more, one argument per `*`, no trailing dot; heads of one name overload by arity
# (ttm.module and ttm.module.*).
for want in \
    'inline ::std::string options() { return "modprobe.options"; }' \
    'inline ::std::string agent(const auto& s1) { return ::fmt::format(FMT_COMPILE("hsa.agent.{}"), s1); }' \
    'inline ::std::string agent_pool(const auto& s1, const auto& s2) { return ::fmt::format(FMT_COMPILE("hsa.agent.{}.pool.{}"), s1, s2); }' \
    'inline ::std::string module() { return "ttm.module"; }' \
    'inline ::std::string module(const auto& s1) { return ::fmt::format(FMT_COMPILE("ttm.module.{}"), s1); }'; do
  grep -qxF "$want" "$tmp/fact_keys.hpp" || bad "<halo/fact_keys.hpp> lacks the head: $want"
done
[[ $(grep -c '^namespace prefix {$' "$tmp/fact_keys.hpp") -ge 10 ]] || bad "few FAMILY::prefix namespaces"

# Each copy breaks checks/ttm/facts.json one way: LINES|SED|what the message says. Line 3 is the
# first probe's id ("ttm"), line 4 its source, lines 7-10 its first fact, line 111 the second
# probe's id.
breakages=(
  '8|s/"type": "bool"/"type": "boolean"/|facts.json:8: 0/facts/0/type: '
  '7|s/"ttm.module.\*.loaded"/"ttm..loaded"/|facts.json:7: 0/facts/0/pattern: '
  '7|s/"ttm.module.\*.loaded"/"ttm.module.**.loaded"/|facts.json:7: 0/facts/0/pattern: '
  '7|s/"ttm.module.\*.loaded"/"gpu.module.*.loaded"/|facts.json:7: probe '"'ttm'"': '"'gpu.module.*.loaded'"': family '"'gpu'"' lives in checks/gpus/'
  '7|s/"ttm.module.\*.loaded"/"nosuchfamily.loaded"/|facts.json:7: probe '"'ttm'"': '"'nosuchfamily.loaded'"': family '"'nosuchfamily'"' is not in src/core/fact_families.cpp'
  '13|s/"ttm.module.\*.used_by_amdgpu"/"ttm.module.*.loaded"/|facts.json:13: probe '"'ttm'"': '"'ttm.module.*.loaded'"' is declared again (first in checks/ttm/facts.json probe '"'ttm'"')'
  '111|s/"ttm_configured"/"ttm"/|facts.json:111: probe '"'ttm'"': declared again (first in checks/ttm/facts.json)'
  '10|s/is loaded"/is\\nloaded"/|facts.json:10: probe '"'ttm'"': '"'ttm.module.*.loaded'"': the meaning is one line'
  '10|s/"meaning": ".*"/"meaning": ""/|facts.json:10: 0/facts/0/meaning: '
  '27|s/"unit": "pages"/"unit": "page"/|facts.json:27: 0/facts/3/unit: '
  # The source (Probe::source, docs/facts.md's paragraph under the table): required, not empty, not
  # only white space, one paragraph on one line.
  '4|d|facts.json:2: 0: Missing required property '"'source'"'.'
  '4|s/"source": ".*"/"source": ""/|facts.json:4: 0/source: '
  '4|s/"source": ".*"/"source": " \\t "/|facts.json:4: probe '"'ttm'"': the source is only white space'
  '4|s/amd_ttm. The TTM/amd_ttm.\\n\\nThe TTM/|facts.json:4: probe '"'ttm'"': the source is one paragraph on one line'
)
for b in "${breakages[@]}"; do
  lines=${b%%|*}
  rest=${b#*|}
  sed_expr=${rest%%|*}
  want=${rest#*|}
  rm -rf "$tmp/checks"
  mkdir "$tmp/checks"
  cp "$checks/facts.schema.json" "$tmp/checks/"
  for f in "$checks"/*/facts.json; do
    mkdir "$tmp/checks/$(basename "$(dirname "$f")")"
    cp "$f" "$tmp/checks/$(basename "$(dirname "$f")")/"
  done
  sed -i "${lines}${sed_expr}" "$tmp/checks/ttm/facts.json"
  cmp -s "$checks/ttm/facts.json" "$tmp/checks/ttm/facts.json" && { bad "the breakage '$sed_expr' changed nothing"; continue; }
  rm -f "$tmp/bad.cpp"
  if "$tool" "$tmp/checks" "$tmp/bad.cpp" 2>"$tmp/err"; then
    bad "an invalid declaration ($want) was compiled"
  else
    grep -qF "checks/ttm/$want" "$tmp/err" || { bad "'checks/ttm/$want' not in:"; cat "$tmp/err"; }
  fi
  [[ -e $tmp/bad.cpp ]] && bad "tables were written for invalid declarations"
done

# Two patterns that would get one C++ name (ttm.module.*.loaded and ttm.module_loaded.*: both
# fact_keys::ttm::module_loaded) fail the build naming both, and nothing is written.
rm -rf "$tmp/checks" "$tmp/bad.cpp" "$tmp/bad.hpp"
mkdir "$tmp/checks"
cp "$checks/facts.schema.json" "$tmp/checks/"
for f in "$checks"/*/facts.json; do
  mkdir "$tmp/checks/$(basename "$(dirname "$f")")"
  cp "$f" "$tmp/checks/$(basename "$(dirname "$f")")/"
done
sed -i '13s/"ttm.module.\*.used_by_amdgpu"/"ttm.module_loaded.*"/' "$tmp/checks/ttm/facts.json"
if "$tool" "$tmp/checks" "$tmp/bad.cpp" "$tmp/bad.hpp" 2>"$tmp/err"; then
  bad "two patterns named fact_keys::ttm::module_loaded were compiled"
else
  grep -qF "'ttm.module_loaded.*' and 'ttm.module.*.loaded'" "$tmp/err" ||
    grep -qF "'ttm.module.*.loaded' and 'ttm.module_loaded.*'" "$tmp/err" ||
    { bad "the name clash is not named:"; cat "$tmp/err"; }
  grep -qF "fact_keys::ttm::module_loaded" "$tmp/err" || { bad "the clashing name is not said:"; cat "$tmp/err"; }
fi
[[ -e $tmp/bad.cpp || -e $tmp/bad.hpp ]] && bad "files were written for clashing declarations"

# Two heads with one name and one arity (ttm.module.* of ttm.module.*.loaded, ttm.*.module of
# ttm.*.module.used) are both left out, and the header says so; the other heads stay.
cp "$checks/ttm/facts.json" "$tmp/checks/ttm/facts.json"
sed -i '13s/"ttm.module.\*.used_by_amdgpu"/"ttm.*.module.used"/' "$tmp/checks/ttm/facts.json"
if ! "$tool" "$tmp/checks" "$tmp/heads.cpp" "$tmp/heads.hpp" 2>"$tmp/err"; then
  bad "declarations with two heads of one name were refused: $(cat "$tmp/err")"
else
  grep -qF 'return ::fmt::format(FMT_COMPILE("ttm.module.{}"), s1)' "$tmp/heads.hpp" && bad "an ambiguous head was named"
  grep -qF 'return ::fmt::format(FMT_COMPILE("ttm.{}.module"), s1)' "$tmp/heads.hpp" && bad "an ambiguous head was named"
  grep -qF 'inline ::std::string module() { return "ttm.module"; }' "$tmp/heads.hpp" || bad "the head ttm.module was lost"
  grep -qxF '// Heads left out (two share a name and an arity): ttm.*.module, ttm.module.*.' "$tmp/heads.hpp" ||
    bad "the heads left out are not listed"
fi
# A pattern named `prefix` (the namespace of its family's heads) fails the build naming it.
cp "$checks/ttm/facts.json" "$tmp/checks/ttm/facts.json"
sed -i '13s/"ttm.module.\*.used_by_amdgpu"/"ttm.prefix"/' "$tmp/checks/ttm/facts.json"
rm -f "$tmp/bad.cpp" "$tmp/bad.hpp"
if "$tool" "$tmp/checks" "$tmp/bad.cpp" "$tmp/bad.hpp" 2>"$tmp/err"; then
  bad "a pattern named fact_keys::ttm::prefix was compiled"
else
  grep -qF "'ttm.prefix' would be named fact_keys::ttm::prefix" "$tmp/err" || { bad "the name is not said:"; cat "$tmp/err"; }
fi
[[ -e $tmp/bad.cpp || -e $tmp/bad.hpp ]] && bad "files were written for a pattern named prefix"
exit $fail

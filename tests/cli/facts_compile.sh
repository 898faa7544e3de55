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
# What a probe reads (issue 42): its entry's inputs, reads (a described one as its text) and env, and
# the derivation flag, compiled into its DeclaredProbe.
# shellcheck disable=SC2016 # "$ROCM_PATH/.info/version" is the text of a described read, not an expansion
for want in '    "amdgpu.loaded",' '    "/sys/module/amdttm/parameters/*",' '    "$ROCM_PATH/.info/version",' \
    '    "HSA_*",' '    "WSL_DISTRO_NAME",'; do
  grep -qxF "$want" "$tmp/ok.cpp" || bad "the tables lack: $want"
done
grep -A2 '^    {"ttm_configured", ' "$tmp/ok.cpp" | grep -q 'std::span<const FactDecl>(kFacts + [0-9]*, [0-9]*), true,$' ||
  bad "ttm_configured is not compiled as a derivation"
grep -A2 '^    {"ttm", ' "$tmp/ok.cpp" | grep -q 'std::span<const FactDecl>(kFacts + [0-9]*, [0-9]*), false,$' ||
  bad "ttm is not compiled as a probe"
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
# first probe's id ("ttm"), line 4 its source, line 5 opens its inputs (6: "amdgpu.loaded"), line 9
# its reads (10: "/sys/module/ttm/parameters/*"), lines 17-20 its first fact; line 121 is the second
# probe's id (ttm_configured, a derivation: line 123 its `"derivation": true`).
breakages=(
  '18|s/"type": "bool"/"type": "boolean"/|facts.json:18: 0/facts/0/type: '
  '17|s/"ttm.module.\*.loaded"/"ttm..loaded"/|facts.json:17: 0/facts/0/pattern: '
  '17|s/"ttm.module.\*.loaded"/"ttm.module.**.loaded"/|facts.json:17: 0/facts/0/pattern: '
  '17|s/"ttm.module.\*.loaded"/"gpu.module.*.loaded"/|facts.json:17: probe '"'ttm'"': '"'gpu.module.*.loaded'"': family '"'gpu'"' lives in checks/gpus/'
  '17|s/"ttm.module.\*.loaded"/"nosuchfamily.loaded"/|facts.json:17: probe '"'ttm'"': '"'nosuchfamily.loaded'"': family '"'nosuchfamily'"' is not in src/core/fact_families.cpp'
  '23|s/"ttm.module.\*.used_by_amdgpu"/"ttm.module.*.loaded"/|facts.json:23: probe '"'ttm'"': '"'ttm.module.*.loaded'"' is declared again (first in checks/ttm/facts.json probe '"'ttm'"')'
  '121|s/"ttm_configured"/"ttm"/|facts.json:121: probe '"'ttm'"': declared again (first in checks/ttm/facts.json)'
  '20|s/is loaded"/is\\nloaded"/|facts.json:20: probe '"'ttm'"': '"'ttm.module.*.loaded'"': the meaning is one line'
  '20|s/"meaning": ".*"/"meaning": ""/|facts.json:20: 0/facts/0/meaning: '
  '37|s/"unit": "pages"/"unit": "page"/|facts.json:37: 0/facts/3/unit: '
  # What the probe reads (issue 42). An input that matches no pattern of another probe: a typo, one
  # of its own facts (a probe does not read itself), a `**` pattern (inputs are narrow).
  '6|s/"amdgpu.loaded"/"amdgpu.loded"/|facts.json:6: probe '"'ttm'"': input '"'amdgpu.loded'"' matches no pattern another probe declares'
  '6|s/"amdgpu.loaded"/"ttm.module.*.loaded"/|facts.json:6: probe '"'ttm'"': input '"'ttm.module.*.loaded'"' matches no pattern another probe declares'
  '6|s/"amdgpu.loaded"/"amdgpu.**"/|facts.json:6: 0/inputs/0: '
  # A read that is not absolute (the capture bundle could not expand it), an empty one.
  '10|s#"/sys/module/ttm/parameters/\*"#"sys/module/ttm/parameters/*"#|facts.json:10: probe '"'ttm'"': read '"'sys/module/ttm/parameters/*'"' is not an absolute path'
  '10|s#"/sys/module/ttm/parameters/\*"#""#|facts.json:10: 0/reads/0: '
  # An environment variable that is not a name or PREFIX*.
  '5|s/"inputs": \[/"env": ["HSA_*", "HSA-X"], "inputs": [/|facts.json:5: 0/env/1: '
  # A derivation reads no file and no variable; the flag is true or absent.
  '123|s#"derivation": true,#"derivation": true, "reads": ["/proc/meminfo"],#|facts.json:123: probe '"'ttm_configured'"': a derivation reads no file and no environment variable'
  '123|s#"derivation": true,#"derivation": true, "env": ["HOME"],#|facts.json:123: probe '"'ttm_configured'"': a derivation reads no file and no environment variable'
  '123|s#"derivation": true,#"derivation": false,#|facts.json:123: 1/derivation: '
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
sed -i '23s/"ttm.module.\*.used_by_amdgpu"/"ttm.module_loaded.*"/' "$tmp/checks/ttm/facts.json"
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
sed -i '23s/"ttm.module.\*.used_by_amdgpu"/"ttm.*.module.used"/' "$tmp/checks/ttm/facts.json"
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
sed -i '23s/"ttm.module.\*.used_by_amdgpu"/"ttm.prefix"/' "$tmp/checks/ttm/facts.json"
rm -f "$tmp/bad.cpp" "$tmp/bad.hpp"
if "$tool" "$tmp/checks" "$tmp/bad.cpp" "$tmp/bad.hpp" 2>"$tmp/err"; then
  bad "a pattern named fact_keys::ttm::prefix was compiled"
else
  grep -qF "'ttm.prefix' would be named fact_keys::ttm::prefix" "$tmp/err" || { bad "the name is not said:"; cat "$tmp/err"; }
fi
[[ -e $tmp/bad.cpp || -e $tmp/bad.hpp ]] && bad "files were written for a pattern named prefix"
exit $fail

// SPDX-License-Identifier: MIT
// Probes: the modules in checks/ that turn files and API calls into facts.
#pragma once

#include <halo/fact.hpp>
#include <halo/root.hpp>

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace halo {

namespace plan {
struct Plan;
} // namespace plan

/// Options that change what probes and derivations compute.
struct ProbeOptions {
  /// Memory left to the OS when computing the recommended TTM limit, in GiB (`--reserve`).
  std::int64_t reserve_gib = 4;
  /// Skip the runtime probes (ROCr, libdrm) even on the live root (`--no-runtime`).
  bool no_runtime = false;
  /// ROCr library to load first (`--hsa-library PATH`); empty: the documented search order.
  std::string hsa_library;
  /// Time limit for the ROCr child process, seconds (`--runtime-timeout S`).
  double runtime_timeout_s = 10.0;
  /// The host's root directory as seen from here (`--host-root DIR`); empty: detected
  /// (detect_host_root).
  std::string host_root;
  /// The training run to judge (`plan`, `check --model`): the plan probe (checks/plan/plan.cpp)
  /// turns it into `plan.*` facts; nullptr: no run given, and `plan.present` is false.
  std::shared_ptr<const plan::Plan> plan;
  /// Ask PyTorch itself (`--framework-deep`): run the interpreter training will use in a child
  /// process and import torch (checks/framework/framework_deep.cpp). Off: the framework.deep.*
  /// facts are not probed.
  bool framework_deep = false;
  /// The interpreter for that (`--python PATH`); empty: $VIRTUAL_ENV/bin/python, else
  /// $CONDA_PREFIX/bin/python, else python3 on the PATH training will see.
  std::string python;
  /// Time limit for importing torch and querying the GPUs, seconds (`--framework-timeout S`).
  double framework_timeout_s = 60.0;
};

/// Where the host's boot configuration is read from. Kernel state (/proc, /sys, /dev) is the
/// running kernel's in any container; /etc, /usr/lib/modprobe.d, /boot and os-release are the
/// image's unless the host's / is mounted: toolbox and distrobox mount it at /run/host
/// (containers/toolbox src/cmd/create.go, distrobox-create: `--volume /:/run/host:rslave`).
struct HostRoot {
  /// The host's root: the environment root itself outside a container, ROOT/run/host in
  /// toolbox and distrobox, or `--host-root DIR`; std::nullopt when no host root is reachable.
  std::optional<Root> root;
  /// How it was chosen ("the same root", "/run/host (toolbox)", "--host-root /host"), or why
  /// none is reachable, starting with kNotProbedPrefix so that rules needing it are skipped.
  std::string basis;
};

/// Chooses the host root for an environment root: `--host-root` when given; else ROOT/run/host
/// when a container marker is present and ROOT/run/host/etc exists; else, in a container
/// (/.dockerenv, /run/.containerenv, /run/.toolboxenv, /run/systemd/container), none; else the
/// environment root itself.
HostRoot detect_host_root(const Root& env, const std::string& host_root_flag);

/// What a probe gets: the root to read through and the options. `host` is where the host's boot
/// configuration lives (modprobe.d, boot loader, os-release); nullptr means "the same as root".
struct ProbeContext {
  const Root& root;
  const ProbeOptions& options;
  const HostRoot* host = nullptr;

  /// The root to read the host's configuration through, or nullptr when none is reachable
  /// (then host_basis() says why).
  const Root* host_config_root() const {
    if (host == nullptr) return &root;
    return host->root ? &*host->root : nullptr;
  }
  std::string host_basis() const { return host == nullptr ? "the same root" : host->basis; }
};

/// The type of an ok fact's value: which alternative of halo::Value (include/halo/fact.hpp) it
/// holds. A fact that is not ok (missing, denied, error) holds no value and has no type.
enum class FactType {
  boolean, ///< `bool`: a yes/no answer ("amdgpu.loaded").
  integer, ///< `std::int64_t`: counts, sizes, ids, versions as numbers ("mem.total_bytes").
  number,  ///< `double`: a measured or computed real number ("drm.card1.pcie.max_speed_gts").
  string,  ///< `std::string`: names, paths, versions and modes as text ("kernel.release").
  list,    ///< `std::vector<std::string>`: names, lines or entries ("kernel.cmdline.names").
};

/// True when environment variable `name` matches one of `patterns`, in the syntax of
/// Probe::env_reads: an exact name, or a prefix followed by `*` ("HSA_*" matches
/// "HSA_ENABLE_SDMA").
bool env_name_matches(std::string_view name, std::span<const std::string> patterns);

/// The word the docs use for a FactType: "bool", "int", "number", "string", "list".
std::string_view fact_type_name(FactType t);

/// The FactType of a value; std::nullopt for an empty value (std::monostate).
std::optional<FactType> fact_type_of(const Value& v);

/// What a probe declares about the facts of one key pattern: the contract docs/facts.md is
/// generated from (`halo-doctor facts --declared`), and that tests/unit/test_fact_declarations.cpp
/// checks against the facts every fixture root produces. The built-in probes' declarations are
/// data, checks/<folder>/facts.json, validated and compiled into static storage at build time
/// (src/tools/facts_compile.cpp; checks/common/probes.hpp declared_facts()), so the views point
/// into the binary's read-only data. A FactDecl never owns its text: whoever makes one keeps the
/// strings alive as long as the declaration is used.
struct FactDecl {
  /// Key pattern (`*` = one segment, trailing `**` = any tail): "drm.*.vram_total_bytes".
  std::string_view pattern;
  /// The type every ok fact matching the pattern has (where a more specific pattern of any
  /// probe matches too, that one's type applies: see ProbeRegistry::declaration_for).
  FactType type = FactType::string;
  /// The unit in plain words, as the key's suffix names it: "bytes", "pages", "MiB", "GiB",
  /// "millidegrees C", "degrees C", "microwatts", "watts", "GT/s", "lanes", "seconds", "count",
  /// "tokens"; empty for values without one (names, flags, text, ids). checks/facts.schema.json
  /// admits exactly these.
  std::string_view unit;
  /// One line: what the value says.
  std::string_view meaning;
};

/// One probe module. A probe never throws for environmental conditions: what it cannot read
/// becomes a fact with status missing/denied/error.
class Probe {
public:
  Probe() = default;
  Probe(const Probe&) = delete;
  Probe& operator=(const Probe&) = delete;
  Probe(Probe&&) = delete;
  Probe& operator=(Probe&&) = delete;
  virtual ~Probe() = default;
  /// Short id ("kernel", "ttm", "kfd_topology"), unique in the registry.
  virtual std::string_view id() const = 0;
  /// The facts this probe may produce, one declaration per key pattern (docs/facts.md). The span
  /// (and the text it views) lives as long as the probe; a built-in probe's is its entry of
  /// checks/<folder>/facts.json, compiled in.
  virtual std::span<const FactDecl> declarations() const = 0;
  /// Where the facts come from, in Markdown (a built-in probe's: its facts.json entry's `source`):
  /// files read and how, API calls, derivations, sources cited (docs/facts.md prints it).
  virtual std::string source() const = 0;
  /// Fact key patterns this probe may produce: the patterns of declarations(). The rule loader
  /// rejects a rule naming a fact no probe provides.
  std::vector<std::string> provides() const;
  /// The facts of other probes this probe reads: key patterns in the syntax of declarations()
  /// ("drm.amd_cards", "kfd.node.*.gfx_target_version"). The registry runs the probe after every
  /// probe that provides a matching key, refuses an input no other probe provides and a cycle
  /// (ProbeRegistry::resolve), and refuses at run time a read of a fact that is neither declared
  /// here nor among the probe's own declarations (FactSet::ReadGuard). Default: none.
  virtual std::vector<std::string> inputs() const { return {}; }
  /// Absolute paths or globs this probe reads (documentation and capture bundles).
  virtual std::vector<std::string> reads() const = 0;
  /// The environment variables this probe reads from `/proc/self/environ`: exact names
  /// ("VIRTUAL_ENV") or prefixes ending in `*` ("HSA_*"). This declaration is the capture
  /// bundle's allow-list: `capture` keeps the values of exactly these variables and stores every
  /// other one as `NAME=<dropped>` (src/core/bundle_redact.cpp, docs/security.md), so a probe that
  /// reads a new variable declares it here and nowhere else. Default: none.
  virtual std::vector<std::string> env_reads() const { return {}; }
  /// Reads the system and adds facts. `facts` holds the facts of earlier probes.
  virtual void collect(const ProbeContext& ctx, FactSet& facts) const = 0;
  /// True for a Derivation: a probe that reads no machine, only other probes' facts and the
  /// options; ProbeRegistry::rederive runs exactly these.
  virtual bool is_derivation() const { return false; }
};

/// What a derivation gets: the options, and no Root, so that it cannot read a file.
struct DeriveContext {
  const ProbeOptions& options;
};

/// A probe that computes facts from other probes' facts and the options (joins, decisions,
/// aliases: "which GPUs are there", "the TTM limit configured for the module amdgpu uses"), never
/// from files. Its inputs() are narrow (exact keys or `*` patterns, no `**`), so the read audit
/// (FactSet::ReadGuard) sees what it reads; the registry orders it by those inputs like any other
/// probe, and runs it again on replayed facts (ProbeRegistry::rederive).
class Derivation : public Probe {
public:
  /// Adds the derived facts to `facts`, which holds the facts of the probes it reads.
  virtual void derive(const DeriveContext& ctx, FactSet& facts) const = 0;
  /// A derivation reads no file.
  std::vector<std::string> reads() const final { return {}; }
  /// Nor the environment: it reads the `env.*` facts of the environment probe.
  std::vector<std::string> env_reads() const final { return {}; }
  /// derive() with the options only.
  void collect(const ProbeContext& ctx, FactSet& facts) const final {
    derive(DeriveContext{ctx.options}, facts);
  }
  bool is_derivation() const final { return true; }
};

/// The probes, run in the order their inputs require: a probe runs after every probe that
/// provides a fact it reads (Probe::inputs()); probes that do not depend on each other keep the
/// order they were added in.
class ProbeRegistry {
public:
  /// Adds a probe. Call resolve() after the last one.
  void add(std::unique_ptr<Probe> p);
  /// Orders the probes by their inputs (a stable topological order). Throws std::logic_error, a
  /// programming error in the probe set, when an input names a fact no other probe (nor the
  /// registry) provides, when two probes share an id, or when the inputs form a cycle (the
  /// message names its probes). collect() and rederive() refuse to run before it.
  void resolve();
  /// The probes in run order (after resolve()).
  const std::vector<std::unique_ptr<Probe>>& probes() const { return probes_; }
  /// The probes whose facts `p` reads: those providing a pattern that overlaps one of its inputs
  /// (patterns_overlap), in run order after resolve().
  std::vector<const Probe*> providers_of(const Probe& p) const;
  /// Every key pattern any probe provides, plus `bench.**` (merged from `halo-bench`).
  std::vector<std::string> provided_patterns() const;
  /// True if some provided pattern can produce `key` (which may itself contain `*`).
  bool provides(std::string_view key) const;
  /// Every declaration: the registry's own (registry_declarations()), then each probe's in order.
  const std::vector<FactDecl>& declarations() const { return decls_; }
  /// The declaration that governs a concrete fact key: of the declarations whose pattern matches
  /// it, the most specific (more literal segments, then no trailing `**`; ties: the first in
  /// declarations()). nullptr when no declaration matches. The pointer lives as long as the
  /// registry and is invalidated by add().
  const FactDecl* declaration_for(std::string_view key) const;
  /// The facts the registry itself adds: `probe.<id>.status`. (The `bench.**` facts merged from
  /// `halo-doctor bench --json` are provided but declared in docs/bench.md, not here.)
  static std::vector<FactDecl> registry_declarations();

  /// Runs every probe in order; a probe that throws is recorded as `probe.<id>.status` error.
  /// Without ctx.host, the host root is chosen by detect_host_root(ctx.root, host_root option).
  FactSet collect(const ProbeContext& ctx) const;
  /// Re-runs every derivation (Probe::is_derivation), in run order, on an existing fact set, e.g.
  /// one replayed from `--facts FILE`, so that `--reserve` and `--model` still apply. Derivations
  /// read no machine, so no root is needed.
  void rederive(const ProbeOptions& options, FactSet& facts) const;

private:
  std::vector<std::unique_ptr<Probe>> probes_;
  /// Per probe, parallel to probes_: the patterns it may read, its inputs() then the patterns
  /// it provides (the read audit's list, in that order), and where the provided ones start. Read
  /// once in add(): inputs() and declarations() build their vectors anew on each call (issue 33:
  /// resolve() and each run asked every probe again).
  struct Keys {
    std::vector<std::string> allowed;
    std::size_t provided_from = 0;
    std::span<const std::string> inputs() const { return std::span(allowed).first(provided_from); }
    std::span<const std::string> provided() const {
      return std::span(allowed).subspan(provided_from);
    }
  };
  std::vector<Keys> keys_;
  bool resolved_ = false;
  /// The patterns the registry provides itself: `bench.**` (merged bench results) and
  /// `probe.*.status`.
  static std::vector<std::string> own_patterns();
  std::vector<std::string> patterns_ = own_patterns();
  std::vector<FactDecl> decls_ = registry_declarations();
};

/// A fact family: the first segment of its keys ("ttm") and the folder of checks/ that holds every
/// probe and derivation providing it ("ttm": checks/ttm/). One folder per family, so a fact is
/// found beside the probe that reads it from the machine and the derivations that join it.
struct FactFamily {
  std::string_view prefix; ///< "ttm", "gpu", "kernel_log"
  std::string_view folder; ///< "ttm", "gpus", "kernel_log" (under checks/)
};
/// Every family of the built-in probes, sorted by prefix (src/core/fact_families.cpp, the one map;
/// tests/source/families.py checks every probe's file against it). The registry's own families
/// (`probe.*.status`, `bench.**`) are not in it.
std::span<const FactFamily> fact_families();
/// The folder of the family of `key_or_pattern` (by its first segment); empty for a key of no
/// family.
std::string_view family_folder(std::string_view key_or_pattern);

/// docs/facts.md, generated from the declarations of `reg`'s probes in registry order (`halo-doctor
/// facts --declared --format markdown`; tests/unit/test_fact_declarations.cpp checks the file is
/// current).
std::string declared_facts_markdown(const ProbeRegistry& reg);

/// The declarations as JSON (`halo-doctor facts --declared --format json`): an array of
/// {"probe", "source", "facts": [{"pattern", "type", "unit", "meaning"}]}.
std::string declared_facts_json(const ProbeRegistry& reg);

/// Records that probe `id` could not finish (its runtime child hung, crashed or could not start):
/// `probe.<id>.status` becomes an `error` fact with `reason`, which the registry keeps instead of
/// "ok". The probe's own facts still say what it found.
void mark_probe_incomplete(FactSet& facts, std::string_view id, std::string reason);

/// One probe that threw or marked itself incomplete: its id and why.
struct IncompleteProbe {
  std::string id;
  std::string reason;
};

/// The probes whose `probe.<id>.status` is not ok, in key order (the doctor could not judge
/// everything: `halo-doctor slurm` leaves the node alone then, docs/slurm.md).
std::vector<IncompleteProbe> incomplete_probes(const FactSet& facts);

} // namespace halo

// Facts: the typed, sourced observations that probes make and rules judge.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace halo {

/// How a fact came out. Absence is data: a missing sysfs file is `missing`, EACCES/EPERM is
/// `denied`, malformed text or a failed API call is `error`. Only `ok` facts carry a value.
enum class Status { ok, missing, denied, error };

/// Lower-case name of a status ("ok", "missing", "denied", "error").
std::string_view to_string(Status s);

/// Parses a status name; std::nullopt for anything else.
std::optional<Status> parse_status(std::string_view s);

/// A fact's value: none, bool, signed 64-bit integer (bytes, pages, counts), double (ratios,
/// GB/s), string, or a list of strings (kernel argument names, group names).
using Value =
    std::variant<std::monostate, bool, std::int64_t, double, std::string, std::vector<std::string>>;

/// One observation. `key` is dotted lower-case with the unit in the name (`mem.total_bytes`,
/// `ttm.pages_limit_pages`). `source` names where it came from: a path under the root
/// (`/sys/module/ttm/parameters/pages_limit`), an API call, or `derived: ...`. `reason` explains
/// a status other than ok.
struct Fact {
  std::string key;
  Value value;
  Status status = Status::ok;
  std::string source;
  std::string reason;

  bool ok() const { return status == Status::ok; }
  /// True for a fact whose probe was deliberately not run (`--no-runtime`, or a runtime probe
  /// under `--root`): status missing with a reason that starts with kNotProbedPrefix. Rules
  /// that need it are skipped with that reason, not reported as "could not be checked".
  bool not_probed() const;
};

/// Reason prefix of a fact whose probe was not run on request ("skipped: --no-runtime").
inline constexpr std::string_view kNotProbedPrefix = "skipped: ";

/// Renders a value for people: integers in decimal, doubles with up to 6 significant digits,
/// lists joined by ", ", none as "-".
std::string format_value(const Value& v);

/// Converts a value to JSON (null, bool, number, string, array of strings).
nlohmann::json value_to_json(const Value& v);

/// Converts JSON back to a value; throws std::invalid_argument for objects, nested arrays,
/// arrays with non-string members and integers beyond a signed 64-bit integer (2^64-1 is not -1).
Value value_from_json(const nlohmann::json& j);

/// An ordered map of facts by key. Putting a key twice replaces the earlier fact.
class FactSet {
public:
  /// Adds or replaces a fact.
  void put(Fact f);
  /// Shorthand for an ok fact.
  void put_ok(std::string key, Value v, std::string source);
  /// Shorthand for a fact that could not be read.
  void put_status(std::string key, Status s, std::string source, std::string reason);

  /// The fact with this exact key, or nullptr.
  const Fact* find(std::string_view key) const;
  /// The fact's value if it is ok and holds T, else std::nullopt.
  template <class T> std::optional<T> get(std::string_view key) const {
    const Fact* f = find(key);
    if (f == nullptr || !f->ok()) return std::nullopt;
    if (const T* p = std::get_if<T>(&f->value)) return *p;
    return std::nullopt;
  }
  /// An integer fact, also accepting a double with no fractional part.
  std::optional<std::int64_t> get_int(std::string_view key) const;
  /// A numeric fact (integer or double) as double.
  std::optional<double> get_number(std::string_view key) const;

  /// Keys matching a pattern whose `*` segments match exactly one dotted segment.
  std::vector<const Fact*> match(std::string_view pattern) const;

  /// Merges every fact of `other` into this set, replacing equal keys.
  void merge(const FactSet& other);

  const std::map<std::string, Fact, std::less<>>& all() const { return facts_; }
  std::size_t size() const { return facts_.size(); }

private:
  std::map<std::string, Fact, std::less<>> facts_;
};

/// Serialises facts as
/// `{"schema_version":1,"tool":{...},"facts":{key:{status,value,source[,reason]}}}`, the format
/// `halo-doctor facts --format json` writes and `check --facts FILE` reads.
nlohmann::json facts_to_json(const FactSet& facts, std::string_view tool_name,
                             std::string_view tool_version);

/// Parses the facts format. Throws halo::InputError naming `origin` and, for JSON syntax
/// errors, the line and column.
FactSet facts_from_json_text(std::string_view text, std::string_view origin);

/// Fact keys that code outside the probes reads by name (the probes declare the rest).
namespace keys {
/// The machine's host name, string (/proc/sys/kernel/hostname; checks/os.cpp).
inline constexpr std::string_view host_name = "host.name";
/// The running kernel's release, string, as `uname -r` (/proc/sys/kernel/osrelease;
/// checks/kernel.cpp). The module-file probe looks in /lib/modules/<release>.
inline constexpr std::string_view kernel_release = "kernel.release";
/// Number of AMD GPUs, integer (derived: KFD GPU nodes, else DRM cards, else PCI).
inline constexpr std::string_view gpu_count = "gpu.count";
/// The GPU a training plan runs on (HIP device 0), integer (derived; checks/derived.cpp).
inline constexpr std::string_view plan_gpu = "plan.gpu";
/// Bytes a process on that GPU can allocate (derived: gpu.N.usable_bytes).
inline constexpr std::string_view plan_capacity_bytes = "plan.capacity_bytes";
/// On an APU, the bytes it could allocate with the recommended TTM limit (derived).
inline constexpr std::string_view plan_capacity_with_ttm_fix_bytes =
    "plan.capacity_with_ttm_fix_bytes";
/// Whether the machine is a VM, string: "none", systemd-detect-virt's name, "vm-other"
/// (derived from /sys/class/dmi/id and /proc/cpuinfo; checks/derived.cpp).
inline constexpr std::string_view host_virtualization = "host.virtualization";
/// PRETTY_NAME of os-release, string (checks/os.cpp).
inline constexpr std::string_view os_pretty_name = "os.pretty_name";
/// Where the doctor runs, string: "host" or the container kind (derived; checks/derived.cpp).
inline constexpr std::string_view host_runs_in = "host.runs_in";
/// The site directory the framework probe found torch in, string (checks/framework.cpp).
inline constexpr std::string_view framework_python_env = "framework.python_env";
/// torch.__version__, string (torch/version.py; checks/framework.cpp).
inline constexpr std::string_view framework_torch_version = "framework.torch.version";
/// "rocm", "cuda" or "cpu", string (checks/framework.cpp).
inline constexpr std::string_view framework_torch_build = "framework.torch.build";
/// torch.version.hip, string (checks/framework.cpp).
inline constexpr std::string_view framework_torch_hip_version = "framework.torch.hip_version";
/// The ROCm release a wheel bundles, "MAJOR.MINOR" string (derived; checks/derived.cpp).
inline constexpr std::string_view framework_torch_rocm_version = "framework.torch.rocm_version";
/// The gfx targets a ROCm wheel has kernels for, list of strings (derived; checks/derived.cpp).
inline constexpr std::string_view framework_torch_kernel_targets = "framework.torch.kernel_targets";
/// `gpu.N.<field>`: a per-GPU derived fact (docs/facts.md lists the fields).
std::string gpu(std::int64_t index, std::string_view field);
} // namespace keys

/// True if dotted `key` matches `pattern`, where a `*` segment matches one segment and a
/// trailing `**` segment matches one or more.
bool key_matches(std::string_view pattern, std::string_view key);

} // namespace halo

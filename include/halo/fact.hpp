// SPDX-License-Identifier: MIT
// Facts: the typed, sourced observations that probes make and rules judge.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <functional>
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
/// `ttm.pages_limit_pages`). `source` names where it came from inside the root or the runtime: a
/// path under the root (`/sys/module/ttm/parameters/pages_limit`), an API call, or `derived: ...`
/// naming the facts or the documented table it follows from; never a file of this repository
/// (moving a probe's code must not change a report). `probe` names the probe that read it
/// (Probe::id(), e.g. "kfd_topology", "gpu_list"): the registry sets it while the probe runs
/// (FactSet::set_producer); a fact a derivation copies keeps the probe that read it; empty for
/// the registry's own facts and for a facts file written before the field. `reason` explains a
/// status other than ok.
struct Fact {
  std::string key;
  Value value;
  Status status = Status::ok;
  std::string source;
  std::string reason;
  std::string probe;

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
  /// Audits reads: called with each key find() looks up (get(), get_int(), get_number() and a
  /// literal match() go through find()) and each key a wildcard match() returns. It may throw to
  /// refuse the read; the probe registry's records the first key a probe does not declare
  /// (Probe::declarations(), Probe::inputs()) and lets the read go on, then reports the probe
  /// as failed (ProbeRegistry::collect).
  using ReadGuard = std::function<void(std::string_view key)>;

  FactSet() = default;
  ~FactSet() = default;
  /// Copies and moves take the facts, never the read guard or the producer.
  FactSet(const FactSet& other) : facts_(other.facts_), star_keys_(other.star_keys_) {}
  FactSet(FactSet&& other) noexcept
      : facts_(std::move(other.facts_)), star_keys_(other.star_keys_) {}
  FactSet& operator=(const FactSet& other) {
    if (this != &other) {
      facts_ = other.facts_;
      star_keys_ = other.star_keys_;
    }
    return *this;
  }
  FactSet& operator=(FactSet&& other) noexcept {
    facts_ = std::move(other.facts_);
    star_keys_ = other.star_keys_;
    return *this;
  }

  /// Sets the read guard (nullptr: none). The guard must outlive its use; the registry
  /// clears it when the probe returns.
  void set_read_guard(const ReadGuard* guard) { guard_ = guard; }

  /// Sets the probe whose facts put() now records (Fact::probe, where the fact names none);
  /// empty: none. The probe registry sets it while a probe runs. `id` must outlive its use.
  void set_producer(std::string_view id) { producer_ = id; }

  /// Adds or replaces a fact; one without a probe gets the producer (set_producer()).
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

  /// Every fact, in key order. Refused (std::logic_error) while a read guard is set: a probe
  /// reads by key or pattern (find(), match()), so that what it reads can be audited.
  const std::map<std::string, Fact, std::less<>>& all() const;
  std::size_t size() const { return facts_.size(); }

private:
  std::map<std::string, Fact, std::less<>> facts_;
  /// Some key holds a `*` (only a hostile facts file writes one): match() then reads every key,
  /// since key_matches lets a `*` in the key stand for any segment.
  bool star_keys_ = false;
  const ReadGuard* guard_ = nullptr;
  std::string_view producer_;
};

/// Serialises facts as
/// `{"schema_version":1,"tool":{...},"facts":{key:{status,value,source[,reason][,probe]}}}`, the
/// format `halo-doctor facts --format json` writes and `check --facts FILE` reads.
nlohmann::json facts_to_json(const FactSet& facts, std::string_view tool_name,
                             std::string_view tool_version);

/// Parses the facts format. Throws halo::InputError naming `origin` and, for JSON syntax
/// errors, the line and column. `probe` is optional (files written before it have none; their
/// sources may still name a file of the repository, kept as text).
FactSet facts_from_json_text(std::string_view text, std::string_view origin);

/// Fact keys that code outside the probes reads by name (the probes declare the rest).
namespace keys {
/// Every fact `halo-doctor bench --json` writes and `--add-facts FILE` merges (pattern;
/// docs/bench.md declares them).
inline constexpr std::string_view bench_all = "bench.**";
/// The machine's host name, string (/proc/sys/kernel/hostname; checks/host/os.cpp).
inline constexpr std::string_view host_name = "host.name";
/// The running kernel's release, string, as `uname -r` (/proc/sys/kernel/osrelease;
/// checks/kernel_args/kernel.cpp). The module-file probe looks in /lib/modules/<release>.
inline constexpr std::string_view kernel_release = "kernel.release";
/// Number of AMD GPUs, integer (derived: KFD GPU nodes, else DRM cards, else PCI).
inline constexpr std::string_view gpu_count = "gpu.count";
/// The GPU a training plan runs on (HIP device 0), integer (derived; checks/plan/plan_gpu.cpp).
inline constexpr std::string_view plan_gpu = "plan.gpu";
/// Bytes a process on that GPU can allocate (derived: gpu.N.usable_bytes).
inline constexpr std::string_view plan_capacity_bytes = "plan.capacity_bytes";
/// On an APU, the bytes it could allocate with the recommended TTM limit (derived).
inline constexpr std::string_view plan_capacity_with_ttm_fix_bytes =
    "plan.capacity_with_ttm_fix_bytes";
/// Whether the machine is a VM, string: "none", systemd-detect-virt's name, "vm-other"
/// (derived from /sys/class/dmi/id and /proc/cpuinfo; checks/host/host_derive.cpp).
inline constexpr std::string_view host_virtualization = "host.virtualization";
/// PRETTY_NAME of os-release, string (checks/host/os.cpp).
inline constexpr std::string_view os_pretty_name = "os.pretty_name";
/// Where the doctor runs, string: "host", "wsl2" or the container kind (derived;
/// checks/host/host_derive.cpp).
inline constexpr std::string_view host_runs_in = "host.runs_in";
/// Running in WSL2, bool (kernel release, WSL_INTEROP, WSLInterop, /dev/dxg; checks/host/wsl.cpp).
inline constexpr std::string_view wsl_wsl2 = "wsl.wsl2";
/// `/dev/dxg` is a character device, bool (checks/host/wsl.cpp).
inline constexpr std::string_view wsl_dxg_exists = "wsl.dxg.exists";
/// The skip reason of a per-GPU rule when no GPU is listed, string: empty outside WSL2, where the
/// engine says "no AMD GPU found" (checks/host/wsl.cpp).
inline constexpr std::string_view wsl_no_gpu_message = "wsl.no_gpu_message";
/// The site directory the framework probe found torch in, string (checks/framework/framework.cpp).
inline constexpr std::string_view framework_python_env = "framework.python_env";
/// torch.__version__, string (torch/version.py; checks/framework/framework.cpp).
inline constexpr std::string_view framework_torch_version = "framework.torch.version";
/// "rocm", "cuda" or "cpu", string (checks/framework/framework.cpp).
inline constexpr std::string_view framework_torch_build = "framework.torch.build";
/// torch.version.hip, string (checks/framework/framework.cpp).
inline constexpr std::string_view framework_torch_hip_version = "framework.torch.hip_version";
/// The ROCm release a wheel bundles, "MAJOR.MINOR" string (derived; checks/framework/).
inline constexpr std::string_view framework_torch_rocm_version = "framework.torch.rocm_version";
/// The gfx targets a ROCm wheel has kernels for, list of strings (derived; checks/framework/).
inline constexpr std::string_view framework_torch_kernel_targets = "framework.torch.kernel_targets";
/// The ROCm release of the ROCr library the doctor loaded, string, e.g. "6.4.1"
/// (PREFIX/.info/version; checks/runtime/hsa.cpp).
inline constexpr std::string_view hsa_rocm_version = "hsa.rocm_version";
/// MemTotal of /proc/meminfo, integer bytes (kB x 1024; checks/host/memory.cpp).
inline constexpr std::string_view mem_total_bytes = "mem.total_bytes";
/// The TTM module amdgpu uses, string: "ttm", "amdttm" or "amd_ttm" (the holders link of
/// /sys/module/<m>/holders/amdgpu, else DKMS amdgpu -> amdttm; checks/ttm/ttm.cpp).
inline constexpr std::string_view ttm_module = "ttm.module";
/// The active TTM pages_limit, integer bytes (units::kTtmPageBytes x the pages of
/// /sys/module/<ttm.module>/parameters/pages_limit; checks/ttm/ttm.cpp).
inline constexpr std::string_view ttm_pages_limit_bytes = "ttm.pages_limit_bytes";
/// The TTM limit halo-doctor recommends, integer bytes: (floor(MemTotal in GiB) - --reserve)
/// GiB (derived; checks/ttm/ttm_derive.cpp).
inline constexpr std::string_view ttm_recommended_bytes = "ttm.recommended_bytes";
/// The largest TTM limit that leaves the operating system its headroom, integer bytes:
/// MemTotal minus units::kTtmOsHeadroomBytes (derived; checks/ttm/ttm_derive.cpp).
inline constexpr std::string_view ttm_max_limit_bytes = "ttm.max_limit_bytes";
/// ID of os-release, string, e.g. "ubuntu" (/etc/os-release, else /usr/lib/os-release;
/// checks/host/os.cpp).
inline constexpr std::string_view os_id = "os.id";
/// The uid the doctor runs as, integer (Uid: of /proc/self/status; checks/host/device_access.cpp).
inline constexpr std::string_view user_uid = "user.uid";
/// The name of that uid, string (/etc/passwd; checks/host/device_access.cpp).
inline constexpr std::string_view user_name = "user.name";
/// SUDO_USER of the doctor's environment, string: who ran sudo (/proc/self/environ;
/// checks/framework/environment.cpp).
inline constexpr std::string_view env_sudo_user = "env.sudo_user";
/// The boot stack that owns the kernel command line, string a fix::parse_stack name
/// ("grub-debian", "nixos", ...); an error fact when strong signals name two stacks
/// (checks/boot/boot_stack.cpp).
inline constexpr std::string_view boot_stack = "boot.stack";
/// Why boot.stack is what it is, list of strings, one per signal ("/etc/os-release: ID=ubuntu",
/// "update-grub is installed (/usr/sbin)"; checks/boot/boot_stack.cpp).
inline constexpr std::string_view boot_evidence = "boot.evidence";
/// The *.cfg files of /etc/default/grub.d, list of file names (checks/boot/boot_stack.cpp).
inline constexpr std::string_view boot_grub_d_files = "boot.grub_d_files";
/// The lines of the NixOS configuration (/etc/nixos/*.nix, one directory deep) that hold a
/// ttm/amdttm/amdgpu/iommu kernel parameter, list of "PATH:LINE: TEXT"
/// (checks/boot/boot_stack.cpp).
inline constexpr std::string_view boot_nixos_kernel_param_lines = "boot.nixos_kernel_param_lines";
/// The tool that builds the initramfs, string, e.g. "update-initramfs", "dracut"
/// (derived from boot.tools; checks/boot/boot_stack.cpp).
inline constexpr std::string_view boot_initramfs_tool = "boot.initramfs_tool";
/// How the host's / was found, string: "the same root (not in a container)", "--host-root DIR"
/// or "/run/host (the host's / in this toolbox container)"; missing, with the reason, in a
/// container without it (detect_host_root, src/core/host_root.cpp; checks/host/runenv.cpp).
inline constexpr std::string_view runenv_host_root = "runenv.host_root";
/// The kernel log's lines about amdgpu, firmware and module signing, list of strings with the
/// time as dmesg prints it (/dev/kmsg, or ROOT/.halo/dmesg.txt under --root;
/// checks/kernel_log/kernel_log.cpp).
inline constexpr std::string_view kernel_log_lines = "kernel_log.lines";
/// Which firmware files that failed to load at boot are on disk now, list of strings
/// (/lib/firmware and the kernel's other firmware paths; checks/kernel_log/kernel_log.cpp).
inline constexpr std::string_view kernel_log_firmware_on_disk = "kernel_log.firmware_on_disk";

/// Key prefixes of whole families of facts: every key that starts with one belongs to it.
/// The runtime HSA probe's facts (ROCr through hsa_init; checks/runtime/hsa.cpp).
inline constexpr std::string_view hsa_prefix = "hsa.";
/// The runtime libdrm_amdgpu probe's facts (amdgpu_query_*; checks/gpus/libdrm.cpp).
inline constexpr std::string_view libdrm_prefix = "libdrm.";
/// The framework probes' facts (a Python environment's torch; checks/framework/framework.cpp,
/// checks/framework/framework_deep.cpp).
inline constexpr std::string_view framework_prefix = "framework.";
/// The amdgpu module file's facts (libkmod and modinfo of the module modprobe would load;
/// checks/kernel_args/module_file.cpp).
inline constexpr std::string_view amdgpu_module_prefix = "amdgpu.module.";
/// Prefix of the wsl probe's facts (checks/host/wsl.cpp): librocdxg, DXCore and ROCr are looked up
/// as binaries a capture bundle does not store, so a bundle keeps these facts as they were read.
inline constexpr std::string_view wsl_prefix = "wsl.";

/// `gpu.N.<field>`: a per-GPU derived fact (docs/facts.md lists the fields).
std::string gpu(std::int64_t index, std::string_view field);
/// `gpu.<index>.<field>` with the index as text: `gpu("*", field)` is the pattern matching
/// that field on every GPU.
std::string gpu(std::string_view index, std::string_view field);
/// `hsa.gpu.<index>.<field>`: a fact of ROCr's GPU agent `index`, numbered among the GPUs ROCr
/// sees (ROCR_VISIBLE_DEVICES), not as gpu.N (checks/runtime/hsa.cpp); `hsa_gpu("*", field)` is a
/// pattern.
std::string hsa_gpu(std::string_view index, std::string_view field);
/// `modprobe.options.<module>.<param>`: the value modprobe.d gives a module parameter, string,
/// with `file:line` as its source (checks/kernel_args/modprobe.cpp).
std::string modprobe_option(std::string_view module, std::string_view param);
/// `probe.<id>.status`: "ok", or an error fact when probe `id` threw or could not finish
/// (the probe registry, src/core/registry.cpp).
std::string probe_status(std::string_view id);

/// The fields of `gpu.N.<field>` that code outside the probes reads (derived per GPU by the
/// derivations of checks/gpus/, most as aliases of the GPU's DRM card `drm.<card>.<field>`).
namespace gpu_field {
/// The PCI address of the GPU's DRM card, string, e.g. "0000:c3:00.0".
inline constexpr std::string_view pci_slot = "pci_slot";
/// The gfx target, string, e.g. "gfx1151" (KFD topology, else the PCI device id table).
inline constexpr std::string_view gfx_target = "gfx_target";
/// The GPU's marketing name from the PCI device id table, string, e.g. "Strix Halo (Radeon
/// 8060S/8050S/8040S)" (checks/gpus/gfx.cpp).
inline constexpr std::string_view name = "name";
/// GTT size amdgpu reports, integer bytes (mem_info_gtt_total).
inline constexpr std::string_view gtt_total_bytes = "gtt_total_bytes";
/// VRAM (or an APU's carve-out) size amdgpu reports, integer bytes (mem_info_vram_total).
inline constexpr std::string_view vram_total_bytes = "vram_total_bytes";
/// What a process on the GPU can allocate, integer bytes (docs/plan.md "Capacity").
inline constexpr std::string_view usable_bytes = "usable_bytes";
/// Negotiated PCIe link speed, double GT/s (current_link_speed).
inline constexpr std::string_view pcie_current_speed_gts = "pcie.current_speed_gts";
/// Maximum PCIe link speed, double GT/s (max_link_speed).
inline constexpr std::string_view pcie_max_speed_gts = "pcie.max_speed_gts";
/// Negotiated PCIe link width, integer lanes (current_link_width).
inline constexpr std::string_view pcie_current_width = "pcie.current_width";
/// Maximum PCIe link width, integer lanes (max_link_width).
inline constexpr std::string_view pcie_max_width = "pcie.max_width";
/// Junction (hotspot) temperature, integer millidegrees Celsius (hwmon temp*_input).
inline constexpr std::string_view temp_junction_mc = "temp.junction_mc";
/// Memory (HBM/VRAM) temperature, integer millidegrees Celsius (hwmon temp*_input).
inline constexpr std::string_view temp_mem_mc = "temp.mem_mc";
/// Edge temperature, integer millidegrees Celsius (hwmon temp*_input).
inline constexpr std::string_view temp_edge_mc = "temp.edge_mc";
/// Power cap the SMU holds the GPU to, integer microwatts (hwmon power1_cap).
inline constexpr std::string_view power_cap_uw = "power.cap_uw";
/// The default power cap, integer microwatts (hwmon power1_cap_default).
inline constexpr std::string_view power_cap_default_uw = "power.cap_default_uw";
/// Socket power the SMU reports, watts (gpu_metrics average_socket_power;
/// checks/gpus/gpu_metrics.cpp).
inline constexpr std::string_view metrics_socket_power_w = "metrics.socket_power_w";
/// Thermal throttler reasons active now, list of strings (gpu_metrics indep_throttle_status).
inline constexpr std::string_view metrics_throttle_thermal = "metrics.throttle_thermal";
/// Power throttler reasons active now, list of strings (gpu_metrics indep_throttle_status).
inline constexpr std::string_view metrics_throttle_power = "metrics.throttle_power";
/// Current throttler reasons active now, list of strings (gpu_metrics indep_throttle_status).
inline constexpr std::string_view metrics_throttle_current = "metrics.throttle_current";
/// GPUs in the GPU's XGMI hive, itself included, integer (xgmi_num_hops; checks/gpus/xgmi.cpp).
inline constexpr std::string_view xgmi_hive_size = "xgmi.hive_size";
/// Logical GPUs (KFD nodes) of the GPU's card, integer: 1 in SPX, 8 in CPX on an MI300X.
inline constexpr std::string_view partition_nodes = "partition_nodes";
} // namespace gpu_field

/// The fields of `hsa.gpu.N.<field>` that code outside the probes reads (checks/runtime/hsa.cpp).
namespace hsa_gpu_field {
/// Size of the agent's coarse-grained global memory pool, integer bytes
/// (hsa_amd_memory_pool_get_info HSA_AMD_MEMORY_POOL_INFO_SIZE).
inline constexpr std::string_view coarse_pool_bytes = "coarse_pool_bytes";
} // namespace hsa_gpu_field
} // namespace keys

/// True if dotted `key` matches `pattern`, where a `*` segment matches one segment and a
/// trailing `**` segment matches one or more.
bool key_matches(std::string_view pattern, std::string_view key);

/// True when some concrete key matches both patterns (`*` = one segment, a trailing `**` = one or
/// more segments, as in key_matches): "drm.*.render_minor" and "drm.card1.**" overlap,
/// "drm.amd_cards" and "drm.*.render_minor" do not. The probe registry orders probes by it.
bool patterns_overlap(std::string_view a, std::string_view b);

} // namespace halo

// SPDX-License-Identifier: MIT
// Probe: Windows Subsystem for Linux 2 (WSL2), where ROCm reaches the GPU through the Windows
// driver (/dev/dxg, DXCore, librocdxg) instead of amdgpu and /dev/kfd. Each fact from its source:
//
// Recognising WSL2 (any one marker is enough; each is recorded as evidence):
//   /proc/sys/kernel/osrelease  Microsoft's WSL2 kernels are named X.Y.Z-microsoft-standard-WSL2
//                               ("uname -r"; microsoft/WSL issues 423 and 4555: "microsoft" and
//                               "WSL2" in the release; WSL1's fake release ends in "-Microsoft").
//                               A user's own kernel ([wsl2] kernel=) may carry any name, so the
//                               other markers count too.
//   WSL_INTEROP, WSL_DISTRO_NAME  set by WSL's init in every process of a distro; WSL_INTEROP only
//                               in WSL2 (microsoft/WSL issue 4555).
//   /proc/sys/fs/binfmt_misc/WSLInterop  registered by WSL's /init (microsoft/WSL issue 423);
//                               "WSLInterop-late" when systemd re-registers it.
//   /dev/dxg                    the dxgkrnl driver's misc device (WSL2-Linux-Kernel
//                               drivers/hv/dxgkrnl/dxgmodule.c: name "dxg", mode 0666); dxgkrnl is
//                               not in mainline Linux, so the node is WSL2's alone.
//   /sys/bus/vmbus/drivers/dxgkrnl  the same driver registered on the Hyper-V VMBus (the kernel
//                               log's "hv_vmbus: registering driver dxgkrnl"). Its
//                               "dxgkio_query_adapter_info: Ioctl failed: -22" lines appear on
//                               working machines too (microsoft/WSL issue 11293), so they judge
//                               nothing.
//
// ROCm on WSL2 (https://github.com/ROCm/librocdxg README, "Load the AMD ROCDXG library",
// "Container Launch", "WSL Compatibility Matrix"; AMD "Use ROCm on Radeon and Ryzen", "Install WSL
// with ROCDXG"):
//   librocdxg.so                ROCr's ThunkLoader::whoami() (rocm-systems projects/rocr-runtime
//                               runtime/hsa-runtime/core/runtime/thunk_loader.cpp) opens /dev/dxg
//                               O_RDWR when DXG detection is on and then dlopen()s "librocdxg.so"
//                               by that unversioned name ("Cannot load librocdxg.so" otherwise).
//                               dlopen(3) searches the caller's DT_RPATH (only without a
//                               DT_RUNPATH), LD_LIBRARY_PATH, the caller's DT_RUNPATH, ld.so.cache
//                               (the directories of /etc/ld.so.conf, ldconfig(8)) and the trusted
//                               directories: checks/common/dynamic_loader.hpp, the one model.
//                               librocdxg installs to /opt/rocm/lib by default (its CMakeLists.txt
//                               CMAKE_INSTALL_PREFIX) and runs ldconfig. It needs ROCr 7.1 or later
//                               ("a ROCm runtime feature introduced in ROCm 7.1"); librocdxg 1.1.0
//                               is matched with ROCm 7.2.x.
//   HSA_ENABLE_DXG_DETECTION    ROCr's Flag::Refresh() (core/util/flag.h): before ROCm 7.13 only
//                               the value "1" turns DXG detection on (the README's step 4); from
//                               7.13 it is on unless the value is "0" (rocm-systems PR 3863,
//                               "Enable DXG detection by default"; librocdxg issue 34: "=1 is to
//                               pair with rocm prev 7.13").
//   libdxcore.so                Microsoft's DXCore in /usr/lib/wsl/lib, which librocdxg loads
//                               (shared/src/dxcore_loader.cpp); a container mounts it at
//                               /usr/lib/libdxcore.so (README, "Container Launch").
// ROCm from TheRock's Python wheels (issue 45):
//   SITE/_rocm_sdk_core/lib     rocm-sdk-core's runtime libraries (TheRock build_tools/packaging/
//                               python/templates/rocm/src/rocm_sdk/_dist_info.py: LibraryEntry
//                               "hsa-runtime64", package "core", posix_relpath "lib"; the Python
//                               package is "_" + "rocm-sdk-core" with '-' as '_' plus a nonce,
//                               empty in the released wheels: librocdxg issue 46 shows
//                               site-packages/_rocm_sdk_core/lib/libhsa-runtime64.so.1). `import
//                               torch` preloads ROCr from there (torch/_rocm_init.py; issue 46's
//                               collect_env loads exactly that file), so it is the ROCr training in
//                               that environment uses, whatever /opt/rocm holds. SITE is the site
//                               directory the framework probe judges (framework.python_env), its
//                               release rocm_install's rocm.sdk.version.
//   SITE/_rocm_sdk_devel/lib    `rocm-sdk path --root` (rocm_sdk/__main__.py _do_path:
//                               _devel.get_devel_root(), the expanded `_rocm_sdk_devel` package;
//                               its runtime files are hard links to _rocm_sdk_core's, _devel.py
//                               _lock_and_expand). librocdxg's README, "Build with TheRock
//                               Wheels", installs librocdxg.so into `$(rocm-sdk path --root)/lib`.
//   Loader path                 the same dlopen(3) search from the wheel's ROCr: its DT_RUNPATH
//   with
//                               $ORIGIN = SITE/_rocm_sdk_core/lib. A wheel's RUNPATH can only hold
//                               $ORIGIN-relative entries (the wheels are relocatable: _devel.py,
//                               "RPATH setup relies on this sibling behavior"), so when it cannot
//                               be read a librocdxg outside SITE/_rocm_sdk_* is still judged out of
//                               its reach. rocm-systems PR 8912 (July 2026) adds a last try in
//                               ROCr's own directory and PR 11241 (September 2026) the versioned
//                               name librocdxg.so.1 (thunk_loader_linux.cpp, rocdxg_version.h
//                               ROCDXG_LIB_VERSION_MAJOR 1); which release first carries them is
//                               not documented, so a librocdxg reached only that way is unknown.
// GPU-PV adapters (issue 45): dxgkrnl binds two VMBus device types (dxgmodule.c id_table): the
// global channel {DDE9CBC0-5060-4436-9448-EA1254A5D177}, behind /dev/dxg, and one channel per
// paravirtualized GPU {6E382D18-3336-4F4B-ACC4-2B7703D4DF4A} ("Per GPU Device GUID",
// include/linux/hyperv.h HV_GPUP_DXGK_VGPU_GUID). The VMBus core shows each device's type in
// /sys/bus/vmbus/devices/*/class_id as "{guid}" (Documentation/ABI/stable/sysfs-bus-vmbus). No
// per-GPU channel with /dev/dxg present: Windows offers this VM no GPU-PV adapter.
// Not readable from inside WSL: the Windows driver's version (Adrenalin) and which adapter a
// per-GPU channel is (only DXCore enumerates adapters); ROCr itself (the hsa probe) is what tells.
#include "dynamic_loader.hpp"
#include "probe_util.hpp"
#include "probes.hpp"
#include "runtime/hsa.hpp"

#include <halo/fact_keys.hpp>
#include <halo/rules.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace halo::probes {
namespace {

namespace wsl_keys = fact_keys::wsl;

constexpr const char* kDxg = "/dev/dxg";
constexpr const char* kLibDxcore = "libdxcore.so";
constexpr const char* kLibRocdxg = "librocdxg.so"; // the name ROCr dlopen()s (thunk_loader.cpp)
/// The per-GPU dxgkrnl VMBus channel's type (include/linux/hyperv.h HV_GPUP_DXGK_VGPU_GUID), as
/// the VMBus core prints class_id ("{%pUl}", lower case).
constexpr const char* kVgpuClassId = "{6e382d18-3336-4f4b-acc4-2b7703d4df4a}";

/// The variables it reads: the `env` of its checks/host/facts.json entry (Probe::env_reads).
const std::vector<std::string>& env_names() {
  static const std::vector<std::string> names = declared_env_reads("wsl");
  return names;
}

/// The variables of env_names() in /proc/self/environ (the one reader, probe_util.hpp
/// read_environ); nullopt when it cannot be read (`r` says why).
std::optional<std::map<std::string, std::string, std::less<>>> read_env(const Root& root,
                                                                        EnvironRead& r) {
  r = read_environ(root, env_names());
  if (!r.ok()) return std::nullopt;
  return r.vars;
}

void push_unique(std::vector<std::string>& v, std::string s) {
  if (std::find(v.begin(), v.end(), s) == v.end()) v.push_back(std::move(s));
}

/// `wsl.rocm.version`: the release of the ROCm at `rocm_root`, as the rocm_install probe read it
/// (checks/runtime/rocm_install.cpp: `.info/version`, else TheRock's manifest), when that probe's
/// installation is this one; else what it said, or why the two differ.
void put_rocm_release(FactSet& facts, const std::string& rocm_root) {
  const std::string key(wsl_keys::rocm_version);
  const Fact* version = facts.find(fact_keys::rocm::install_version);
  const auto prefix = facts.get<std::string>(fact_keys::rocm::install_prefix);
  if (version == nullptr) {
    facts.put_status(key, Status::missing, std::string(fact_keys::rocm::install_version),
                     "the ROCm release was not read");
  } else if (!version->ok() || !prefix) {
    facts.put_status(key, version->status, version->source, version->reason);
  } else if (*prefix != rocm_root) {
    facts.put_status(
        key, Status::missing, rocm_root,
        fmt::format("{} does not say its release (the release read is {}'s)", rocm_root, *prefix));
  } else if (auto v = facts.get<std::string>(fact_keys::rocm::install_version)) {
    facts.put_ok(key, *v, version->source);
  } else {
    facts.put_status(key, Status::error, version->source, "not a string");
  }
}

/// A WSL2 kernel's release, one line: Microsoft's kernels are "5.15.153.1-microsoft-standard-WSL2"
/// (WSL2-Linux-Kernel's CONFIG_LOCALVERSION), a user's own build keeps "microsoft" and "WSL2" in
/// it; compared ignoring case. WSL1 reports "4.4.0-19041-Microsoft" (microsoft/WSL issue 423).
bool wsl2_release(std::string_view release) {
  if (release.find('\n') != std::string_view::npos) return false;
  std::string low(release);
  std::transform(low.begin(), low.end(), low.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  const std::size_t ms = low.find("microsoft");
  return (ms != std::string::npos && low.find("wsl2", ms + 9) != std::string::npos) ||
         low.find("-microsoft-standard") != std::string::npos;
}

/// TheRock's rocm-sdk-core in the judged Python environment (see the header).
struct Sdk {
  std::optional<std::string> site;    ///< framework.python_env, when known
  std::optional<std::string> lib_dir; ///< SITE/_rocm_sdk_core/lib, when it holds ROCr
  std::string source;                 ///< what was looked at
  std::string why;                    ///< why there is none
};

Sdk find_sdk(const Root& root, const FactSet& facts) {
  Sdk sdk;
  const std::string_view python_env = fact_keys::framework::python_env;
  const Fact* env = facts.find(python_env);
  if (env == nullptr || !env->ok()) {
    sdk.source = python_env;
    sdk.why = fmt::format("no Python environment with torch was found ({})", python_env);
    return sdk;
  }
  sdk.site = facts.get<std::string>(python_env);
  if (!sdk.site || sdk.site->empty() || sdk.site->front() != '/') {
    sdk.site.reset();
    sdk.source = python_env;
    sdk.why = fmt::format("{} is not an absolute path", python_env);
    return sdk;
  }
  const std::string lib = join_path(*sdk.site, "_rocm_sdk_core/lib");
  sdk.source = join_path(lib, hsa::kLibraryName);
  if (root.exists(sdk.source))
    sdk.lib_dir = lib;
  else
    sdk.why = "no TheRock rocm-sdk-core runtime (_rocm_sdk_core/lib/libhsa-runtime64.so.1) in " +
              *sdk.site;
  return sdk;
}

void put_sdk_facts(FactSet& facts, const Sdk& sdk) {
  const std::string version_key(wsl_keys::sdk_version);
  facts.put_ok(std::string(wsl_keys::sdk_present), sdk.lib_dir.has_value(), sdk.source);
  if (!sdk.lib_dir) {
    for (const auto k : {wsl_keys::sdk_lib_dir, wsl_keys::sdk_version})
      facts.put_status(std::string(k), Status::missing, sdk.source, sdk.why);
    return;
  }
  facts.put_ok(std::string(wsl_keys::sdk_lib_dir), *sdk.lib_dir, sdk.source);
  const std::string_view sdk_release = fact_keys::rocm::sdk_version;
  if (const Fact* v = facts.find(sdk_release); v == nullptr)
    facts.put_status(version_key, Status::missing, std::string(sdk_release),
                     "the release was not read");
  else if (auto s = facts.get<std::string>(sdk_release); v->ok() && s)
    facts.put_ok(version_key, *s, v->source);
  else
    facts.put_status(version_key, v->ok() ? Status::error : v->status, v->source,
                     v->ok() ? std::string("not a string") : v->reason);
}

/// What dlopen(3) searches besides ROCr's own DT_RUNPATH, and the librocdxg files found.
struct Loader {
  SearchList ld;                  ///< LD_LIBRARY_PATH
  LdSoConf conf;                  ///< /etc/ld.so.conf and its includes (ld.so.cache's directories)
  std::vector<std::string> found; ///< every librocdxg.so* in the searched directories
};

/// A ROCr's DT_RUNPATH (else DT_RPATH), $ORIGIN being its directory; `why` when unreadable.
struct RocrRunpath {
  OwnSearchPath own;
  std::optional<std::string> why;
};

RocrRunpath read_runpath(const Root& root, const std::optional<std::string>& hsa_lib) {
  RocrRunpath rp;
  if (!hsa_lib) return rp;
  const DynamicRead dyn = read_dynamic(root, *hsa_lib);
  if (!dyn.opened)
    rp.why = fmt::format("{} could not be opened", *hsa_lib);
  else if (!dyn.dynamic)
    rp.why = fmt::format("{}: {}", *hsa_lib, dyn.why);
  else
    rp.own = own_search_path(*dyn.dynamic, parent_dir(*hsa_lib));
  return rp;
}

/// The facts of put_loader_facts: `PREFIX.on_loader_path` and `PREFIX.loader_path`.
struct LoaderKeys {
  std::string on_loader_path;
  std::string loader_path;
};

/// `keys`: whether dlopen("librocdxg.so") from the ROCr at `hsa_lib` finds it, along dlopen(3)'s
/// order, and where. `wheel_site`: the ROCr is a relocatable wheel's, whose RUNPATH reaches only
/// SITE/_rocm_sdk_* (see the header). `release`: that ROCr's.
void put_loader_facts(const Root& root, FactSet& facts, const LoaderKeys& keys, const Loader& ld,
                      const std::string& hsa_lib, const std::string& lib_dir, const RocrRunpath& rp,
                      const std::optional<std::string>& wheel_site,
                      const std::optional<std::string>& release) {
  // The order of the one loader model (checks/common/dynamic_loader.hpp): ROCr's DT_RPATH
  // (only without DT_RUNPATH), LD_LIBRARY_PATH, its DT_RUNPATH, ld.so.cache's directories, the
  // system directories.
  const auto hit =
      find_library(root, search_order(rp.why ? nullptr : &rp.own, ld.ld, &ld.conf), kLibRocdxg);
  std::optional<std::string> loader_dir;
  std::string how;
  if (hit) {
    loader_dir = hit->dir;
    switch (hit->step) {
    case SearchStep::rpath:
    case SearchStep::runpath:
      how = fmt::format("libhsa-runtime64's {}", step_name(hit->step));
      break;
    case SearchStep::ld_library_path:
      how = "LD_LIBRARY_PATH";
      break;
    case SearchStep::ld_so_cache:
      how = "ld.so.conf";
      break;
    case SearchStep::system_dirs:
      how = "the default directories";
      break;
    }
  }
  const std::string& on_key = keys.on_loader_path;
  const std::string& path_key = keys.loader_path;
  const std::string src = fmt::format(
      "dlopen(3) order: {}, {}, default directories",
      rp.own.step == SearchStep::rpath ? fmt::format("DT_RPATH of {}, LD_LIBRARY_PATH", hsa_lib)
                                       : fmt::format("LD_LIBRARY_PATH, DT_RUNPATH of {}", hsa_lib),
      ld.conf.files.empty() ? std::string("no /etc/ld.so.conf")
                            : fmt::format("{}", fmt::join(ld.conf.files, ", ")));
  if (loader_dir) {
    facts.put_ok(on_key, true, src);
    facts.put_ok(path_key, join_path(*loader_dir, kLibRocdxg) + " (" + how + ")", src);
    return;
  }
  // An unversioned librocdxg.so the unread RUNPATH might reach: anywhere for an installed ROCr,
  // only inside SITE/_rocm_sdk_* for a wheel's.
  const std::string sdk_prefix = wheel_site ? join_path(*wheel_site, "_rocm_sdk_") : std::string();
  const bool runpath_may_reach =
      rp.why && std::any_of(ld.found.begin(), ld.found.end(), [&](const std::string& p) {
        return p.ends_with(std::string("/") + kLibRocdxg) &&
               (!wheel_site || p.rfind(sdk_prefix, 0) == 0);
      });
  // ROCr's own directory and the versioned name: rocm-systems PRs 8912 and 11241 (July and
  // September 2026), after ROCm 7.13 (May 2026, librocdxg issue 46) was released.
  const bool newer = !release || compare_versions(*release, "7.14") >= 0;
  const bool own_dir = newer && (root.exists(join_path(lib_dir, kLibRocdxg)) ||
                                 root.exists(join_path(lib_dir, std::string(kLibRocdxg) + ".1")));
  if (runpath_may_reach) {
    facts.put_status(on_key, Status::error, src,
                     fmt::format("could not tell: ROCr's DT_RUNPATH is unknown ({})", *rp.why));
    facts.put_status(path_key, Status::error, src, *rp.why);
  } else if (own_dir) {
    const std::string why = fmt::format(
        "librocdxg is only in ROCr's own directory {}, which dlopen's search does not reach; ROCr "
        "looks there itself only from rocm-systems PR 8912 (July 2026), and the first ROCm release "
        "with it is not documented",
        lib_dir);
    facts.put_status(on_key, Status::missing, src, why);
    facts.put_status(path_key, Status::missing, src, why);
  } else {
    facts.put_ok(on_key, false, src);
    facts.put_status(path_key, Status::missing, src,
                     fmt::format("no {} in the directories dlopen searches", kLibRocdxg));
  }
}

/// `key`: whether ROCr of the release in `version_key` looks for /dev/dxg with this
/// HSA_ENABLE_DXG_DETECTION (flag.h; rocm-systems PR 3863: on by default from 7.13).
void put_dxg_detection(FactSet& facts, std::string_view key, std::string_view version_key,
                       const std::optional<std::string>& val) {
  const auto ver = facts.get<std::string>(version_key);
  if (!ver) {
    facts.put_status(std::string(key), Status::missing, std::string(version_key),
                     "could not tell: the ROCm release decides what an unset "
                     "HSA_ENABLE_DXG_DETECTION means, and it is unknown");
    return;
  }
  const bool default_on = compare_versions(*ver, "7.13") >= 0;
  const bool on = default_on ? val != std::string("0") : val == std::string("1");
  facts.put_ok(
      std::string(key), on,
      fmt::format("ROCm {}: HSA_ENABLE_DXG_DETECTION {} ({})", *ver,
                  val ? "=" + *val : std::string("unset"),
                  default_on ? "7.13 and later: on unless 0" : "before 7.13: on only when 1"));
}

/// `wsl.gpupv.vgpu_channels`: the VMBus devices of dxgkrnl's per-GPU type (see the header).
void put_vgpu_channels(const Root& root, FactSet& facts) {
  constexpr const char* kDir = "/sys/bus/vmbus/devices";
  Status st = Status::ok;
  auto names = root.list(kDir, &st, 1024);
  if (!names) {
    facts.put_status(std::string(wsl_keys::gpupv_vgpu_channels),
                     st == Status::ok ? Status::missing : st, kDir,
                     "the VMBus devices could not be listed");
    return;
  }
  std::int64_t n = 0;
  for (const auto& d : *names) {
    ReadResult r = root.read_trimmed(join_path(join_path(kDir, d), "class_id"));
    if (!r.ok()) continue;
    std::string low = r.text;
    std::transform(low.begin(), low.end(), low.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    if (low == kVgpuClassId) ++n;
  }
  facts.put_ok(std::string(wsl_keys::gpupv_vgpu_channels), n,
               fmt::format("{}/*/class_id {} (dxgkrnl's per-GPU channel, of {} VMBus devices)",
                           kDir, kVgpuClassId, names->size()));
}

void collect(const ProbeContext& ctx, FactSet& facts) {
  const Root& root = ctx.root;
  std::vector<std::string> evidence;
  bool wsl1_release = false;

  // 1. Is this WSL2?
  if (ReadResult r = root.read_trimmed("/proc/sys/kernel/osrelease"); r.ok()) {
    if (wsl2_release(r.text))
      evidence.push_back(fmt::format("kernel release {} ({})", r.text.substr(0, 128), r.path));
    else if (r.text.find('\n') == std::string::npos && r.text.ends_with("-Microsoft"))
      wsl1_release = true;
  }
  EnvironRead env_read;
  const auto env = read_env(root, env_read);
  if (env) {
    for (const char* v : {"WSL_INTEROP", "WSL_DISTRO_NAME"})
      if (env->contains(v)) evidence.push_back(fmt::format("{} in the environment", v));
    if (auto it = env->find("HSA_ENABLE_DXG_DETECTION"); it != env->end())
      facts.put_ok(std::string(wsl_keys::env_hsa_enable_dxg_detection), it->second.substr(0, 64),
                   env_read.source);
    else
      facts.put_status(std::string(wsl_keys::env_hsa_enable_dxg_detection), Status::missing,
                       env_read.source, "HSA_ENABLE_DXG_DETECTION is not set");
  } else {
    facts.put_status(std::string(wsl_keys::env_hsa_enable_dxg_detection), env_read.status,
                     env_read.source, env_read.reason);
  }
  for (const char* p :
       {"/proc/sys/fs/binfmt_misc/WSLInterop", "/proc/sys/fs/binfmt_misc/WSLInterop-late"})
    if (root.exists(p)) evidence.emplace_back(p);

  const NodeInfo dxg = root.node(kDxg);
  const bool dxg_exists = dxg.status == Status::ok && dxg.is_char_device;
  if (dxg_exists) evidence.push_back(std::string(kDxg) + " (the dxgkrnl device)");
  const bool dxgkrnl = root.exists("/sys/bus/vmbus/drivers/dxgkrnl");
  if (dxgkrnl) evidence.emplace_back("/sys/bus/vmbus/drivers/dxgkrnl");
  const bool wsl2 = !evidence.empty() && !(wsl1_release && !dxg_exists);
  facts.put_ok(std::string(wsl_keys::wsl2), wsl2,
               evidence.empty() ? std::string("no WSL2 marker (kernel release, WSL_INTEROP, "
                                              "WSLInterop, /dev/dxg, dxgkrnl)")
                                : fmt::format("{}", fmt::join(evidence, "; ")));
  facts.put_ok(std::string(wsl_keys::evidence), evidence, "WSL2 markers");
  facts.put_ok(std::string(wsl_keys::dxgkrnl_registered), dxgkrnl,
               "/sys/bus/vmbus/drivers/dxgkrnl");

  // 2. /dev/dxg and whether this process may open it O_RDWR as ROCr does.
  const std::string dxg_rw(wsl_keys::dxg_rw);
  facts.put_ok(std::string(wsl_keys::dxg_exists), dxg_exists, kDxg);
  if (dxg_exists) {
    facts.put_ok(std::string(wsl_keys::dxg_mode), fmt::format("{:04o}", dxg.mode), kDxg);
    if (root.is_live()) {
      facts.put_ok(dxg_rw, ::access(kDxg, R_OK | W_OK) == 0, std::string("access(2) ") + kDxg);
    } else if ((dxg.mode & 0006U) == 0006U) {
      facts.put_ok(dxg_rw, true, std::string(kDxg) + " (mode bits: others may read and write)");
    } else {
      facts.put_status(dxg_rw, Status::missing, kDxg,
                       fmt::format("mode {:04o} gives others no read and write; whether this user "
                                   "may open it could not be told from a root",
                                   dxg.mode));
    }
  } else {
    const std::string why = dxg.status == Status::ok ? "not a character device" : dxg.reason;
    for (const auto k : {wsl_keys::dxg_mode, wsl_keys::dxg_rw})
      facts.put_status(std::string(k), dxg.status == Status::ok ? Status::error : dxg.status, kDxg,
                       why);
  }

  // 3. DXCore: /usr/lib/wsl/lib (WSL), or /usr/lib as the librocdxg README mounts it in a
  // container.
  std::optional<std::string> dxcore;
  for (const char* d : {"/usr/lib/wsl/lib", "/usr/lib", "/usr/lib/x86_64-linux-gnu"})
    if (!dxcore && root.exists(join_path(d, kLibDxcore))) dxcore = join_path(d, kLibDxcore);
  if (dxcore)
    facts.put_ok(std::string(wsl_keys::libdxcore_path), *dxcore, *dxcore);
  else
    facts.put_status(std::string(wsl_keys::libdxcore_path), Status::missing,
                     "/usr/lib/wsl/lib/libdxcore.so",
                     "no libdxcore.so in /usr/lib/wsl/lib, /usr/lib or /usr/lib/x86_64-linux-gnu");

  // 4. The ROCm in use: $ROCM_PATH, else /opt/rocm (AMD's packages); and TheRock's
  // rocm-sdk-core in the Python environment training will see.
  std::string rocm_root = "/opt/rocm";
  if (env)
    if (auto it = env->find("ROCM_PATH"); it != env->end() && !it->second.empty() &&
                                          it->second.front() == '/' && it->second.size() < 1024)
      rocm_root = it->second;
  const std::string rocm_lib = join_path(rocm_root, "lib");
  const std::string hsa_lib = join_path(rocm_lib, hsa::kLibraryName);
  const bool rocm = root.exists(hsa_lib);
  facts.put_ok(std::string(wsl_keys::rocm_present), rocm, hsa_lib);
  if (rocm) {
    facts.put_ok(std::string(wsl_keys::rocm_lib_dir), rocm_lib, hsa_lib);
    put_rocm_release(facts, rocm_root);
  } else {
    for (const auto k : {wsl_keys::rocm_lib_dir, wsl_keys::rocm_version})
      facts.put_status(std::string(k), Status::missing, hsa_lib,
                       "no ROCm runtime (libhsa-runtime64.so.1) here");
  }
  const Sdk sdk = find_sdk(root, facts);
  put_sdk_facts(facts, sdk);

  // 5. librocdxg: where it is, and whether dlopen("librocdxg.so") from each ROCr finds it.
  // $ORIGIN in LD_LIBRARY_PATH is the main program's directory (ld.so(8)), unknown here.
  Loader ld;
  if (env)
    if (auto it = env->find("LD_LIBRARY_PATH"); it != env->end())
      ld.ld = split_search_list(it->second, ListKind::ld_library_path, std::nullopt);
  ld.conf = read_ld_so_conf(root);
  std::vector<std::string> search = {rocm_lib, "/usr/local/lib"};
  if (root.is_dir("/opt"))
    if (auto names = root.list("/opt", nullptr, 256))
      for (const auto& n : *names)
        if (n.rfind("rocm", 0) == 0) push_unique(search, "/opt/" + n + "/lib");
  if (sdk.site) {
    // The wheel's own lib and the devel tree librocdxg's README installs into.
    for (const char* d : {"_rocm_sdk_core/lib", "_rocm_sdk_devel/lib"})
      if (root.is_dir(join_path(*sdk.site, d))) push_unique(search, join_path(*sdk.site, d));
  }
  const RocrRunpath sys_rp = read_runpath(root, rocm ? std::optional(hsa_lib) : std::nullopt);
  for (const std::vector<std::string>* list : std::array<const std::vector<std::string>*, 4>{
           &ld.ld.dirs, &sys_rp.own.list.dirs, &ld.conf.dirs, &system_dirs()})
    for (const auto& d : *list)
      push_unique(search, d);
  // /opt/rocm is a link to /opt/rocm-X.Y.Z: list each real directory once.
  std::vector<std::string> canonical;
  for (const auto& d : search) {
    const std::string real = root.resolve(d).string();
    if (std::find(canonical.begin(), canonical.end(), real) != canonical.end()) continue;
    canonical.push_back(real);
    auto names = root.list(d, nullptr, 8192);
    if (!names) continue;
    for (const auto& n : *names)
      if (n == kLibRocdxg || n.rfind(std::string(kLibRocdxg) + ".", 0) == 0)
        push_unique(ld.found, join_path(d, n));
  }
  facts.put_ok(std::string(wsl_keys::librocdxg_paths), ld.found,
               fmt::format("searched {}", fmt::join(search, ", ")));
  facts.put_ok(std::string(wsl_keys::librocdxg_found), !ld.found.empty(),
               std::string(wsl_keys::librocdxg_paths));
  put_loader_facts(root, facts,
                   {std::string(wsl_keys::librocdxg_on_loader_path),
                    std::string(wsl_keys::librocdxg_loader_path)},
                   ld, hsa_lib, rocm_lib, sys_rp, std::nullopt,
                   facts.get<std::string>(wsl_keys::rocm_version));
  if (sdk.lib_dir) {
    const std::string sdk_hsa = join_path(*sdk.lib_dir, hsa::kLibraryName);
    put_loader_facts(root, facts,
                     {std::string(wsl_keys::sdk_librocdxg_on_loader_path),
                      std::string(wsl_keys::sdk_librocdxg_loader_path)},
                     ld, sdk_hsa, *sdk.lib_dir, read_runpath(root, sdk_hsa), sdk.site,
                     facts.get<std::string>(wsl_keys::sdk_version));
  } else {
    for (const auto k :
         {wsl_keys::sdk_librocdxg_on_loader_path, wsl_keys::sdk_librocdxg_loader_path})
      facts.put_status(std::string(k), Status::missing, sdk.source, sdk.why);
  }

  // 6. Whether ROCr will look for /dev/dxg at all (flag.h; rocm-systems PR 3863 for 7.13).
  const auto val = facts.get<std::string>(wsl_keys::env_hsa_enable_dxg_detection);
  put_dxg_detection(facts, wsl_keys::dxg_detection_enabled, wsl_keys::rocm_version, val);
  if (sdk.lib_dir)
    put_dxg_detection(facts, wsl_keys::sdk_dxg_detection_enabled, wsl_keys::sdk_version, val);
  else
    facts.put_status(std::string(wsl_keys::sdk_dxg_detection_enabled), Status::missing, sdk.source,
                     sdk.why);

  // 6b. GPU-PV adapters: dxgkrnl's per-GPU VMBus channels (see the header); only in WSL2, where
  // the rules read them (an Azure or Hyper-V guest lists other VMBus devices).
  if (wsl2)
    put_vgpu_channels(root, facts);
  else
    facts.put_status(std::string(wsl_keys::gpupv_vgpu_channels), Status::missing,
                     std::string(wsl_keys::wsl2), "not WSL2");

  // 7. What the engine says of a per-GPU rule with no GPU (sysfs/KFD list none in WSL2).
  facts.put_ok(std::string(wsl_keys::no_gpu_message),
               wsl2 ? fmt::format("WSL2: PCI, DRM and KFD list no GPU here ({} {}: the Windows "
                                  "driver owns the GPU), so per-GPU checks, which need the Linux "
                                  "driver's GPU list, do not apply",
                                  kDxg, dxg_exists ? "present" : "absent")
                    : std::string(),
               std::string(wsl_keys::wsl2));
}

} // namespace

std::unique_ptr<Probe> make_wsl_probe() {
  // Its reads are the small files only: librocdxg, DXCore and ROCr are binaries looked up by
  // name in the ROCm and loader directories (a capture bundle keeps the wsl.* facts instead).
  return std::make_unique<BasicProbe>("wsl", collect);
}

} // namespace halo::probes

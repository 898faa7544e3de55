// SPDX-License-Identifier: MIT
// Probe: the ROCm installations on disk and the release each says it is, read from files so that
// the ROCm-versus-kernel rules can judge under --root, in a capture bundle and with --no-runtime,
// where no ROCr is loaded (hsa.rocm_version is then missing).
//   PREFIX/.info/version: written by AMD's rocm-core package ("7.2.1-43\n"; /opt/rocm is a link
//     to /opt/rocm-X.Y.Z, rocm-core's file list: /opt/rocm/.info/version), and by TheRock's
//     builds in each ROCm root, wheels included (`_rocm_sdk_core/.info/version` = the base
//     release, "10.1.0" for rocm-sdk-core 10.1.0a20260813).
//   PREFIX/share/therock/therock_manifest.json: TheRock's build manifest, whose `rocm_version` is
//     the same base release (ROCm/TheRock build_tools, `share/therock` of every TheRock root).
// The prefixes are tried in the order the doctor's ROCr search takes (checks/runtime/hsa.hpp
// library_candidates: $ROCM_PATH, then /opt/rocm), then TheRock's rocm-sdk-core wheel in the
// Python environment training will see (`SITE/_rocm_sdk_core`, what `import torch` preloads for a
// TheRock wheel: torch/_rocm_init.py).
#include "hsa.hpp"
#include "probes.hpp"

#include <halo/fact_keys.hpp>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

namespace halo::probes {
namespace {

/// A version file is a line; a manifest a few KiB (TheRock's lists its submodule pins).
constexpr std::size_t kMaxVersionBytes = 256;
constexpr std::size_t kMaxManifestBytes = std::size_t{256} * 1024;

struct Found {
  std::string version;
  std::string source; ///< the file read, as its real path under the root
  std::string prefix; ///< as searched ("/opt/rocm"), so that a bundle replays the same value
};

/// `abs` inside the root with its links followed, as a path from the root ("/opt/rocm-7.2.1"), so
/// that the source names the release directory /opt/rocm points to.
std::string real_in_root(const Root& root, const std::string& abs) {
  std::string resolved = root.resolve(abs).string();
  const std::string base = root.base().string();
  if (root.is_live() || base == "/") return resolved;
  if (resolved.rfind(base, 0) == 0) {
    std::string rest = resolved.substr(base.size());
    return rest.empty() ? std::string("/") : rest;
  }
  return abs;
}

/// The release a ROCm root says it is: `.info/version`, else TheRock's manifest. `why` collects
/// what was tried when neither says it.
std::optional<Found> release_of(const Root& root, const std::string& prefix,
                                std::vector<std::string>& why) {
  const std::string info = prefix + "/.info/version";
  if (ReadResult r = root.read(info, kMaxVersionBytes); r.ok()) {
    if (auto v = hsa::version_from_info_text(r.text))
      return Found{*v, real_in_root(root, info), prefix};
    why.push_back(fmt::format("{}: no MAJOR.MINOR version in it", info));
  } else {
    why.push_back(fmt::format("{}: {}", info, r.reason.empty() ? "missing" : r.reason));
  }
  const std::string manifest = prefix + "/share/therock/therock_manifest.json";
  ReadResult m = root.read(manifest, kMaxManifestBytes);
  if (!m.ok()) {
    why.push_back(fmt::format("{}: {}", manifest, m.reason.empty() ? "missing" : m.reason));
    return std::nullopt;
  }
  const nlohmann::json j = nlohmann::json::parse(m.text, nullptr, /*allow_exceptions=*/false);
  if (j.is_object()) {
    if (auto it = j.find("rocm_version"); it != j.end() && it->is_string())
      if (auto v = hsa::version_from_info_text(it->get<std::string>()))
        return Found{*v, real_in_root(root, manifest) + " rocm_version", prefix};
  }
  why.push_back(fmt::format("{}: no rocm_version MAJOR.MINOR in it", manifest));
  return std::nullopt;
}

void collect(const ProbeContext& ctx, FactSet& facts) {
  std::vector<std::string> prefixes;
  if (auto p = facts.get<std::string>(fact_keys::env::key("rocm_path"));
      p && !p->empty() && p->front() == '/')
    prefixes.push_back(*p);
  prefixes.emplace_back("/opt/rocm");
  std::vector<std::string> why;
  std::optional<Found> install;
  for (const auto& prefix : prefixes)
    if ((install = release_of(ctx.root, prefix, why))) break;
  if (install) {
    facts.put_ok(std::string(fact_keys::rocm::install_version), install->version, install->source);
    facts.put_ok(std::string(fact_keys::rocm::install_prefix), install->prefix, install->source);
  } else {
    const std::string reason =
        fmt::format("no ROCm installation says its release: {}", fmt::join(why, "; "));
    facts.put_status(std::string(fact_keys::rocm::install_version), Status::missing, "/opt/rocm",
                     reason);
    facts.put_status(std::string(fact_keys::rocm::install_prefix), Status::missing, "/opt/rocm",
                     reason);
  }

  const Fact* site = facts.find(fact_keys::framework::python_env);
  if (site == nullptr || !site->ok()) {
    facts.put_status(std::string(fact_keys::rocm::sdk_version), Status::missing,
                     std::string(fact_keys::framework::python_env),
                     "no Python environment found (framework.python_env)");
    return;
  }
  const std::string sdk =
      facts.get<std::string>(fact_keys::framework::python_env).value_or("") + "/_rocm_sdk_core";
  if (!ctx.root.is_dir(sdk)) {
    facts.put_status(std::string(fact_keys::rocm::sdk_version), Status::missing, sdk,
                     "no TheRock rocm-sdk-core in the Python environment");
    return;
  }
  std::vector<std::string> sdk_why;
  if (auto v = release_of(ctx.root, sdk, sdk_why))
    facts.put_ok(std::string(fact_keys::rocm::sdk_version), v->version, v->source);
  else
    // Missing, not error: a bundle carries the version files, not the directory, and replays
    // the same status.
    facts.put_status(std::string(fact_keys::rocm::sdk_version), Status::missing, sdk,
                     fmt::format("rocm-sdk-core without a release: {}", fmt::join(sdk_why, "; ")));
}

} // namespace

std::unique_ptr<Probe> make_rocm_install_probe() {
  auto p = std::make_unique<BasicProbe>("rocm_install", collect);
  return p;
}

} // namespace halo::probes

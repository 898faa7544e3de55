// SPDX-License-Identifier: MIT
// Derivation: the ROCm release the ROCm-versus-kernel rules judge (rocm.version), from the
// runtime when it was loaded and from the files on disk otherwise.
//   1. hsa.rocm_version: the ROCr the doctor loaded (checks/runtime/hsa.cpp), what PyTorch built on
//   the
//      same installation loads too. It wins whenever it is known.
//   2. rocm.install.version: the installation the same search would load ($ROCM_PATH, else
//      /opt/rocm), read from its `.info/version` (checks/runtime/rocm_install.cpp): under --root,
//      in a capture bundle and with --no-runtime, where no ROCr is loaded.
//   3. rocm.sdk.version: TheRock's rocm-sdk-core in the Python environment, when no installation
//      is on disk (a TheRock wheel brings its own ROCm: torch/_rocm_init.py preloads it).
// It reads no file.
#include "probes.hpp"

#include <halo/fact_keys.hpp>

#include <fmt/format.h>

#include <array>
#include <string>

namespace halo::probes {
namespace {

void derive(const DeriveContext& /*ctx*/, FactSet& facts) {
  struct Candidate {
    std::string_view key;
    const char* basis;
  };
  static constexpr std::array<Candidate, 3> kOrder{{
      {fact_keys::hsa::rocm_version, "the ROCr the doctor loaded"},
      {fact_keys::rocm::install_version, "the installation on disk"},
      {fact_keys::rocm::sdk_version, "TheRock's rocm-sdk-core in the Python environment"},
  }};
  for (const auto& c : kOrder) {
    const Fact* f = facts.find(c.key);
    if (f == nullptr || !f->ok()) continue;
    if (auto v = facts.get<std::string>(c.key)) {
      facts.put_ok(std::string(fact_keys::rocm::version), *v,
                   fmt::format("{} ({})", c.key, f->source));
      facts.put_ok(std::string(fact_keys::rocm::version_basis), std::string(c.basis),
                   std::string(c.key));
      return;
    }
  }
  // None known. The runtime's reason leads: when it was not run on request (--no-runtime, a
  // runtime under --root) the result keeps its "skipped: " prefix, so the rules skip as they
  // did before there was a file fallback; when it ran and failed, they cannot be checked.
  const Fact* rt = facts.find(kOrder[0].key);
  const std::string rt_reason =
      rt == nullptr ? fmt::format("{}: not probed", kOrder[0].key)
      : rt->not_probed()
          ? rt->reason
          : fmt::format("{}: {}", kOrder[0].key,
                        rt->reason.empty() ? std::string(to_string(rt->status)) : rt->reason);
  const std::string reason =
      fmt::format("{}; and no ROCm installation on disk says its release (rocm.install.version, "
                  "rocm.sdk.version)",
                  rt_reason);
  facts.put_status(std::string(fact_keys::rocm::version), Status::missing, "derived", reason);
  facts.put_status(std::string(fact_keys::rocm::version_basis), Status::missing, "derived", reason);
}

} // namespace

std::unique_ptr<Probe> make_rocm_version_derivation() {
  return std::make_unique<BasicDerivation>("rocm_version", derive);
}

} // namespace halo::probes

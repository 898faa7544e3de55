// SPDX-License-Identifier: MIT
// A temporary root tree for probe tests (node_exporter's buildFakeSysfs idea): files, links and
// device-node entries written under a fresh directory that is removed afterwards.
#pragma once

#include <halo/fact.hpp>
#include <halo/probe.hpp>
#include <halo/root.hpp>

#include <filesystem>
#include <string>
#include <string_view>

namespace halo::test {

class FixtureTree {
public:
  FixtureTree();
  ~FixtureTree();
  FixtureTree(const FixtureTree&) = delete;
  FixtureTree& operator=(const FixtureTree&) = delete;

  /// Writes `content` to the absolute target path `abs` (parents are created).
  FixtureTree& file(std::string_view abs, std::string_view content);
  /// Creates a directory.
  FixtureTree& dir(std::string_view abs);
  /// Creates a symlink at `abs` pointing to `target` (taken verbatim).
  FixtureTree& link(std::string_view abs, std::string_view target);
  /// Sets permission bits of a file (for unreadable-file tests).
  FixtureTree& chmod(std::string_view abs, std::filesystem::perms p);

  const std::filesystem::path& path() const { return base_; }
  Root root() const { return Root(base_); }

private:
  std::filesystem::path base_;
};

/// Runs every built-in probe over a root and returns the facts. `host_root`: the --host-root
/// option (a real path), empty to let detect_host_root choose.
FactSet probe_root(const std::filesystem::path& root, std::int64_t reserve_gib = 4,
                   const std::string& host_root = {});

/// Runs one built-in probe (by id) over a root, after the probes it may read from, with `opt`
/// (no_runtime is always set).
FactSet probe_one(const std::filesystem::path& root, std::string_view id, ProbeOptions opt = {});

/// The fixture directory of a named case.
std::filesystem::path fixture(std::string_view name);

} // namespace halo::test

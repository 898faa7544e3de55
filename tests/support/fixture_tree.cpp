// SPDX-License-Identifier: MIT
#include "fixture_tree.hpp"

#include <halo/checks.hpp>

#include <cstdlib>
#include <fstream>
#include <stdexcept>

namespace halo::test {

FixtureTree::FixtureTree() {
  std::string tmpl = (std::filesystem::temp_directory_path() / "halo-fixture-XXXXXX").string();
  if (::mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  base_ = tmpl;
}

FixtureTree::~FixtureTree() {
  std::error_code ec;
  std::filesystem::permissions(base_, std::filesystem::perms::owner_all, ec);
  // Never through a symlink: a tree may hold links to host paths (/etc/shadow), whose modes
  // chmod(2) would change.
  for (auto it = std::filesystem::recursive_directory_iterator(base_, ec);
       it != std::filesystem::recursive_directory_iterator(); it.increment(ec))
    if (!it->is_symlink(ec))
      std::filesystem::permissions(it->path(), std::filesystem::perms::owner_all,
                                   std::filesystem::perm_options::add, ec);
  std::filesystem::remove_all(base_, ec);
}

FixtureTree& FixtureTree::file(std::string_view abs, std::string_view content) {
  auto p = base_ / std::filesystem::path(abs).relative_path();
  std::filesystem::create_directories(p.parent_path());
  std::ofstream out(p, std::ios::binary);
  out << content;
  return *this;
}

FixtureTree& FixtureTree::dir(std::string_view abs) {
  std::filesystem::create_directories(base_ / std::filesystem::path(abs).relative_path());
  return *this;
}

FixtureTree& FixtureTree::link(std::string_view abs, std::string_view target) {
  auto p = base_ / std::filesystem::path(abs).relative_path();
  std::filesystem::create_directories(p.parent_path());
  std::filesystem::create_symlink(target, p);
  return *this;
}

FixtureTree& FixtureTree::chmod(std::string_view abs, std::filesystem::perms p) {
  std::filesystem::permissions(base_ / std::filesystem::path(abs).relative_path(), p);
  return *this;
}

FactSet probe_root(const std::filesystem::path& root, std::int64_t reserve_gib,
                   const std::string& host_root) {
  ProbeOptions opt;
  opt.reserve_gib = reserve_gib;
  opt.no_runtime = true;
  opt.host_root = host_root;
  Root r(root);
  return builtin_probes().collect(ProbeContext{r, opt});
}

FactSet probe_one(const std::filesystem::path& root, std::string_view id, ProbeOptions opt) {
  opt.no_runtime = true;
  Root r(root);
  FactSet facts;
  const ProbeRegistry reg = builtin_probes();
  for (const auto& p : reg.probes()) {
    p->collect(ProbeContext{r, opt}, facts);
    if (p->id() == id) break;
  }
  return facts;
}

std::filesystem::path fixture(std::string_view name) {
  return std::filesystem::path(HALO_FIXTURES_DIR) / name;
}

} // namespace halo::test

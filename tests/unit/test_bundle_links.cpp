// SPDX-License-Identifier: MIT
// Issue 44 item 3: a bundle's symlinks are judged as the kernel resolves them, through each
// other, and the replay reads the tree only through the root's RESOLVE_IN_ROOT confinement.
#include "../../src/core/bundle_internal.hpp"

#include <halo/bundle.hpp>
#include <halo/error.hpp>

#include <catch2/catch.hpp>

#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

using namespace halo;
namespace fs = std::filesystem;

namespace {

/// One tar member: a regular file with `text`, or a symlink to `target` when `link` is set.
struct Member {
  std::string name;
  std::string text;
  bool link = false;
};

Member file(std::string name, std::string text) {
  return {std::move(name), std::move(text), false};
}
Member sym(std::string name, std::string target) {
  return {std::move(name), std::move(target), true};
}

/// A scratch directory (TMPDIR of the extraction inside it) removed at the end.
struct Scratch {
  fs::path dir;
  std::string old_tmpdir;
  Scratch() {
    std::string t = (fs::temp_directory_path() / "halo-links-XXXXXX").string();
    REQUIRE(::mkdtemp(t.data()) != nullptr);
    dir = t;
    fs::create_directories(dir / "tmp");
    const char* o = std::getenv("TMPDIR");
    old_tmpdir = o != nullptr ? o : "";
    ::setenv("TMPDIR", (dir / "tmp").c_str(), 1);
  }
  ~Scratch() {
    if (old_tmpdir.empty())
      ::unsetenv("TMPDIR");
    else
      ::setenv("TMPDIR", old_tmpdir.c_str(), 1);
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  Scratch(Scratch&&) = delete;
  Scratch& operator=(Scratch&&) = delete;

  /// Writes a plain tar of `members` (a manifest first) and returns its path.
  std::string tar(const std::string& name, const std::vector<Member>& members) const {
    const std::string path = (dir / name).string();
    archive* a = archive_write_new();
    archive_write_set_format_pax_restricted(a);
    REQUIRE(archive_write_open_filename(a, path.c_str()) == ARCHIVE_OK);
    std::vector<Member> all = {file(".halo/manifest.json", "{}")};
    all.insert(all.end(), members.begin(), members.end());
    for (const auto& m : all) {
      archive_entry* e = archive_entry_new();
      archive_entry_set_pathname(e, m.name.c_str());
      if (m.link) {
        archive_entry_set_filetype(e, AE_IFLNK);
        archive_entry_set_symlink(e, m.text.c_str());
        archive_entry_set_perm(e, 0777);
      } else {
        archive_entry_set_filetype(e, AE_IFREG);
        archive_entry_set_perm(e, 0644);
        archive_entry_set_size(e, static_cast<la_int64_t>(m.text.size()));
      }
      REQUIRE(archive_write_header(a, e) == ARCHIVE_OK);
      if (!m.link) archive_write_data(a, m.text.data(), m.text.size());
      archive_entry_free(e);
    }
    archive_write_close(a);
    archive_write_free(a);
    return path;
  }
};

std::string refusal(const std::string& path) {
  try {
    const ExtractedBundle b(path);
  } catch (const InputError& e) {
    return e.what();
  }
  return {};
}

} // namespace

TEST_CASE("a chain of links that leads out of a bundle is refused, naming the entry",
          "[bundle][security]") {
  const Scratch s;
  // The chain leads to TMPDIR/../secret.json: each link alone passes a count of its `..`.
  std::ofstream(s.dir / "secret.json") << R"({"facts": {}})";
  const std::vector<Member> chain = {sym(".halo/s", ".."), sym(".halo/t", "s/.."),
                                     sym(".halo/u", "t/.."),
                                     sym(".halo/runtime-facts.json", "u/secret.json")};
  for (const auto& [rel, target] : std::vector<std::pair<std::string, std::string>>{
           {".halo/s", ".."}, {".halo/t", "s/.."}, {".halo/u", "t/.."}})
    CHECK(bundle_detail::link_stays_inside(rel, target)); // why counting was not enough
  CHECK_THAT(refusal(s.tar("chain.tar", chain)),
             Catch::Contains("entry '.halo/t' is a symbolic link that leads outside the bundle"));
  // Listed in the reverse order (the link that uses the chain first): judged once all are there.
  CHECK_THAT(refusal(s.tar("reversed.tar", {chain[3], chain[2], chain[1], chain[0]})),
             Catch::Contains("leads outside the bundle"));
  // A link through a file's name (ENOTDIR) or to a missing name leads nowhere: extracted.
  CHECK(refusal(s.tar("dangling.tar", {file("etc/f", "x"), sym(".halo/f", "../etc/f"),
                                       sym("etc/a", "../.halo/f/.."), sym("etc/b", "missing/..")}))
            .empty());
  // Nothing is left in TMPDIR after a refusal.
  CHECK(fs::is_empty(s.dir / "tmp"));
}

TEST_CASE("a bundle's runtime facts are read inside it, through links that stay inside",
          "[bundle][security]") {
  const Scratch s;
  const ExtractedBundle b(
      s.tar("inside.tar", {file("data/facts.json", "inside"), sym(".halo/d", "../data"),
                           sym(".halo/runtime-facts.json", "d/../data/./facts.json")}));
  CHECK(b.runtime_facts_text(1024) == std::optional<std::string>("inside"));
  const ExtractedBundle none(s.tar("none.tar", {}));
  CHECK_FALSE(none.runtime_facts_text(1024).has_value());
  CHECK_THROWS_AS(b.runtime_facts_text(3), InputError); // longer than the bound
}

TEST_CASE("bundles extracted on several threads at once are each removed by the fatal-signal "
          "cleanup",
          "[bundle][security]") {
  // fleet compare extracts bundles on worker threads; the signal handler once knew only the last
  // directory made, so a SIGTERM left the others behind (and the threads raced on one buffer).
  const Scratch s;
  const std::string tar = s.tar("node.tar", {file("etc/hostname", "node")});
  constexpr int kBundles = 6;
  std::vector<std::unique_ptr<ExtractedBundle>> bundles(kBundles);
  {
    std::vector<std::thread> threads;
    for (int i = 0; i < kBundles; ++i)
      threads.emplace_back([&bundles, &tar, i] {
        bundles[static_cast<std::size_t>(i)] = std::make_unique<ExtractedBundle>(tar);
      });
    for (auto& t : threads)
      t.join();
  }
  std::vector<std::string> dirs;
  for (const auto& b : bundles)
    dirs.push_back(b->root().string());
  std::vector<std::string> live = bundle_detail::live_extraction_dirs();
  std::sort(live.begin(), live.end());
  std::sort(dirs.begin(), dirs.end());
  CHECK(live == dirs);
  for (const auto& d : dirs)
    CHECK(fs::exists(d));
  bundle_detail::remove_live_extraction_dirs(); // what SIGTERM's handler does first
  for (const auto& d : dirs)
    CHECK_FALSE(fs::exists(d));
  CHECK(fs::is_empty(s.dir / "tmp"));
  bundles.clear(); // the destructors give their slots back
  CHECK(bundle_detail::live_extraction_dirs().empty());
  // A bundle made afterwards is registered again, and its destructor removes it.
  std::string later;
  {
    const ExtractedBundle b(tar);
    later = b.root().string();
    CHECK(bundle_detail::live_extraction_dirs() == std::vector<std::string>{later});
  }
  CHECK_FALSE(fs::exists(later));
  CHECK(bundle_detail::live_extraction_dirs().empty());
}

TEST_CASE("the openat2 judgement and the component walk agree", "[bundle][security]") {
  const Scratch s;
  const fs::path t = s.dir / "tree";
  fs::create_directories(t / "a/b");
  std::ofstream(t / "a/f") << "x";
  const std::vector<std::pair<std::string, std::string>> links = {{"a/up", ".."},
                                                                  {"a/s", "b/../.."},
                                                                  {"a/b/c", "../../a/out"},
                                                                  {"a/out", "s/.."},
                                                                  {"a/abs", "/etc"},
                                                                  {"a/loop", "loop"},
                                                                  {"a/nodir", "f/../../.."},
                                                                  {"a/gone", "x/../.."},
                                                                  {"a/deep", "b/../b/../../a/b"}};
  for (const auto& [rel, target] : links)
    fs::create_symlink(target, t / rel);
  const int dfd = ::open(t.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  REQUIRE(dfd >= 0);
  for (const auto& [rel, target] : links) {
    CAPTURE(rel, target);
    CHECK(bundle_detail::link_leaves_tree(dfd, rel) ==
          bundle_detail::link_leaves_tree_walk(dfd, rel));
  }
  CHECK_FALSE(bundle_detail::link_leaves_tree(dfd, "a/up"));
  CHECK(bundle_detail::link_leaves_tree(dfd, "a/out"));
  CHECK(bundle_detail::link_leaves_tree(dfd, "a/abs"));
  CHECK(bundle_detail::link_leaves_tree(dfd, "a/b/c"));
  CHECK_FALSE(bundle_detail::link_leaves_tree(dfd, "a/loop"));
  CHECK_FALSE(bundle_detail::link_leaves_tree(dfd, "a/deep"));
  ::close(dfd);
}

// SPDX-License-Identifier: MIT
// The capture-bundle extractor's link handling (issue 44 item 3): the input is a list of members,
// one a line: `L NAME TARGET` (a symlink), `F NAME` (a file), `D NAME` (a directory), written as a
// tar and replayed as `check --bundle` extracts it. Outside the extraction directory sit canary
// files that every link chain out of it would reach. Findings, besides crashes: a bundle that
// extracts although one of its links resolves (realpath(3), the kernel's own walk) outside it;
// the runtime facts read back as a canary; the openat2 judgement and the component walk
// disagreeing on a link; an extraction directory left behind.
#include "../../src/core/bundle_internal.hpp"
#include "fuzz_common.hpp"

#include <halo/bundle.hpp>
#include <halo/error.hpp>

#include <climits>

#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;

struct Entry {
  char type;
  std::string name;
  std::string target;
};

std::vector<Entry> parse(std::string_view in) {
  std::vector<Entry> out;
  std::size_t start = 0;
  while (start < in.size() && out.size() < 64) {
    std::size_t nl = in.find('\n', start);
    if (nl == std::string_view::npos) nl = in.size();
    const std::string_view line = in.substr(start, nl - start);
    start = nl + 1;
    if (line.size() < 3 || line[1] != ' ') continue;
    const std::string_view rest = line.substr(2);
    const std::size_t sp = rest.find(' ');
    Entry e{line[0], std::string(rest.substr(0, sp)), {}};
    if (sp != std::string_view::npos) e.target = std::string(rest.substr(sp + 1));
    if (e.name.empty() || e.name.find('\0') != std::string::npos ||
        e.target.find('\0') != std::string::npos)
      continue;
    out.push_back(std::move(e));
  }
  return out;
}

/// The fixed scratch directory: TMPDIR (where extraction happens) inside it, canaries around it.
const fs::path& scratch() {
  static const fs::path dir = [] {
    std::string t = (fs::temp_directory_path() / "halo-fuzz-links-XXXXXX").string();
    if (::mkdtemp(t.data()) == nullptr) std::abort();
    fs::create_directories(fs::path(t) / "tmp");
    for (const auto& f : {fs::path(t) / "x", fs::path(t) / "tmp" / "x",
                          fs::path(t) / "runtime-facts.json", fs::path(t) / "tmp" / "facts.json"})
      std::ofstream(f) << "CANARY";
    ::setenv("TMPDIR", (fs::path(t) / "tmp").c_str(), 1);
    return fs::path(t);
  }();
  return dir;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace halo;
  const auto entries = parse(fuzz::text(data, size));
  (void)scratch();
  static const int fd = ::memfd_create("halo-fuzz-links", MFD_CLOEXEC);
  if (fd < 0 || ::ftruncate(fd, 0) != 0) std::abort();
  archive* a = archive_write_new();
  archive_write_set_format_pax_restricted(a);
  if (archive_write_open_fd(a, fd) != ARCHIVE_OK) std::abort();
  std::vector<Entry> all = {{'F', ".halo/manifest.json", {}}};
  all.insert(all.end(), entries.begin(), entries.end());
  for (const auto& e : all) {
    archive_entry* ae = archive_entry_new();
    archive_entry_set_pathname(ae, e.name.c_str());
    if (e.type == 'L') {
      archive_entry_set_filetype(ae, AE_IFLNK);
      archive_entry_set_symlink(ae, e.target.c_str());
      archive_entry_set_perm(ae, 0777);
    } else if (e.type == 'D') {
      archive_entry_set_filetype(ae, AE_IFDIR);
      archive_entry_set_perm(ae, 0755);
    } else {
      archive_entry_set_filetype(ae, AE_IFREG);
      archive_entry_set_perm(ae, 0644);
      archive_entry_set_size(ae, 2);
    }
    if (archive_write_header(a, ae) == ARCHIVE_OK && e.type != 'L' && e.type != 'D')
      archive_write_data(a, "{}", 2);
    archive_entry_free(ae);
  }
  archive_write_close(a);
  archive_write_free(a);
  static const std::string file = "/proc/self/fd/" + std::to_string(fd);
  fs::path dir;
  try {
    const ExtractedBundle b(file);
    dir = b.root();
    const int dfd = ::open(dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0) std::abort();
    const std::string base = fs::canonical(dir).string() + "/";
    for (const auto& e : entries) {
      if (e.type != 'L') continue;
      // The two judgements agree on every link (a link since replaced by a file included).
      if (bundle_detail::link_leaves_tree(dfd, e.name) !=
          bundle_detail::link_leaves_tree_walk(dfd, e.name))
        std::abort();
      // The kernel's own resolution of an extracted link stays inside.
      char resolved[PATH_MAX];
      if (::realpath((dir / e.name).c_str(), resolved) != nullptr &&
          std::string(resolved).rfind(base, 0) != 0 && std::string(resolved) + "/" != base)
        std::abort();
    }
    ::close(dfd);
    if (const auto rt = b.runtime_facts_text(std::size_t{1} << 20); rt && *rt == "CANARY")
      std::abort(); // a host file read through the bundle
  } catch (const InputError&) {
  }
  if (!dir.empty() && fs::exists(dir)) std::abort(); // left behind
  return 0;
}

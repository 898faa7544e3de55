// SPDX-License-Identifier: MIT
// checks/common/dynamic_loader: the dynamic linker's search order as ld.so(8) documents it
// ("the dynamic linker searches in the following order": DT_RPATH without DT_RUNPATH,
// LD_LIBRARY_PATH, DT_RUNPATH, ld.so.cache, the default directories), its dynamic string tokens,
// /etc/ld.so.conf as ldconfig(8) reads it, and, where Debian's gcc and ld.so are installed, the
// real loader's choice on libraries built at test time.
#include "dynamic_loader.hpp"
#include "fixture_tree.hpp"

#include <catch2/catch.hpp>

#include <sys/mman.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>

using halo::Root;
using halo::test::FixtureTree;
using namespace halo::probes;

namespace {

std::vector<std::string> dirs_of(const std::vector<SearchDir>& order, SearchStep step) {
  std::vector<std::string> out;
  for (const auto& d : order)
    if (d.step == step) out.push_back(d.dir);
  return out;
}

ElfDynamic dyn_with(std::optional<std::string> rpath, std::optional<std::string> runpath) {
  ElfDynamic d;
  d.needed = {"libdep.so.1"};
  d.rpath = std::move(rpath);
  d.runpath = std::move(runpath);
  return d;
}

} // namespace

TEST_CASE("loader order: DT_RPATH only without DT_RUNPATH, before LD_LIBRARY_PATH", "[loader]") {
  FixtureTree t;
  t.file("/opt/rp/libdep.so.1", "").file("/opt/llp/libdep.so.1", "");
  t.file("/opt/run/libdep.so.1", "");
  const Root root = t.root();
  const SearchList llp = split_search_list("/opt/llp", ListKind::ld_library_path, std::nullopt);

  SECTION("DT_RPATH alone: searched first, so LD_LIBRARY_PATH cannot take the library") {
    const OwnSearchPath own = own_search_path(dyn_with("/opt/rp", std::nullopt), "/opt/lib");
    REQUIRE(own.step == SearchStep::rpath);
    const auto order = search_order(&own, llp, nullptr);
    REQUIRE(order.size() >= 2);
    CHECK(order[0].dir == "/opt/rp");
    CHECK(order[0].step == SearchStep::rpath);
    CHECK(order[1].dir == "/opt/llp");
    const auto hit = find_library(root, order, "libdep.so.1");
    REQUIRE(hit);
    CHECK(hit->dir == "/opt/rp");
  }
  SECTION("DT_RPATH and DT_RUNPATH: DT_RPATH is ignored, DT_RUNPATH comes after LD_LIBRARY_PATH") {
    const OwnSearchPath own = own_search_path(dyn_with("/opt/rp", "/opt/run"), "/opt/lib");
    REQUIRE(own.step == SearchStep::runpath);
    const auto order = search_order(&own, llp, nullptr);
    CHECK(dirs_of(order, SearchStep::rpath).empty());
    CHECK(order[0].dir == "/opt/llp");
    CHECK(order[0].step == SearchStep::ld_library_path);
    CHECK(order[1].dir == "/opt/run");
    CHECK(order[1].step == SearchStep::runpath);
    CHECK(find_library(root, order, "libdep.so.1")->dir == "/opt/llp");
    CHECK(find_library(root, order, "libdep.so.1", SearchStep::runpath)->dir == "/opt/run");
    // Without LD_LIBRARY_PATH the DT_RUNPATH directory is the one found.
    const auto alone = search_order(&own, SearchList{}, nullptr);
    CHECK(find_library(root, alone, "libdep.so.1")->dir == "/opt/run");
  }
  SECTION("an empty DT_RUNPATH still disables DT_RPATH (glibc tests the tag)") {
    const OwnSearchPath own = own_search_path(dyn_with("/opt/rp", ""), "/opt/lib");
    CHECK(own.step == SearchStep::runpath);
    CHECK(own.list.dirs.empty());
    CHECK(dirs_of(search_order(&own, llp, nullptr), SearchStep::rpath).empty());
  }
  SECTION("then ld.so.cache's directories, then the system directories, last") {
    LdSoConf conf;
    conf.dirs = {"/usr/local/lib"};
    const OwnSearchPath own = own_search_path(dyn_with(std::nullopt, "/opt/run"), "/opt/lib");
    const auto order = search_order(&own, llp, &conf);
    REQUIRE(order.size() == 3 + system_dirs().size());
    CHECK(order[2].dir == "/usr/local/lib");
    CHECK(order[2].step == SearchStep::ld_so_cache);
    CHECK(order[3].dir == "/lib/x86_64-linux-gnu");
    CHECK(order.back().dir == "/usr/lib");
    CHECK(order.back().step == SearchStep::system_dirs);
  }
  SECTION("an unknown caller: LD_LIBRARY_PATH, the cache and the system directories only") {
    const auto order = search_order(nullptr, llp, nullptr);
    CHECK(order.front().dir == "/opt/llp");
    CHECK(dirs_of(order, SearchStep::runpath).empty());
  }
  SECTION("a name with a slash is a path, not searched") {
    CHECK_FALSE(find_library(root, search_order(nullptr, llp, nullptr), "llp/libdep.so.1"));
  }
}

TEST_CASE("loader tokens: $ORIGIN and ${ORIGIN}; $LIB, $PLATFORM and unknown origins not followed",
          "[loader]") {
  const std::optional<std::string> origin = "/venv/torch/lib";
  CHECK(expand_search_entry("$ORIGIN", origin) == "/venv/torch/lib");
  CHECK(expand_search_entry("${ORIGIN}/../../_rocm_sdk_core/lib", origin) ==
        "/venv/_rocm_sdk_core/lib");
  CHECK(expand_search_entry("$ORIGIN/", origin) == "/venv/torch/lib");
  // `$ORIGINX` is not the token (is_dst): the '$' stays, and the entry is relative.
  std::string why;
  CHECK_FALSE(expand_search_entry("$ORIGINX", origin, &why));
  CHECK(why == "relative to the working directory");
  CHECK(expand_search_entry("/opt/$ORIGIN_X", origin) == "/opt/$ORIGIN_X");
  CHECK(expand_search_entry("/opt/$FOO/lib", origin) == "/opt/$FOO/lib");
  CHECK_FALSE(expand_search_entry("/opt/$LIB", origin, &why));
  CHECK_THAT(why, Catch::Contains("$LIB"));
  CHECK_FALSE(expand_search_entry("/opt/${PLATFORM}/lib", origin));
  CHECK_FALSE(expand_search_entry("$ORIGIN/lib", std::nullopt, &why));
  CHECK_THAT(why, Catch::Contains("unknown"));
  CHECK_FALSE(expand_search_entry("", origin, &why));
  CHECK_THAT(why, Catch::Contains("working directory"));
  CHECK_FALSE(expand_search_entry("lib", origin));
}

TEST_CASE("loader lists: LD_LIBRARY_PATH splits at ':' and ';', DT_RUNPATH at ':' only",
          "[loader]") {
  const auto llp =
      split_search_list("/a;/b:/c/::rel;$ORIGIN/x;/a", ListKind::ld_library_path, std::nullopt);
  CHECK(llp.dirs == std::vector<std::string>{"/a", "/b", "/c"});
  CHECK(llp.skipped ==
        std::vector<std::string>{"(empty: the working directory)", "rel", "$ORIGIN/x"});
  const auto rp = split_search_list("/a;/b:$ORIGIN", ListKind::dt_path, "/lib/o");
  CHECK(rp.dirs == std::vector<std::string>{"/a;/b", "/lib/o"});
  CHECK(split_search_list("", ListKind::ld_library_path, std::nullopt).skipped.empty());
  std::string many;
  for (int i = 0; i < 200; ++i)
    many += "/d" + std::to_string(i) + ":";
  CHECK(split_search_list(many, ListKind::ld_library_path, std::nullopt).dirs.size() ==
        kMaxSearchEntries);
}

TEST_CASE("loader ld.so.conf: includes are globs, relative to the including file, nested",
          "[loader]") {
  FixtureTree t;
  t.file("/etc/ld.so.conf", "# top\ninclude ld.so.conf.d/*.conf /etc/extra.conf\n"
                            "/opt/top/ # trailing slash and comment\n"
                            "hwcap 0 nosegneg\nrelative/dir\n/usr/old=libc6\n");
  t.file("/etc/ld.so.conf.d/b.conf", "/opt/b\ninclude nested/*.conf\n");
  t.file("/etc/ld.so.conf.d/a.conf", "   /opt/a\t\n");
  t.file("/etc/ld.so.conf.d/.hidden.conf", "/opt/hidden\n");
  t.file("/etc/ld.so.conf.d/skip.txt", "/opt/txt\n");
  t.file("/etc/ld.so.conf.d/nested/n.conf", "/opt/nested\n");
  t.file("/etc/extra.conf", "/opt/extra\n");
  const LdSoConf conf = read_ld_so_conf(t.root());
  CHECK(conf.dirs == std::vector<std::string>{"/opt/a", "/opt/b", "/opt/nested", "/opt/extra",
                                              "/opt/top", "/usr/old"});
  CHECK(conf.files == std::vector<std::string>{
                          "/etc/ld.so.conf", "/etc/ld.so.conf.d/a.conf", "/etc/ld.so.conf.d/b.conf",
                          "/etc/ld.so.conf.d/nested/n.conf", "/etc/extra.conf"});
  SECTION("an include loop ends") {
    FixtureTree loop;
    loop.file("/etc/ld.so.conf", "include /etc/ld.so.conf\n/opt/x\n");
    const LdSoConf l = read_ld_so_conf(loop.root());
    CHECK(l.dirs == std::vector<std::string>{"/opt/x"});
    CHECK(l.files.size() == 9); // the file and 8 levels of itself
  }
  SECTION("no file: nothing") {
    CHECK(read_ld_so_conf(FixtureTree().root()).files.empty());
  }
}

TEST_CASE("loader paths stay inside the root", "[loader]") {
  FixtureTree t;
  // An include and a library link aiming at the host's /etc and /usr/lib.
  t.file("/etc/ld.so.conf", "include ../../../../../../../etc/ld.so.conf.d/*.conf\n");
  t.link("/opt/lib/libc.so.6", "/../../../../../../usr/lib/x86_64-linux-gnu/libc.so.6");
  const Root root = t.root();
  const LdSoConf conf = read_ld_so_conf(root);
  CHECK(conf.files == std::vector<std::string>{"/etc/ld.so.conf"});
  CHECK(conf.dirs.empty());
  const auto dirs = split_search_list("/opt/lib:/../../../../usr/lib/x86_64-linux-gnu",
                                      ListKind::ld_library_path, std::nullopt);
  CHECK(dirs.dirs == std::vector<std::string>{"/opt/lib", "/usr/lib/x86_64-linux-gnu"});
  CHECK_FALSE(find_library(root, search_order(nullptr, dirs, &conf), "libc.so.6"));
  const DynamicRead r = read_dynamic(root, "/opt/lib/libc.so.6");
  CHECK_FALSE(r.opened);
  CHECK(r.status == halo::Status::missing);
}

TEST_CASE("loader ELF: truncated and hostile files are an error value, not a crash", "[loader]") {
  FixtureTree t;
  std::string elf("\x7f"
                  "ELF\x02\x01\x01",
                  7);
  elf.resize(64, '\xff'); // section header offset and counts all ones
  t.file("/lib/hostile.so", elf);
  t.file("/lib/short.so", std::string("\x7f"
                                      "ELF",
                                      4));
  t.file("/lib/text.so", "INPUT(libc.so.6)\n");
  t.dir("/lib/dir.so");
  const Root root = t.root();
  for (const char* p : {"/lib/hostile.so", "/lib/short.so", "/lib/text.so"}) {
    const DynamicRead r = read_dynamic(root, p);
    INFO(p);
    CHECK(r.opened);
    CHECK_FALSE(r.dynamic);
    CHECK(r.status == halo::Status::error);
    CHECK_FALSE(r.why.empty());
  }
  const DynamicRead d = read_dynamic(root, "/lib/dir.so");
  CHECK_FALSE(d.dynamic);
  CHECK_FALSE(d.why.empty());
}

namespace {

/// Runs `cmd` through /bin/sh and returns its standard output.
std::string run(const std::string& cmd) {
  std::string out;
  std::unique_ptr<FILE, int (*)(FILE*)> p(::popen(cmd.c_str(), "r"), ::pclose);
  if (!p) return out;
  std::array<char, 4096> buf{};
  while (std::fgets(buf.data(), static_cast<int>(buf.size()), p.get()) != nullptr)
    out += buf.data();
  return out;
}

/// The directory ld.so --list resolved `name` to ("\tNAME => /dir/NAME (0x...)").
std::string real_choice(const std::string& listing, const std::string& name) {
  std::istringstream in(listing);
  std::string line;
  while (std::getline(in, line)) {
    const auto at = line.find(name + " => ");
    if (at == std::string::npos) continue;
    std::string path = line.substr(at + name.size() + 4);
    path = path.substr(0, path.find(' '));
    return path.substr(0, path.rfind('/'));
  }
  return "(not found)";
}

} // namespace

// Debian's own loader: gcc builds libdep.so in two directories and two callers of it, one with
// DT_RUNPATH (--enable-new-dtags) and one with DT_RPATH (--disable-new-dtags), each `${ORIGIN}/a`
// or `$ORIGIN/a`; `ld.so --library-path B --list CALLER` prints which copy the real loader takes,
// which must be find_library()'s. tests/CMakeLists.txt runs it as loader.real_ld_so, which skips
// (77) where /usr/bin/gcc or the loader is absent.
TEST_CASE("loader order agrees with Debian's ld.so on libraries built now", "[.][loader_real]") {
  const std::string gcc = "/usr/bin/gcc";
  const std::string ldso = "/lib64/ld-linux-x86-64.so.2";
  if (::access(gcc.c_str(), X_OK) != 0 || ::access(ldso.c_str(), X_OK) != 0) {
    WARN("no /usr/bin/gcc or " << ldso << ": not compared");
    return;
  }
  FixtureTree t;
  const std::string dir = t.path().string();
  t.file("/dep.c", "int dep(void) { return 1; }\n");
  t.file("/caller.c", "int dep(void);\nint caller(void) { return dep(); }\n");
  t.dir("/a").dir("/b");
  const std::string cc = "cd '" + dir + "' && " + gcc + " -shared -fPIC ";
  for (const char* d : {"a", "b"})
    REQUIRE(std::system((cc + "-Wl,-soname,libdep.so -o " + d + "/libdep.so dep.c").c_str()) == 0);
  REQUIRE(std::system((cc + "-o librun.so caller.c -La -ldep '-Wl,-rpath,${ORIGIN}/a' "
                            "-Wl,--enable-new-dtags")
                          .c_str()) == 0);
  REQUIRE(std::system((cc + "-o librp.so caller.c -La -ldep '-Wl,-rpath,$ORIGIN/a' "
                            "-Wl,--disable-new-dtags")
                          .c_str()) == 0);
  const Root live("/");
  // The same library cut short anywhere: an error value (or, cut after the dynamic section and
  // its strings, the section), never a crash or a read past the end.
  {
    std::ifstream in(dir + "/librun.so", std::ios::binary);
    const std::string whole((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    REQUIRE(whole.size() > 1024);
    std::size_t errors = 0;
    for (std::size_t n = 0; n < whole.size(); n += 97) {
      t.file("/cut.so", whole.substr(0, n));
      const DynamicRead r = read_dynamic(live, dir + "/cut.so");
      CHECK(r.opened);
      CHECK(r.dynamic.has_value() == r.why.empty());
      if (!r.dynamic) ++errors;
    }
    CHECK(errors > 0);
  }
  for (const char* caller : {"librun.so", "librp.so"}) {
    for (const bool with_llp : {false, true}) {
      const std::string path = dir + "/" + caller;
      const std::string llp = dir + "/b";
      const std::string listing = run("/usr/bin/env -i " + ldso +
                                      (with_llp ? " --library-path '" + llp + "'" : std::string()) +
                                      " --list '" + path + "' 2>&1");
      const DynamicRead dyn = read_dynamic(live, path);
      REQUIRE(dyn.dynamic);
      const OwnSearchPath own = own_search_path(*dyn.dynamic, dir);
      const SearchList l =
          with_llp ? split_search_list(llp, ListKind::ld_library_path, std::nullopt) : SearchList{};
      const auto hit = find_library(live, search_order(&own, l, nullptr), "libdep.so");
      INFO(caller << (with_llp ? " with" : " without") << " LD_LIBRARY_PATH:\n" << listing);
      REQUIRE(hit);
      CHECK(hit->dir == real_choice(listing, "libdep.so"));
      // The documented expectation, so that a loader and model wrong alike do not pass.
      const bool runpath = std::string(caller) == "librun.so";
      CHECK(own.step == (runpath ? SearchStep::runpath : SearchStep::rpath));
      CHECK(hit->dir == dir + (with_llp && runpath ? "/b" : "/a"));
    }
  }
}

// The wsl probe through the module: a ROCr whose DT_RPATH (no DT_RUNPATH) names a directory with
// librocdxg.so is searched before LD_LIBRARY_PATH (ld.so(8)); with DT_RUNPATH, LD_LIBRARY_PATH
// comes first. The stand-in ROCr is a gcc-built library (skipped as above without gcc).
TEST_CASE("the wsl probe follows ld.so's order for ROCr's DT_RPATH and DT_RUNPATH",
          "[.][loader_real]") {
  const std::string gcc = "/usr/bin/gcc";
  if (::access(gcc.c_str(), X_OK) != 0) {
    WARN("no /usr/bin/gcc: not compared");
    return;
  }
  for (const bool new_dtags : {false, true}) {
    FixtureTree t;
    const std::string dir = t.path().string();
    t.file("/src/hsa.c", "int hsa_init(void) { return 0; }\n");
    t.file("/proc/sys/kernel/osrelease", "6.6.87.2-microsoft-standard-WSL2\n");
    t.file("/.halo/nodes.json",
           "{\"/dev/dxg\": {\"type\": \"char\", \"mode\": \"0666\", \"uid\": 0, \"gid\": 0}}\n");
    t.file("/opt/rocm-7.2.1/.info/version", "7.2.1\n");
    t.link("/opt/rocm", "/opt/rocm-7.2.1");
    t.file("/opt/rp/librocdxg.so", "").file("/opt/llp/librocdxg.so", "");
    std::string env = "LD_LIBRARY_PATH=/opt/llp";
    env.push_back('\0');
    t.file("/proc/self/environ", env);
    const std::string out = dir + "/opt/rocm-7.2.1/lib/libhsa-runtime64.so.1";
    t.dir("/opt/rocm-7.2.1/lib");
    REQUIRE(std::system(("cd '" + dir + "' && " + gcc + " -shared -fPIC -o '" + out +
                         "' src/hsa.c -Wl,-rpath,/opt/rp " +
                         (new_dtags ? "-Wl,--enable-new-dtags" : "-Wl,--disable-new-dtags"))
                            .c_str()) == 0);
    const halo::FactSet f = halo::test::probe_one(t.path(), "wsl");
    INFO((new_dtags ? "DT_RUNPATH" : "DT_RPATH"));
    CHECK(f.get<bool>("wsl.librocdxg.on_loader_path") == true);
    CHECK(f.get<std::string>("wsl.librocdxg.loader_path") ==
          (new_dtags ? std::string("/opt/llp/librocdxg.so (LD_LIBRARY_PATH)")
                     : std::string("/opt/rp/librocdxg.so (libhsa-runtime64's DT_RPATH)")));
  }
}

// /etc/ld.so.conf against Debian's ldconfig: `ldconfig -r ROOT -N -X -v` prints each directory it
// would scan with the file it came from, in order; read_ld_so_conf() must list the same ones. It
// needs chroot(2) (root): elsewhere it warns and compares nothing.
TEST_CASE("ld.so.conf directories agree with Debian's ldconfig", "[.][loader_real]") {
  const std::string ldconfig = "/usr/sbin/ldconfig";
  if (::access(ldconfig.c_str(), X_OK) != 0 || ::geteuid() != 0) {
    WARN("no /usr/sbin/ldconfig or not root: not compared");
    return;
  }
  FixtureTree t;
  t.file("/etc/ld.so.conf", "# top\ninclude ld.so.conf.d/*.conf /etc/extra.conf\n"
                            "/opt/top/ # a comment\n/opt/a\n");
  t.file("/etc/ld.so.conf.d/b.conf", "/opt/b\ninclude nested/*.conf\n");
  t.file("/etc/ld.so.conf.d/a.conf", "   /opt/a\t\n");
  t.file("/etc/ld.so.conf.d/nested/n.conf", "/opt/nested\n");
  t.file("/etc/ld.so.conf.d/skip.txt", "/opt/txt\n");
  t.file("/etc/extra.conf", "/opt/extra\n");
  for (const char* d : {"/opt/a", "/opt/b", "/opt/nested", "/opt/extra", "/opt/top", "/opt/txt"})
    t.dir(d);
  const std::string listing =
      run(ldconfig + " -r '" + t.path().string() + "' -N -X -v 2>/dev/null");
  std::vector<std::string> real;
  std::istringstream in(listing);
  std::string line;
  while (std::getline(in, line))
    if (line.starts_with('/') && line.find(": (from ") != std::string::npos)
      real.push_back(line.substr(0, line.find(':')));
  INFO(listing);
  REQUIRE_FALSE(real.empty());
  CHECK(read_ld_so_conf(t.root()).dirs == real);
}

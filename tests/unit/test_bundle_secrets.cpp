// SPDX-License-Identifier: MIT
// Capture bundles keep no secrets (issue 32): the environment's allow-list is the probes'
// declarations (Probe::env_reads) and nothing else, URL credentials are masked. The byte search
// over a real bundle unpacked by tar is tests/cli/bundle_secrets.sh; here the pieces.
#include <halo/bundle.hpp>
#include <halo/checks.hpp>
#include <halo/probe.hpp>
#include <halo/units.hpp>

#include <catch2/catch.hpp>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>

using namespace halo;
namespace fs = std::filesystem;

namespace {

/// A probe that reads one environment variable no built-in probe reads: declaring it must be all
/// it takes for a bundle to keep it.
class NewVariableProbe : public Probe {
public:
  std::string_view id() const override { return "test_new_variable"; }
  std::span<const FactDecl> declarations() const override {
    static constexpr FactDecl kDecls[] = {
        {"testprobe.new_variable", FactType::string, "", "test only"}};
    return kDecls;
  }
  std::string source() const override { return "test"; }
  std::vector<std::string> reads() const override { return {"/proc/self/environ"}; }
  std::vector<std::string> env_reads() const override { return {"HALO_TEST_NEW_VARIABLE"}; }
  void collect(const ProbeContext& /*ctx*/, FactSet& /*facts*/) const override {}
};

struct TempDir {
  fs::path path;
  TempDir() {
    std::string t = (fs::temp_directory_path() / "halo-bundle-test-XXXXXX").string();
    REQUIRE(::mkdtemp(t.data()) != nullptr);
    path = t;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  TempDir(TempDir&&) = delete;
  TempDir& operator=(TempDir&&) = delete;
};

void write(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << text;
}

std::string read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

/// The environ a registry's capture of `root` stores, one `NAME=VALUE` per element.
std::vector<std::string> captured_environ(const ProbeRegistry& reg, const fs::path& root,
                                          const fs::path& out) {
  CaptureOptions opt;
  write_capture_bundle(reg, Root(root), FactSet{}, opt, out.string());
  ExtractedBundle b(out.string());
  const std::string text = read(b.root() / "proc/self/environ");
  std::vector<std::string> vars;
  std::size_t start = 0;
  for (std::size_t i = 0; i <= text.size(); ++i)
    if (i == text.size() || text[i] == '\0') {
      vars.push_back(text.substr(start, i - start));
      start = i + 1;
    }
  return vars;
}

bool has(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

} // namespace

TEST_CASE("URL credentials are masked, the rest of the value kept", "[bundle][issue32]") {
  CHECK(mask_url_credentials("http://alice:hunter2@proxy.example.com:3128") ==
        "http://<masked>@proxy.example.com:3128");
  CHECK(mask_url_credentials("socks5h://bob@proxy:1080/") == "socks5h://<masked>@proxy:1080/");
  // A password with an unescaped '/' or '@' masks more, never less.
  CHECK(mask_url_credentials("https://u:pa/ss@w@host/simple") == "https://<masked>@host/simple");
  // Lists (NO_PROXY-like, pip's extra URLs) are masked URL by URL.
  CHECK(mask_url_credentials("https://a:1@x/,https://y/ https://b:2@z") ==
        "https://<masked>@x/,https://y/ https://<masked>@z");
  CHECK(mask_url_credentials("/opt/rocm:/usr/lib") == "/opt/rocm:/usr/lib");
  CHECK(mask_url_credentials("https://pypi.org/simple") == "https://pypi.org/simple");
  CHECK(mask_url_credentials("") == "");
}

TEST_CASE("env_reads patterns: exact names and PREFIX*", "[bundle][issue32]") {
  const std::vector<std::string> pats{"HSA_*", "PATH"};
  CHECK(env_name_matches("HSA_ENABLE_SDMA", pats));
  CHECK(env_name_matches("HSA_", pats));
  CHECK(env_name_matches("PATH", pats));
  CHECK_FALSE(env_name_matches("PATHX", pats));
  CHECK_FALSE(env_name_matches("MY_HSA_X", pats));
  CHECK_FALSE(env_name_matches("HF_TOKEN", pats));
}

TEST_CASE("every probe that reads /proc/self/environ declares the variables it reads",
          "[bundle][issue32]") {
  const ProbeRegistry reg = builtin_probes();
  std::vector<std::string> all;
  for (const auto& p : reg.probes()) {
    const auto reads = p->reads();
    const bool reads_environ = std::any_of(reads.begin(), reads.end(), [](const std::string& r) {
      return r.rfind("/proc/self/environ", 0) == 0;
    });
    INFO(p->id());
    CHECK(reads_environ == !p->env_reads().empty());
    for (const auto& n : p->env_reads())
      all.push_back(n);
  }
  // The framework probe's and the environment probe's variables, and not the identities or
  // credentials a shell carries.
  // HOME too: the framework probe finds the user site directory under it (site.py); the bundle
  // maps the user name in it like every home directory (tests/cli/bundle_secrets.sh).
  for (const char* n : {"VIRTUAL_ENV", "CONDA_PREFIX", "PATH", "LD_LIBRARY_PATH", "HSA_ENABLE_SDMA",
                        "SUDO_UID", "PYTORCH_HIP_ALLOC_CONF", "ROCR_VISIBLE_DEVICES", "HOME"}) {
    INFO(n);
    CHECK(env_name_matches(n, all));
  }
  for (const char* n : {"USER", "LOGNAME", "SUDO_USER", "MAIL", "HF_TOKEN", "https_proxy",
                        "PIP_INDEX_URL", "AWS_SECRET_ACCESS_KEY", "HOSTNAME"}) {
    INFO(n);
    CHECK_FALSE(env_name_matches(n, all));
  }
}

TEST_CASE("a variable joins the bundle's allow-list by a probe's declaration alone",
          "[bundle][issue32]") {
  TempDir dir;
  const fs::path root = dir.path / "root";
  using namespace std::string_literals;
  write(root / "proc/self/environ",
        "HALO_TEST_NEW_VARIABLE=kept-value\0HF_TOKEN=hf_abcdefghijklmnopqrstuvwxyz0123456789\0"
        "HSA_ENABLE_SDMA=0\0PATH=/usr/bin\0"s);
  write(root / "etc/passwd", "root:x:0:0:root:/root:/bin/bash\n");

  // The built-in probes: the new variable is dropped, its name kept.
  const auto plain = captured_environ(builtin_probes(), root, dir.path / "a.tar.gz");
  CHECK(has(plain, "HALO_TEST_NEW_VARIABLE=<dropped>"));
  CHECK(has(plain, "HF_TOKEN=<dropped>"));
  CHECK(has(plain, "HSA_ENABLE_SDMA=0"));
  CHECK(has(plain, "PATH=/usr/bin"));

  // The same probes plus one that declares it: kept, with nothing else changed.
  ProbeRegistry reg = builtin_probes();
  reg.add(std::make_unique<NewVariableProbe>());
  reg.resolve();
  const auto with = captured_environ(reg, root, dir.path / "b.tar.gz");
  CHECK(has(with, "HALO_TEST_NEW_VARIABLE=kept-value"));
  CHECK(has(with, "HF_TOKEN=<dropped>"));
  CHECK(has(with, "HSA_ENABLE_SDMA=0"));
}

TEST_CASE("byte/page products are checked: an overflow is nullopt, never a wrapped value",
          "[units][issue32]") {
  CHECK(units::checked_bytes(16393924, units::kTtmPageBytes) == std::int64_t{67149512704});
  CHECK_FALSE(units::checked_bytes(std::int64_t{1} << 61, units::kTtmPageBytes));
  CHECK(units::checked_bytes(std::numeric_limits<std::int64_t>::max() / 4096, 4096));
  CHECK_FALSE(units::checked_bytes(std::numeric_limits<std::int64_t>::max() / 4096 + 1, 4096));
  CHECK_FALSE(units::checked_bytes(std::numeric_limits<std::int64_t>::max(), units::kKiB));
  CHECK(units::pages_gib(std::int64_t{1} << 61) == "8796093022208.00 GiB");
  CHECK(units::gib_of(1e300).find('-') == std::string::npos);
  CHECK(units::overflow_reason(std::int64_t{1} << 61, "pages", 4096) ==
        "2305843009213693952 pages x 4096 bytes does not fit a signed 64-bit integer (bytes)");
}

// SPDX-License-Identifier: MIT
// The static framework probe (checks/framework/framework.cpp): which torch the training environment
// holds, read from torch/version.py and the wheel's kernel library file names, through the Root.
#include "fixture_tree.hpp"

#include <catch2/catch.hpp>

#include <string>

using namespace halo;
using halo::test::FixtureTree;
using halo::test::probe_one;

namespace {

// The text PyTorch's tools/generate_torch_version.py writes (2.x).
std::string version_py(const std::string& version, const std::string& cuda,
                       const std::string& hip) {
  return "from typing import Optional\n\n"
         "__all__ = ['__version__', 'debug', 'cuda', 'git_version', 'hip', 'rocm', 'xpu']\n"
         "__version__ = '" +
         version +
         "'\n"
         "debug = False\n"
         "cuda: Optional[str] = " +
         cuda +
         "\n"
         "git_version = '1eba9b3aa3c43f86f4a2c807ac8e12c4a7767340'\n"
         "hip: Optional[str] = " +
         hip +
         "\n"
         "rocm: Optional[str] = None\n"
         "xpu: Optional[str] = None\n";
}

void set_environ(FixtureTree& t, const std::string& vars) {
  t.file("/proc/self/environ", "PATH=/usr/bin:/bin" + std::string(1, '\0') + vars);
}

std::string str(const FactSet& f, const char* key) {
  return f.get<std::string>(key).value_or("<none>");
}

} // namespace

TEST_CASE("framework probe: a ROCm wheel in the active venv, targets from rocBLAS file names",
          "[probe][framework]") {
  FixtureTree t;
  set_environ(t, std::string("VIRTUAL_ENV=/home/dev/venv") + '\0');
  const std::string site = "/home/dev/venv/lib/python3.12/site-packages";
  t.file(site + "/torch/version.py", version_py("2.5.1+rocm6.2", "None", "'6.2.41133-dd7f95766'"));
  t.file(site + "/torch/lib/rocblas/library/TensileLibrary_lazy_gfx90a.dat", "");
  t.file(site + "/torch/lib/rocblas/library/Kernels.so-000-gfx90a-xnack+.hsaco", "");
  t.file(site + "/torch/lib/rocblas/library/TensileLibrary_Type_HH_Contraction_gfx942.co", "");
  t.file(site + "/torch/lib/hipblaslt/library/extop_gfx1100.co", "");
  t.file(site + "/torch/lib/hipblaslt/library/TensileLibrary_gfx11-generic.co", "");
  // A system torch that the venv does not see (no include-system-site-packages).
  t.file("/usr/lib/python3/dist-packages/torch/version.py", version_py("1.0", "None", "None"));
  FactSet f = probe_one(t.path(), "framework");
  CHECK(str(f, "framework.python_env") == site);
  CHECK(f.find("framework.python_env")->source.find("VIRTUAL_ENV=/home/dev/venv") !=
        std::string::npos);
  CHECK(str(f, "framework.torch.path") == site + "/torch");
  CHECK(str(f, "framework.torch.version") == "2.5.1+rocm6.2");
  CHECK(f.find("framework.torch.version")->source == site + "/torch/version.py:4");
  CHECK(str(f, "framework.torch.hip_version") == "6.2.41133-dd7f95766");
  CHECK(f.find("framework.torch.cuda_version")->status == Status::missing);
  CHECK(f.find("framework.torch.cuda_version")->reason == "not a CUDA build");
  CHECK(str(f, "framework.torch.git_version") == "1eba9b3aa3c43f86f4a2c807ac8e12c4a7767340");
  CHECK(str(f, "framework.torch.build") == "rocm");
  // Distinct targets, :xnack/-xnack suffixes stripped, gfx11-generic is not a GPU's target.
  CHECK(f.get<std::vector<std::string>>("framework.torch.gfx_targets") ==
        std::vector<std::string>{"gfx1100", "gfx90a", "gfx942"});
  // Each library's own targets and directory: rocBLAS and hipBLASLt look kernels up by the GPU's
  // exact name, so a GPU in one list only still fails in the other (torch-missing-gfx-target).
  CHECK(f.get<std::vector<std::string>>("framework.torch.rocblas_targets") ==
        std::vector<std::string>{"gfx90a", "gfx942"});
  CHECK(str(f, "framework.torch.rocblas_dir") == site + "/torch/lib/rocblas/library");
  CHECK(f.get<std::vector<std::string>>("framework.torch.hipblaslt_targets") ==
        std::vector<std::string>{"gfx1100"});
  CHECK(str(f, "framework.torch.hipblaslt_dir") == site + "/torch/lib/hipblaslt/library");
}

TEST_CASE("framework probe: a library the wheel does not bundle is missing, the other is read",
          "[probe][framework][issue45]") {
  FixtureTree t;
  set_environ(t, std::string("VIRTUAL_ENV=/home/dev/venv") + '\0');
  const std::string site = "/home/dev/venv/lib/python3.12/site-packages";
  t.file(site + "/torch/version.py", version_py("2.12.0.dev20260408+rocm7.2", "None", "'7.2.1'"));
  t.file(site + "/torch/lib/rocblas/library/TensileLibrary_lazy_gfx1151.dat", "");
  FactSet f = probe_one(t.path(), "framework");
  CHECK(f.get<std::vector<std::string>>("framework.torch.rocblas_targets") ==
        std::vector<std::string>{"gfx1151"});
  const Fact* lt = f.find("framework.torch.hipblaslt_targets");
  REQUIRE(lt != nullptr);
  CHECK(lt->status == Status::missing);
  CHECK(lt->reason.find("no hipblaslt kernel library") != std::string::npos);
  CHECK(f.find("framework.torch.hipblaslt_dir")->status == Status::missing);
  // A TheRock family package paired with torch/lib's own files: both read, torch/lib's named.
  t.file(site + "/_rocm_sdk_libraries_gfx1150/lib/rocblas/library/TensileLibrary_lazy_gfx1150.dat",
         "");
  FactSet g = probe_one(t.path(), "framework");
  CHECK(g.get<std::vector<std::string>>("framework.torch.rocblas_targets") ==
        std::vector<std::string>{"gfx1150", "gfx1151"});
  CHECK(str(g, "framework.torch.rocblas_dir") == site + "/torch/lib/rocblas/library");
  CHECK(g.find("framework.torch.rocblas_dir")->source.find("_rocm_sdk_libraries_gfx1150") !=
        std::string::npos);
}

TEST_CASE("framework probe: pyvenv.cfg include-system-site-packages opens the system dirs",
          "[probe][framework]") {
  FixtureTree t;
  set_environ(t, std::string("VIRTUAL_ENV=/opt/venv") + '\0');
  t.dir("/opt/venv/lib/python3.11/site-packages");
  t.file("/usr/lib/python3/dist-packages/torch/version.py",
         "__version__ = '1.13.0a0'\ndebug = False\ncuda = None\ngit_version = 'Unknown'\n"
         "hip = None\n");
  FactSet closed = probe_one(t.path(), "framework");
  CHECK(closed.find("framework.torch.version")->status == Status::missing);
  t.file("/opt/venv/pyvenv.cfg", "home = /usr/bin\ninclude-system-site-packages = true\n");
  FactSet open = probe_one(t.path(), "framework");
  // Debian's python3-torch 1.13 shape: no annotations, hip = None -> a CPU build.
  CHECK(str(open, "framework.torch.version") == "1.13.0a0");
  CHECK(str(open, "framework.torch.build") == "cpu");
  CHECK(open.find("framework.torch.hip_version")->reason == "not a ROCm build");
  CHECK(open.find("framework.torch.gfx_targets")->status == Status::missing);
  CHECK(str(open, "framework.python_env") == "/usr/lib/python3/dist-packages");
}

TEST_CASE("framework probe: system site dirs, newest Python first, CUDA wheel",
          "[probe][framework]") {
  FixtureTree t;
  set_environ(t, "");
  t.file("/usr/local/lib/python3.10/dist-packages/torch/version.py",
         version_py("2.0.0+cu117", "'11.7'", "None"));
  t.file("/usr/local/lib/python3.12/dist-packages/torch/version.py",
         version_py("2.5.1+cu124", "'12.4'", "None"));
  FactSet f = probe_one(t.path(), "framework");
  CHECK(str(f, "framework.torch.version") == "2.5.1+cu124");
  CHECK(str(f, "framework.torch.cuda_version") == "12.4");
  CHECK(str(f, "framework.torch.build") == "cuda");
  CHECK(f.find("framework.torch.hip_version")->status == Status::missing);
  CHECK(f.find("framework.python_env")->source.find("system site directories") !=
        std::string::npos);
}

TEST_CASE("framework probe: /usr/lib with hundreds of entries still finds python3.N",
          "[probe][framework]") {
  FixtureTree t;
  set_environ(t, "");
  for (int i = 0; i < 300; ++i)
    t.dir("/usr/lib/a" + std::to_string(1000 + i));
  t.file("/usr/lib/python3.11/site-packages/torch/version.py",
         version_py("2.10.0+rocm7.1", "None", "'7.1.25424'"));
  FactSet f = probe_one(t.path(), "framework");
  CHECK(str(f, "framework.python_env") == "/usr/lib/python3.11/site-packages");
  CHECK(str(f, "framework.torch.build") == "rocm");
}

TEST_CASE("framework probe: TheRock wheel keeps ROCm in _rocm_sdk_libraries_*",
          "[probe][framework]") {
  FixtureTree t;
  set_environ(t, std::string("CONDA_PREFIX=/opt/conda/envs/train") + '\0');
  const std::string site = "/opt/conda/envs/train/lib/python3.12/site-packages";
  t.file(site + "/torch/version.py",
         version_py("2.10.0+rocm7.13.0a20260318", "None", "'7.13.26111'"));
  FactSet none = probe_one(t.path(), "framework");
  CHECK(none.find("framework.torch.gfx_targets")->status == Status::missing);
  CHECK(none.find("framework.torch.gfx_targets")->reason.find("no rocBLAS") != std::string::npos);
  t.file(site + "/_rocm_sdk_libraries_gfx1151/lib/rocblas/library/TensileLibrary_lazy_gfx1151.dat",
         "");
  FactSet f = probe_one(t.path(), "framework");
  CHECK(f.get<std::vector<std::string>>("framework.torch.gfx_targets") ==
        std::vector<std::string>{"gfx1151"});
}

TEST_CASE("framework probe: no torch is missing with where it looked", "[probe][framework]") {
  FixtureTree t;
  set_environ(t, "");
  t.dir("/usr/local/lib/python3.11/dist-packages");
  FactSet f = probe_one(t.path(), "framework");
  const Fact* v = f.find("framework.torch.version");
  REQUIRE(v != nullptr);
  CHECK(v->status == Status::missing);
  CHECK(v->reason.find("/usr/local/lib/python3.*/dist-packages") != std::string::npos);
  CHECK(v->reason.find("/usr/lib/python3/dist-packages") != std::string::npos);
  CHECK(f.find("framework.torch.build") == nullptr);
  // No /proc/self/environ at all: still the system dirs, still a fact, and the reason says so.
  FixtureTree bare;
  bare.dir("/usr");
  const FactSet bare_facts = probe_one(bare.path(), "framework");
  const Fact* b = bare_facts.find("framework.torch.version");
  CHECK(b->status == Status::missing);
  CHECK(b->reason.find("/proc/self/environ could not be read") != std::string::npos);
}

TEST_CASE("framework probe: malformed version.py is an error naming file and line",
          "[probe][framework]") {
  FixtureTree t;
  set_environ(t, "");
  const std::string py = "/usr/lib/python3/dist-packages/torch/version.py";
  t.file(py, "__version__ = '2.5.1'\ncuda = None\nhip = get_hip()\n");
  FactSet f = probe_one(t.path(), "framework");
  const Fact* v = f.find("framework.torch.version");
  CHECK(v->status == Status::error);
  CHECK(v->reason.find(py + ":3: hip is not a quoted string or None") != std::string::npos);
  CHECK(f.find("framework.torch.build") == nullptr);
  t.file(py, "cuda = None\nhip = None\n");
  CHECK(probe_one(t.path(), "framework")
            .find("framework.torch.version")
            ->reason.find("no __version__") != std::string::npos);
  // Bounded read: a "version.py" of 64 KiB is not read whole.
  t.file(py, "__version__ = '2.5.1'\n" + std::string(64 * 1024, '#') + "\n");
  CHECK(probe_one(t.path(), "framework").find("framework.torch.version")->status == Status::error);
}

TEST_CASE("framework probe: a symlink out of the root is resolved inside it",
          "[probe][framework]") {
  FixtureTree host; // stands for a directory on the machine running the doctor
  host.file("/torch/version.py", version_py("2.10.0+rocm7.1", "None", "'7.1.25424'"));
  FixtureTree t;
  set_environ(t, "");
  t.dir("/usr/lib/python3/dist-packages");
  t.link("/usr/lib/python3/dist-packages/torch", (host.path() / "torch").string());
  FactSet f = probe_one(t.path(), "framework");
  CHECK(f.find("framework.torch.version")->status == Status::missing);
  // A link inside the root is followed.
  FixtureTree u;
  set_environ(u, "");
  u.file("/opt/torch-real/version.py", version_py("2.10.0+rocm7.1", "None", "'7.1.25424'"));
  u.link("/usr/lib/python3/dist-packages/torch", "/opt/torch-real");
  CHECK(str(probe_one(u.path(), "framework"), "framework.torch.version") == "2.10.0+rocm7.1");
}

TEST_CASE("framework probe: libtorch_hip.so missing, not ELF, or without .hip_fatbin is a status",
          "[probe][framework]") {
  FixtureTree t;
  set_environ(t, "");
  const std::string torch = "/usr/local/lib/python3.12/dist-packages/torch";
  t.file(torch + "/version.py", version_py("2.9.1+rocm6.4", "None", "'6.4.43482'"));
  auto offload = [&]() {
    const FactSet f = probe_one(t.path(), "framework");
    const Fact* o = f.find("framework.torch.offload_targets");
    REQUIRE(o != nullptr);
    return *o;
  };
  CHECK(offload().status == Status::missing);
  CHECK(offload().reason == "the wheel has no libtorch_hip.so");
  t.file(torch + "/lib/libtorch_hip.so", "not an ELF file at all\n");
  CHECK(offload().status == Status::error);
  CHECK(offload().reason == "not an ELF file");
  // A real shared library without device code (libzstd, a build dependency): no .hip_fatbin.
  const std::filesystem::path real = "/usr/lib/x86_64-linux-gnu/libzstd.so.1";
  if (std::filesystem::exists(real)) {
    std::filesystem::copy_file(real, t.path() / ("." + torch + "/lib/libtorch_hip.so"),
                               std::filesystem::copy_options::overwrite_existing);
    CHECK(offload().status == Status::error);
    CHECK(offload().reason == "no .hip_fatbin section");
  }
  // A libtorch_hip.so that is a directory, or a link out of the root, is not read.
  FixtureTree host;
  host.file("/libtorch_hip.so", "outside");
  std::filesystem::remove(t.path() / ("." + torch + "/lib/libtorch_hip.so"));
  t.link(torch + "/lib/libtorch_hip.so", (host.path() / "libtorch_hip.so").string());
  CHECK(offload().status != Status::ok);
  // A CUDA or CPU wheel: not looked for.
  t.file(torch + "/version.py", version_py("2.9.1+cu128", "'12.8'", "None"));
  CHECK(offload().reason == "not a ROCm build");
}

TEST_CASE("framework probe: --python PATH picks its venv or prefix over VIRTUAL_ENV",
          "[probe][framework]") {
  FixtureTree t;
  // The environment names one venv; the user points --python at another environment.
  set_environ(t, std::string("VIRTUAL_ENV=/home/dev/old") + '\0');
  t.file("/home/dev/old/pyvenv.cfg", "include-system-site-packages = false\n");
  t.file("/home/dev/old/lib/python3.12/site-packages/torch/version.py",
         version_py("2.5.1+rocm6.2", "None", "'6.2.41133-dd7f95766'"));
  t.file("/home/dev/new/pyvenv.cfg", "include-system-site-packages = false\n");
  t.link("/home/dev/new/bin/python", "/usr/bin/python3.12"); // as venv makes it: not followed
  t.file("/home/dev/new/lib/python3.12/site-packages/torch/version.py",
         version_py("2.10.0+rocm7.1", "None", "'7.1.25424'"));
  t.file("/opt/conda/envs/train/conda-meta/history", "");
  t.file("/opt/conda/envs/train/lib/python3.11/site-packages/torch/version.py",
         version_py("2.9.1+rocm6.4", "None", "'6.4.43482'"));
  t.file("/usr/lib/python3/dist-packages/torch/version.py", version_py("1.13.0a0", "None", "None"));
  auto with_python = [&](const std::string& python) {
    ProbeOptions opt;
    opt.python = python;
    return probe_one(t.path(), "framework", opt);
  };
  CHECK(str(with_python(""), "framework.torch.version") == "2.5.1+rocm6.2");
  const FactSet venv = with_python("/home/dev/new/bin/python");
  CHECK(str(venv, "framework.torch.version") == "2.10.0+rocm7.1");
  CHECK(venv.find("framework.python_env")->source ==
        "--python /home/dev/new/bin/python (the venv /home/dev/new)");
  const FactSet conda = with_python("/opt/conda/envs/train/bin/python3.11");
  CHECK(str(conda, "framework.torch.version") == "2.9.1+rocm6.4");
  CHECK(conda.find("framework.python_env")->source ==
        "--python /opt/conda/envs/train/bin/python3.11 (the prefix /opt/conda/envs/train)");
  // The system interpreter: the system site directories, not the venv in the environment.
  CHECK(str(with_python("/usr/bin/python3"), "framework.torch.version") == "1.13.0a0");
  // A prefix without torch: missing, and the reason names what --python led to.
  // (The FactSet is kept: a pointer into a temporary one would dangle.)
  const FactSet bare = with_python("/opt/python3.13/bin/python3");
  const Fact* none = bare.find("framework.torch.version");
  REQUIRE(none != nullptr);
  CHECK(none->status == Status::missing);
  CHECK(none->reason.find("--python /opt/python3.13/bin/python3 (the prefix /opt/python3.13)") !=
        std::string::npos);
}

TEST_CASE("framework probe: without VIRTUAL_ENV or CONDA_PREFIX, python3 on PATH decides",
          "[probe][framework]") {
  FixtureTree t;
  // A rocm/pytorch-style image: the conda environment's bin first on PATH, no CONDA_PREFIX.
  t.file("/proc/self/environ", std::string("PATH=relative/bin:/opt/pyenv/shims:/opt/conda/envs/"
                                           "py_3.12/bin:/usr/bin") +
                                   '\0' + "HOME=/root" + '\0');
  // An asdf shim (asdf's internal/shims/shims.go: `exec asdf exec "python3" "$@"`) chooses its
  // interpreter at run time: passed over. (A pyenv shim is resolved: the test case below.)
  t.file("/opt/pyenv/shims/python3", "#!/usr/bin/env bash\nexec asdf exec \"python3\" \"$@\"\n");
  t.file("/opt/conda/envs/py_3.12/bin/python3", std::string("\x7f"
                                                            "ELF",
                                                            4));
  t.file("/opt/conda/envs/py_3.12/lib/python3.12/site-packages/torch/version.py",
         version_py("2.6.0+rocm6.4.1.git1ded221d", "None", "'6.4.43484-123eb5128'"));
  t.file("/usr/bin/python3", std::string("\x7f"
                                         "ELF",
                                         4));
  t.file("/usr/lib/python3/dist-packages/torch/version.py", version_py("1.13.0a0", "None", "None"));
  const FactSet conda = probe_one(t.path(), "framework");
  CHECK(str(conda, "framework.torch.version") == "2.6.0+rocm6.4.1.git1ded221d");
  CHECK(conda.find("framework.python_env")->source ==
        "python3 on PATH, /opt/conda/envs/py_3.12/bin/python3 (after the script "
        "/opt/pyenv/shims/python3) (the prefix /opt/conda/envs/py_3.12)");
  // With the conda directory gone from PATH, /usr/bin/python3: the system site directories.
  t.file("/proc/self/environ", std::string("PATH=/opt/pyenv/shims:/usr/bin") + '\0');
  const FactSet system = probe_one(t.path(), "framework");
  CHECK(str(system, "framework.torch.version") == "1.13.0a0");
  CHECK(system.find("framework.python_env")->source ==
        "python3 on PATH, /usr/bin/python3 (after the script /opt/pyenv/shims/python3) (the "
        "system site directories)");
  // VIRTUAL_ENV still wins over PATH.
  t.file("/home/dev/venv/pyvenv.cfg", "include-system-site-packages = false\n");
  t.file("/home/dev/venv/lib/python3.12/site-packages/torch/version.py",
         version_py("2.5.1+rocm6.2", "None", "'6.2.41133-dd7f95766'"));
  t.file("/proc/self/environ", std::string("PATH=/opt/conda/envs/py_3.12/bin:/usr/bin") + '\0' +
                                   "VIRTUAL_ENV=/home/dev/venv");
  CHECK(str(probe_one(t.path(), "framework"), "framework.torch.version") == "2.5.1+rocm6.2");
}

// pyenv's shim first on PATH (issue 35 §3): the environment is the pyenv version's, chosen as
// pyenv chooses it (libexec/pyenv-version-name, pyenv-version-file, pyenv-which), never Debian's
// python3 further down PATH; the shim is pyenv-rehash's prototype.
TEST_CASE("framework probe: a pyenv shim on PATH judges pyenv's version, as pyenv picks it",
          "[probe][framework][pyenv]") {
  FixtureTree t;
  const std::string nul(1, '\0');
  const std::string root = "/home/dev/.pyenv";
  t.file(root + "/shims/python3",
         "#!/usr/bin/env bash\nset -e\n[ -n \"$PYENV_DEBUG\" ] && set -x\n\n"
         "program=\"${0##*/}\"\n\nexport PYENV_ROOT=\"/home/dev/.pyenv\"\n"
         "exec \"/home/dev/.pyenv/libexec/pyenv\" exec \"$program\" \"$@\"\n");
  const std::string v311 = root + "/versions/3.11.7";
  t.file(v311 + "/bin/python3", std::string("\x7f"
                                            "ELF",
                                            4));
  t.file(v311 + "/lib/python3.11/site-packages/torch/version.py",
         version_py("2.5.1+rocm6.2", "None", "'6.2.41133-dd7f95766'"));
  const std::string v312 = root + "/versions/3.12.1";
  t.file(v312 + "/bin/python3", std::string("\x7f"
                                            "ELF",
                                            4));
  t.dir(v312 + "/lib/python3.12/site-packages");
  t.file(root + "/version", "3.12.1\n");
  // Debian's python3 with its torch, after the shim on PATH: what the probe judged before.
  t.file("/usr/bin/python3", std::string("\x7f"
                                         "ELF",
                                         4));
  t.file("/usr/lib/python3/dist-packages/torch/version.py", version_py("1.13.0a0", "None", "None"));
  // pyenv 2.6's pyenv-version-file-read skips comment lines and reads each line's first word.
  t.file("/home/dev/proj/.python-version",
         "# pinned for the project\n\n  3.11.7  # the project's\n");
  t.dir("/home/dev/proj/src");
  const std::string path = "PATH=" + root + "/shims:/usr/bin:/bin" + nul + "HOME=/home/dev" + nul;
  auto env_of = [&](const std::string& file) {
    t.file("/proc/self/environ", path + file);
    return probe_one(t.path(), "framework");
  };
  // .python-version, found from PWD (recorded in the root's environ) up the tree.
  {
    const FactSet f = env_of("PWD=/home/dev/proj/src" + nul);
    CHECK(str(f, "framework.python_env") == v311 + "/lib/python3.11/site-packages");
    CHECK(str(f, "framework.torch.version") == "2.5.1+rocm6.2");
    const std::string src = f.find("framework.python_env")->source;
    CHECK(src.starts_with("pyenv version 3.11.7 (set by /home/dev/proj/.python-version), through "
                          "the pyenv shim /home/dev/.pyenv/shims/python3 (PYENV_ROOT "
                          "/home/dev/.pyenv, exported by the shim)"));
    CHECK(src.find("(the prefix " + v311 + ")") != std::string::npos);
  }
  // No .python-version from PWD up: $PYENV_ROOT/version (3.12.1, no torch: missing, the reason
  // names pyenv's choice).
  {
    const FactSet f = env_of("PWD=/home/dev" + nul);
    const Fact* v = f.find("framework.torch.version");
    REQUIRE(v != nullptr);
    CHECK(v->status == Status::missing);
    CHECK(v->reason.find("pyenv version 3.12.1 (set by /home/dev/.pyenv/version)") !=
          std::string::npos);
    CHECK(v->reason.find(v312 + "/lib/python3.*/site-packages") != std::string::npos);
  }
  // PYENV_VERSION wins over the files; a prefix ("3.11") is the newest installed 3.11.x
  // (pyenv-latest), a `python-` prefix is dropped.
  for (const std::string version : {"3.11.7", "3.11", "python-3.11.7"}) {
    const FactSet f = env_of("PWD=/home/dev" + nul + "PYENV_VERSION=" + version + nul);
    CHECK(str(f, "framework.python_env") == v311 + "/lib/python3.11/site-packages");
  }
  // `system`, and a version that is not installed (pyenv-which then falls back to system): the
  // python3 on PATH without the shims, Debian's.
  for (const std::string version : {"system", "3.9.1"}) {
    const FactSet f = env_of("PYENV_VERSION=" + version + nul);
    CHECK(str(f, "framework.torch.version") == "1.13.0a0");
    const std::string src = f.find("framework.python_env")->source;
    CHECK(src.starts_with("pyenv version system (set by PYENV_VERSION"));
    CHECK(src.find("python3 on PATH without /home/dev/.pyenv/shims: /usr/bin/python3") !=
          std::string::npos);
    if (version == "3.9.1") CHECK(src.find("not installed: 3.9.1") != std::string::npos);
  }
  // The first of a ':' list that is installed.
  {
    const FactSet f = env_of("PYENV_VERSION=3.8.0:3.11.7" + nul);
    CHECK(str(f, "framework.python_env") == v311 + "/lib/python3.11/site-packages");
  }
  // An activated venv is still the venv (activation puts its bin/ before the shims).
  t.file("/home/dev/venv/pyvenv.cfg", "include-system-site-packages = false\n");
  t.dir("/home/dev/venv/lib/python3.11/site-packages");
  {
    const FactSet f = env_of("PWD=/home/dev/proj" + nul + "VIRTUAL_ENV=/home/dev/venv" + nul);
    CHECK(f.find("framework.python_env")->reason.find("VIRTUAL_ENV=/home/dev/venv") !=
          std::string::npos);
  }
}

// uv does not activate its project environment, but `uv run python train.py` runs in it: with no
// environment active, a uv project (pyproject.toml with uv.lock, from the working directory up, or
// from UV_PROJECT) whose .venv (or UV_PROJECT_ENVIRONMENT) exists is the environment judged, and
// the source says why and names the python3 a plain command would get. A project uv never locked
// (no uv.lock) is only named.
TEST_CASE("framework probe: a uv project's .venv is what uv run uses and is judged",
          "[probe][framework][uv]") {
  FixtureTree t;
  const std::string nul(1, '\0');
  t.file("/usr/bin/python3", std::string("\x7f"
                                         "ELF",
                                         4));
  t.file("/usr/lib/python3/dist-packages/torch/version.py", version_py("1.13.0a0", "None", "None"));
  t.file("/home/dev/proj/pyproject.toml", "[project]\nname = \"train\"\n");
  t.file("/home/dev/proj/.venv/pyvenv.cfg", "home = /usr/bin\nuv = 0.9.2\n");
  t.file("/home/dev/proj/.venv/lib/python3.11/site-packages/torch/version.py",
         version_py("2.9.1+rocm6.4", "None", "'6.4.43482'"));
  t.dir("/home/dev/proj/src");
  auto run = [&](const std::string& vars) {
    t.file("/proc/self/environ", "PATH=/usr/bin:/bin" + nul + vars);
    return probe_one(t.path(), "framework");
  };
  // No uv.lock: uv never managed the project; python3 on PATH is judged and the .venv named.
  {
    const FactSet f = run("PWD=/home/dev/proj/src" + nul);
    CHECK(str(f, "framework.torch.version") == "1.13.0a0");
    CHECK(f.find("framework.python_env")->source ==
          "python3 on PATH, /usr/bin/python3; not judged: /home/dev/proj/.venv, the environment "
          "`uv run` would use in /home/dev/proj (no uv.lock: uv has not managed this project; "
          "activate it or pass --python /home/dev/proj/.venv/bin/python to judge it) (the system "
          "site directories)");
  }
  t.file("/home/dev/proj/uv.lock", "version = 1\nrequires-python = \">=3.11\"\n");
  {
    const FactSet f = run("PWD=/home/dev/proj/src" + nul);
    CHECK(str(f, "framework.torch.version") == "2.9.1+rocm6.4");
    const std::string src = f.find("framework.python_env")->source;
    CHECK_THAT(src,
               Catch::StartsWith("the uv project environment /home/dev/proj/.venv: no "
                                 "VIRTUAL_ENV or CONDA_PREFIX, and `uv run` from the working "
                                 "directory /home/dev/proj/src runs in the project "
                                 "/home/dev/proj (pyproject.toml, uv.lock in /home/dev/proj)"));
    CHECK_THAT(src, Catch::Contains("a plain python3 would be /usr/bin/python3"));
  }
  // Outside the project (PWD elsewhere), python3 on PATH.
  CHECK(str(run("PWD=/home/dev" + nul), "framework.torch.version") == "1.13.0a0");
  // UV_PROJECT (uv's --project) points at it from elsewhere, relative to the working directory.
  CHECK(str(run("PWD=/home/dev" + nul + "UV_PROJECT=proj" + nul), "framework.torch.version") ==
        "2.9.1+rocm6.4");
  // UV_NO_PROJECT turns discovery off.
  CHECK(str(run("PWD=/home/dev/proj" + nul + "UV_NO_PROJECT=1" + nul), "framework.torch.version") ==
        "1.13.0a0");
  // UV_PROJECT_ENVIRONMENT moves it (relative to the project); without a pyvenv.cfg there, the
  // project has no environment yet and python3 on PATH is judged, with nothing named.
  {
    const FactSet f = run("PWD=/home/dev/proj" + nul + "UV_PROJECT_ENVIRONMENT=envs/x" + nul);
    CHECK(str(f, "framework.torch.version") == "1.13.0a0");
    CHECK(f.find("framework.python_env")->source.find("not judged") == std::string::npos);
  }
  t.file("/home/dev/proj/envs/x/pyvenv.cfg", "home = /usr/bin\n");
  t.file("/home/dev/proj/envs/x/lib/python3.12/site-packages/torch/version.py",
         version_py("2.10.0+rocm7.1", "None", "'7.1.25424'"));
  CHECK(str(run("PWD=/home/dev/proj" + nul + "UV_PROJECT_ENVIRONMENT=envs/x" + nul),
            "framework.torch.version") == "2.10.0+rocm7.1");
  // A project below another locked project that is no workspace root is a project of its own,
  // without a lockfile: only named.
  t.file("/home/dev/proj/pkgs/model/pyproject.toml", "[project]\nname = \"model\"\n");
  CHECK(str(run("PWD=/home/dev/proj/pkgs/model" + nul), "framework.torch.version") == "1.13.0a0");
  // A workspace member (its own pyproject.toml, no uv.lock) uses the workspace root's environment.
  t.file("/home/dev/proj/pyproject.toml",
         "[project]\nname = \"train\"\n\n[tool.uv.workspace]\nmembers = [\"pkgs/*\"]\n");
  {
    const FactSet f = run("PWD=/home/dev/proj/pkgs/model" + nul);
    CHECK(str(f, "framework.torch.version") == "2.9.1+rocm6.4");
    CHECK_THAT(
        f.find("framework.python_env")->source,
        Catch::Contains("(pyproject.toml of a workspace member, uv.lock in /home/dev/proj)"));
  }
  // Activated (VIRTUAL_ENV), another environment wins over the project's.
  t.file("/home/dev/venv/pyvenv.cfg", "include-system-site-packages = false\n");
  t.file("/home/dev/venv/lib/python3.11/site-packages/torch/version.py",
         version_py("2.8.0+rocm6.4", "None", "'6.4.43482'"));
  CHECK(str(run("PWD=/home/dev/proj" + nul + "VIRTUAL_ENV=/home/dev/venv" + nul),
            "framework.torch.version") == "2.8.0+rocm6.4");
}

// site.py (https://docs.python.org/3/library/site.html): the user site directory
// ~/.local/lib/pythonX.Y/site-packages comes before the system and conda site-packages when
// ENABLE_USER_SITE holds: not in a venv without the system directories, not with
// PYTHONNOUSERSITE; PYTHONUSERBASE moves it; only a directory for the interpreter's X.Y counts.
TEST_CASE("framework probe: the user site directory shadows the system's torch",
          "[probe][framework][issue37]") {
  FixtureTree t;
  const std::string nul(1, '\0');
  t.file("/usr/local/lib/python3.12/dist-packages/torch/version.py",
         version_py("2.7.1+rocm6.3", "None", "'6.3.42131-fa1d09cbd'"));
  t.file("/home/dev/.local/lib/python3.12/site-packages/torch/version.py",
         version_py("2.7.1+cu126", "'12.6'", "None"));
  t.file("/proc/self/environ", "PATH=/usr/bin" + nul + "HOME=/home/dev" + nul);
  FactSet f = probe_one(t.path(), "framework");
  CHECK(str(f, "framework.torch.version") == "2.7.1+cu126");
  CHECK(str(f, "framework.python_env") == "/home/dev/.local/lib/python3.12/site-packages");
  CHECK(f.find("framework.python_env")->source.find("user site directory") != std::string::npos);
  // PYTHONNOUSERSITE (python -s): the system's.
  t.file("/proc/self/environ",
         "PATH=/usr/bin" + nul + "HOME=/home/dev" + nul + "PYTHONNOUSERSITE=1" + nul);
  CHECK(str(probe_one(t.path(), "framework"), "framework.torch.version") == "2.7.1+rocm6.3");
  // PYTHONUSERBASE moves the directory away from ~/.local.
  t.file("/proc/self/environ",
         "PATH=/usr/bin" + nul + "HOME=/home/dev" + nul + "PYTHONUSERBASE=/srv/pyuser" + nul);
  CHECK(str(probe_one(t.path(), "framework"), "framework.torch.version") == "2.7.1+rocm6.3");
  t.file("/srv/pyuser/lib/python3.12/site-packages/torch/version.py",
         version_py("2.6.0+cpu", "None", "None"));
  CHECK(str(probe_one(t.path(), "framework"), "framework.torch.version") == "2.6.0+cpu");
  // A conda environment is no venv: the user directory still comes first.
  t.file("/opt/conda/lib/python3.12/site-packages/torch/version.py",
         version_py("2.6.0+rocm6.4.1", "None", "'6.4.43484-123eb5128'"));
  t.file("/proc/self/environ",
         "PATH=/usr/bin" + nul + "HOME=/home/dev" + nul + "CONDA_PREFIX=/opt/conda" + nul);
  CHECK(str(probe_one(t.path(), "framework"), "framework.torch.version") == "2.7.1+cu126");
  // A venv without the system site directories turns it off; with them, it is first.
  t.file("/home/dev/venv/pyvenv.cfg", "include-system-site-packages = false\n");
  t.file("/home/dev/venv/lib/python3.12/site-packages/torch/version.py",
         version_py("2.5.1+rocm6.2", "None", "'6.2.41133-dd7f95766'"));
  t.file("/proc/self/environ",
         "PATH=/usr/bin" + nul + "HOME=/home/dev" + nul + "VIRTUAL_ENV=/home/dev/venv" + nul);
  CHECK(str(probe_one(t.path(), "framework"), "framework.torch.version") == "2.5.1+rocm6.2");
  t.file("/home/dev/venv/pyvenv.cfg", "include-system-site-packages = true\n");
  CHECK(str(probe_one(t.path(), "framework"), "framework.torch.version") == "2.7.1+cu126");
}

TEST_CASE("framework probe: a user site directory of another Python version is not used",
          "[probe][framework][issue37]") {
  FixtureTree t;
  const std::string nul(1, '\0');
  t.file("/usr/lib/python3.12/site-packages/torch/version.py",
         version_py("2.7.1+rocm6.3", "None", "'6.3.42131-fa1d09cbd'"));
  t.file("/home/dev/.local/lib/python3.11/site-packages/torch/version.py",
         version_py("2.7.1+cu126", "'12.6'", "None"));
  t.file("/proc/self/environ", "PATH=/usr/bin" + nul + "HOME=/home/dev" + nul);
  CHECK(str(probe_one(t.path(), "framework"), "framework.torch.version") == "2.7.1+rocm6.3");
}

// SPDX-License-Identifier: MIT
// Probe: what PyTorch itself reports (`--framework-deep`, live system only). Runs the interpreter
// training will use (`--python PATH`, else $VIRTUAL_ENV/bin/python, else $CONDA_PREFIX/bin/python,
// else python3 on PATH) in a child process with a time limit, confined (checks/common/child_run.hpp
// run_python: the safe path, a private empty directory, the sudo user), stdin and stderr on
// /dev/null, and a script that imports torch and prints one JSON
// line: torch.__version__, torch.version.hip, torch.cuda.is_available(), torch.cuda.device_count(),
// and for each device get_device_properties(i).{name,total_memory,gcnArchName} and
// torch.cuda.mem_get_info(i) (PyTorch's documented torch.cuda API; on ROCm builds torch.cuda is
// HIP). A Python that is missing, hangs, crashes or prints no JSON is a fact with that status.
#include "child_run.hpp"
#include "probe_util.hpp"
#include "probes.hpp"
#include "python_env.hpp"

#include <halo/fact_keys.hpp>
#include <halo/io.hpp>
#include <halo/units.hpp>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <unistd.h>

#include <chrono>
#include <cstdlib>

namespace halo::probes {
namespace {

constexpr std::size_t kMaxOutputBytes = std::size_t{64} * 1024;
constexpr std::size_t kMaxDevices = 64;

// Kept short and dependency-free: it runs under the user's interpreter.
// The first line drops the '' that `-c` puts first on sys.path where the interpreter predates -P
// and PYTHONSAFEPATH (3.11; https://docs.python.org/3/library/sys.html#sys.path); `sys` is built
// in, so importing it reads no file.
constexpr const char* kScript = R"PY(import sys; sys.path[:1] = [p for p in sys.path[:1] if p]
import json, os
out = {"python": sys.executable, "python_version": sys.version.split()[0], "uid": os.getuid()}
try:
    import torch
except BaseException as e:
    out["import_error"] = (type(e).__name__ + ": " + str(e))[:300]
    print(json.dumps(out)); sys.exit(0)
out["torch_version"] = str(torch.__version__)
out["hip"] = getattr(torch.version, "hip", None)
out["cuda"] = getattr(torch.version, "cuda", None)
try:
    out["available"] = bool(torch.cuda.is_available())
    n = int(torch.cuda.device_count()) if out["available"] else 0
    out["device_count"] = n
    devs = []
    for i in range(min(n, 64)):
        p = torch.cuda.get_device_properties(i)
        d = {"name": str(p.name), "total_memory": int(p.total_memory),
             "arch": str(getattr(p, "gcnArchName", "") or "")}
        try:
            free, total = torch.cuda.mem_get_info(i)
            d["free"] = int(free)
        except BaseException as e:
            d["mem_error"] = (type(e).__name__ + ": " + str(e))[:200]
        devs.append(d)
    out["devices"] = devs
except BaseException as e:
    out["cuda_error"] = (type(e).__name__ + ": " + str(e))[:300]
print(json.dumps(out))
)PY";

/// The keys of every fact this probe provides (its entry of checks/framework/facts.json); every
/// one is set, ok or not, on every run.
const std::vector<std::string>& keys() {
  static const std::vector<std::string> k = [] {
    std::vector<std::string> out;
    for (const auto& decl : declared_facts("framework_deep"))
      out.emplace_back(decl.pattern);
    return out;
  }();
  return k;
}

void all_status(FactSet& facts, Status st, const std::string& src, const std::string& why) {
  for (const auto& k : keys())
    facts.put_status(k, st, src, why);
}

void collect(const ProbeContext& ctx, FactSet& facts) {
  const ProbeOptions& o = ctx.options;
  if (!o.framework_deep) {
    all_status(facts, Status::missing, "torch",
               std::string(kNotProbedPrefix) +
                   "run with --framework-deep to ask PyTorch itself (imports torch, seconds)");
    return;
  }
  if (!ctx.root.is_live()) {
    all_status(facts, Status::missing, "torch",
               std::string(kNotProbedPrefix) + "--framework-deep asks the live system's PyTorch, "
                                               "not one under --root");
    return;
  }
  // The interpreter the static probe judges too (checks/framework/python_env.hpp): a pyenv shim is
  // resolved to the version's own interpreter, which is what the shim would exec.
  const PythonChoice chosen = resolve_python(ctx.root, o.python);
  const std::string& python = chosen.python;
  const std::string& basis = chosen.basis;
  if (python.empty() || !executable(python)) {
    // Asked for, and not possible: an error (could not be checked), not a skip.
    all_status(facts, Status::error, python.empty() ? "PATH" : python,
               python.empty() ? basis
                              : fmt::format("{} is not an executable file ({})", python, basis));
    return;
  }
  std::string src = fmt::format("{} -c <torch query> ({})", python, basis);
  // Importing torch takes seconds and the run is otherwise silent: say what it waits for, on a
  // terminal only (as cargo's and pip's progress goes to stderr when it is a tty), so a pipe, a
  // log or a CI job's stderr gets no extra line.
  const bool tell = ::isatty(STDERR_FILENO) != 0;
  const auto started = std::chrono::steady_clock::now();
  if (tell)
    write_stderr_text(fmt::format("halo-doctor: importing torch with {} (up to {:g} s)... ", python,
                                  o.framework_timeout_s));
  // Never in the caller's working directory, never as root under sudo (issue 44 item 2).
  const PythonRun confined =
      run_python(python, kScript, {}, o.framework_timeout_s, kMaxOutputBytes);
  const child::Result& run = confined.run;
  if (!confined.how.empty()) src += "; " + confined.how;
  if (tell)
    write_stderr_text(fmt::format(
        "{:.1f} s\n",
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count()));
  if (!run.started()) {
    all_status(facts, Status::error, src, "could not start it: " + run.start_error);
    return;
  }
  nlohmann::json j;
  const std::vector<std::string> lines = child::complete_lines(run.out);
  for (auto it = lines.rbegin(); it != lines.rend() && j.is_null(); ++it) {
    auto parsed = nlohmann::json::parse(*it, nullptr, false);
    if (parsed.is_object()) j = std::move(parsed);
  }
  if (j.is_null()) {
    all_status(
        facts, Status::error, src,
        fmt::format("it printed no answer ({})", child::describe_end(run, o.framework_timeout_s)));
    return;
  }
  if (j.contains("uid") && j["uid"].is_number_integer())
    src += fmt::format("; it ran as uid {}", j["uid"].get<std::int64_t>());
  auto str_of = [&j](const char* k) -> std::optional<std::string> {
    if (j.contains(k) && j[k].is_string()) return j[k].get<std::string>().substr(0, 300);
    return std::nullopt;
  };
  if (auto e = str_of("import_error")) {
    all_status(facts, Status::error, src, "import torch failed: " + *e);
    facts.put_ok(std::string(fact_keys::framework::deep_status), std::string("import_failed"), src);
    facts.put_ok(std::string(fact_keys::framework::deep_import_error), *e, src);
    facts.put_ok(std::string(fact_keys::framework::deep_python), str_of("python").value_or(python),
                 src);
    return;
  }
  facts.put_ok(std::string(fact_keys::framework::deep_status), std::string("ok"), src);
  facts.put_ok(std::string(fact_keys::framework::deep_python), str_of("python").value_or(python),
               src);
  facts.put_status(std::string(fact_keys::framework::deep_import_error), Status::missing, src,
                   "import torch worked");
  if (auto v = str_of("torch_version"))
    facts.put_ok(std::string(fact_keys::framework::deep_torch_version), *v, src);
  else
    facts.put_status(std::string(fact_keys::framework::deep_torch_version), Status::error, src,
                     "no torch.__version__");
  if (auto v = str_of("hip"))
    facts.put_ok(std::string(fact_keys::framework::deep_hip_version), *v, src);
  else
    facts.put_status(std::string(fact_keys::framework::deep_hip_version), Status::missing, src,
                     "torch.version.hip is None: not a ROCm build");
  if (auto e = str_of("cuda_error")) {
    for (const std::string_view k :
         {fact_keys::framework::deep_available, fact_keys::framework::deep_device_count,
          fact_keys::framework::deep_devices, fact_keys::framework::deep_device0_name,
          fact_keys::framework::deep_device0_arch, fact_keys::framework::deep_device0_total_bytes,
          fact_keys::framework::deep_device0_free_bytes})
      facts.put_status(std::string(k), Status::error, src, "torch.cuda raised " + *e);
    return;
  }
  facts.put_ok(std::string(fact_keys::framework::deep_available), j.value("available", false), src);
  const auto count = j.contains("device_count") && j["device_count"].is_number_integer()
                         ? j["device_count"].get<std::int64_t>()
                         : 0;
  facts.put_ok(std::string(fact_keys::framework::deep_device_count), count, src);
  std::vector<std::string> listed;
  const nlohmann::json devs =
      j.contains("devices") && j["devices"].is_array() ? j["devices"] : nlohmann::json::array();
  for (std::size_t i = 0; i < devs.size() && i < kMaxDevices; ++i) {
    const auto& d = devs[i];
    if (!d.is_object()) continue;
    const std::int64_t total = d.contains("total_memory") && d["total_memory"].is_number_integer()
                                   ? d["total_memory"].get<std::int64_t>()
                                   : -1;
    listed.push_back(fmt::format("{}: {} {} {}", i, d.value("name", std::string("?")).substr(0, 80),
                                 d.value("arch", std::string()).substr(0, 40),
                                 total >= 0 ? units::gib(total) : std::string("?")));
    if (i != 0) continue;
    facts.put_ok(std::string(fact_keys::framework::deep_device0_name),
                 d.value("name", std::string()).substr(0, 80), src);
    facts.put_ok(std::string(fact_keys::framework::deep_device0_arch),
                 d.value("arch", std::string()).substr(0, 40), src);
    if (total >= 0)
      facts.put_ok(std::string(fact_keys::framework::deep_device0_total_bytes), total, src);
    else
      facts.put_status(std::string(fact_keys::framework::deep_device0_total_bytes), Status::error,
                       src, "no total_memory");
    if (d.contains("free") && d["free"].is_number_integer())
      facts.put_ok(std::string(fact_keys::framework::deep_device0_free_bytes),
                   d["free"].get<std::int64_t>(), src);
    else
      facts.put_status(std::string(fact_keys::framework::deep_device0_free_bytes), Status::error,
                       src, d.value("mem_error", std::string("mem_get_info gave no answer")));
  }
  facts.put_ok(std::string(fact_keys::framework::deep_devices), listed, src);
  if (devs.empty())
    for (const std::string_view k :
         {fact_keys::framework::deep_device0_name, fact_keys::framework::deep_device0_arch,
          fact_keys::framework::deep_device0_total_bytes,
          fact_keys::framework::deep_device0_free_bytes})
      facts.put_status(std::string(k), Status::missing, src, "PyTorch sees no GPU");
}

} // namespace

std::pair<std::string, std::string> choose_python(const std::string& given) {
  const PythonChoice c = resolve_python(Root("/"), given);
  return {c.python, c.basis};
}

std::unique_ptr<Probe> make_framework_deep_probe() {
  return std::make_unique<BasicProbe>("framework_deep", collect);
}

} // namespace halo::probes

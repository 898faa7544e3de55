// SPDX-License-Identifier: MIT
// The facts-file reader's counts (issue 44 item 4): a facts file replayed as `check --facts` and
// `fleet compare` read it (parse, then every derivation again). A count or list beyond what
// hardware has (pci.amd_gpu_count 2^62, a kfd.gpu_nodes list of a million) must be that node's
// error, never a loop: libFuzzer's -timeout (10 s in run.sh) is the finding. The derived GPU count
// stays within checks/gpus/gpus.hpp's bound whatever the file says.
#include "fuzz_common.hpp"
#include "gpus/gpus.hpp"

#include <halo/checks.hpp>
#include <halo/doctor.hpp>
#include <halo/error.hpp>
#include <halo/fact.hpp>
#include <halo/probe.hpp>

#include <sys/mman.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace halo;
  static const ProbeRegistry reg = builtin_probes();
  static const int fd = ::memfd_create("halo-fuzz-counts", MFD_CLOEXEC);
  if (fd < 0 || ::ftruncate(fd, 0) != 0 ||
      ::pwrite(fd, data, size, 0) != static_cast<ssize_t>(size))
    std::abort();
  static const std::string file = "/proc/self/fd/" + std::to_string(fd);
  try {
    DoctorOptions o;
    o.facts_file = file;
    o.probe.no_runtime = true;
    const FactSet facts = gather_facts(o, reg);
    if (const auto n = facts.get_int(keys::gpu_count); n && (*n < 0 || *n > probes::kMaxGpuNodes))
      std::abort();
  } catch (const InputError&) {
  }
  return 0;
}

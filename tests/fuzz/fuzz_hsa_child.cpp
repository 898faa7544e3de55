// SPDX-License-Identifier: MIT
// The ROCr child's protocol decoder (checks/runtime/hsa_protocol.cpp, checks/runtime/hsa.cpp):
// lines of JSON events from a process that may be a broken runtime or a hostile replay library.
#include "fuzz_common.hpp"
#include "runtime/hsa.hpp"

#include <halo/root.hpp>

#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace halo;
  std::vector<std::string> lines;
  std::string cur;
  for (char c : fuzz::text(data, size)) {
    if (c == '\n') {
      lines.push_back(std::move(cur));
      cur.clear();
    } else {
      cur += c;
    }
  }
  static const Root root("/nonexistent-halo-fuzz-root");
  const ProbeOptions opt;
  const ProbeContext ctx{root, opt};
  FactSet facts;
  probes::hsa::decode_child_lines(ctx, lines, facts);
  return 0;
}

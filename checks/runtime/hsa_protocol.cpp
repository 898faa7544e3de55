// SPDX-License-Identifier: MIT
// The ROCr probe's line protocol (checks/runtime/hsa_internal.hpp): the child
// (checks/runtime/hsa_child.cpp) writes one JSON event object per line to its pipe; the parent
// parses the lines it received back into Events, which checks/runtime/hsa.cpp turns into facts.
#include "child_run.hpp"
#include "hsa_internal.hpp"

#include <halo/sanitize.hpp>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstddef>
#include <string>
#include <vector>

namespace halo::probes::hsa {

using nlohmann::json;

void write_event(int fd, const json& event) {
  write_all(fd, dump_json(event) + "\n");
}

Events parse_events(const std::vector<std::string>& lines) {
  Events ev;
  for (const auto& line : lines) {
    json j = json::parse(line, nullptr, false);
    // Every number of the protocol is an integer (child_body writes uint16/32/64 and bools): a
    // floating-point one would reach get<unsigned>() and overflow the conversion (undefined
    // behaviour, found by tests/fuzz/fuzz_hsa_child.cpp), so such a line is malformed.
    const auto has_float = [](const json& o) {
      return std::any_of(o.begin(), o.end(), [](const json& v) { return v.is_number_float(); });
    };
    if (j.is_discarded() || !j.is_object() || !j.contains("event") || has_float(j)) {
      ++ev.malformed;
      continue;
    }
    const std::string name = j.value("event", "");
    ev.last = name;
    if (name == "load")
      ev.load = j;
    else if (name == "load_failed")
      ev.load_failed = j;
    else if (name == "init")
      ev.init = j;
    else if (name == "system")
      ev.system = j;
    else if (name == "agents_failed")
      ev.agents_failed = j;
    else if (name == "agent")
      ev.agents.push_back(j);
    else if (name == "pool")
      ev.pools[j.value("agent", std::size_t{0})].push_back(j);
    else if (name == "pools_failed")
      ev.pools_failed[j.value("agent", std::size_t{0})] = j.value("string", "");
    else if (name == "agents_done")
      ev.agents_done = j;
    else if (name == "done")
      ev.done = j;
  }
  return ev;
}

/// The step the child was in when it stopped, from the last thing it reported.
std::string step_after(const Events& ev) {
  const std::string& l = ev.last;
  if (l.empty()) return "while loading the library (dlopen)";
  if (l == "load") return "in hsa_init";
  if (l == "init" || l == "system") return "while listing agents (hsa_iterate_agents)";
  if (l == "agent" || l == "pool" || l == "pools_failed")
    return fmt::format("while querying agent {} and its memory pools",
                       ev.agents.empty() ? std::size_t{0} : ev.agents.size() - 1);
  if (l == "agents_done") return "in hsa_shut_down";
  return "after " + l;
}

} // namespace halo::probes::hsa

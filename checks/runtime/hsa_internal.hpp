// SPDX-License-Identifier: MIT
// Internal pieces of the ROCr probe, shared by its three files and not part of its interface
// (checks/runtime/hsa.hpp, checks/common/probes.hpp):
// - checks/runtime/hsa_child.cpp: the forked child: loads ROCr (dlopen), queries it, writes events;
// - checks/runtime/hsa_protocol.cpp: the line protocol between that child and the doctor: one JSON
// event
//   object per line, written by the child and parsed back by the parent;
// - checks/runtime/hsa.cpp: the events turned into hsa.* facts, and the probe itself.
#pragma once

#include <hsa/hsa.h>
#include <hsa/hsa_ext_amd.h>
#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace halo::probes::hsa {

// Attributes newer than the ROCm 5.2 headers (hsa_ext_amd.h of ROCm 6.x/7.x).
/// hsa_agent_get_info attribute HSA_AMD_AGENT_INFO_MEMORY_PROPERTIES: a uint64_t bit mask.
inline constexpr std::uint32_t kAgentInfoMemoryProperties = 0xA114;
/// Bit 0 of HSA_AMD_AGENT_INFO_MEMORY_PROPERTIES: the agent is an APU (rocminfo's
/// "Memory Properties: APU").
inline constexpr std::uint64_t kMemoryPropertyAgentIsApu = 1u << 0;
/// hsa_amd_memory_pool_get_info attribute HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_REC_GRANULE: a
/// uint64_t in bytes.
inline constexpr std::uint32_t kPoolInfoRecGranule = 18;
/// Bit of HSA_AMD_MEMORY_POOL_INFO_GLOBAL_FLAGS for an extended-scope fine-grained pool
/// (rocminfo's "EXTENDED FINE GRAINED").
inline constexpr std::uint32_t kGlobalFlagExtendedFineGrained = 8;
/// HSA_STATUS_SUCCESS, as the protocol's "init" event writes it ("code", unsigned).
inline constexpr unsigned kStatusSuccess = static_cast<unsigned>(HSA_STATUS_SUCCESS);
/// HSA_DEVICE_TYPE_GPU, as an "agent" event's "device_type" (unsigned).
inline constexpr unsigned kDeviceGpu = static_cast<unsigned>(HSA_DEVICE_TYPE_GPU);
/// HSA_AMD_SEGMENT_GLOBAL, as a "pool" event's "segment" (unsigned).
inline constexpr unsigned kSegmentGlobal = static_cast<unsigned>(HSA_AMD_SEGMENT_GLOBAL);

// ---------------------------------------------------------------------------------------------
// The protocol (checks/runtime/hsa_protocol.cpp). The child writes, in this order: "load"
// (requested, path, errors) or "load_failed" (errors); "init" (code, string); "system"
// (version_major, version_minor, errors); "agents_failed" (string) or, per agent, "agent" (index
// and the queried fields, errors) followed by its "pool" events (agent, index, fields, errors) or
// "pools_failed" (agent, string); then "agents_done" (count) and "done" (shut_down). Numbers are
// integers, never floating point. The "errors" of "load"/"load_failed" list the dlopen failures
// (strings); those of "system", "agent" and "pool" map each field the runtime did not answer to its
// status string.

/// Writes one event to the pipe `fd`: `event` as compact JSON (dump_json) and a newline, the
/// protocol's only framing. Write errors are ignored: the parent sees the lines that arrived.
void write_event(int fd, const nlohmann::json& event);

/// The child's report, parsed. Each event is kept as its whole JSON object.
struct Events {
  std::optional<nlohmann::json> load, load_failed, init, system, agents_failed, agents_done, done;
  std::vector<nlohmann::json> agents;                       ///< "agent" events, in order
  std::map<std::size_t, std::vector<nlohmann::json>> pools; ///< "pool" events by agent index
  std::map<std::size_t, std::string> pools_failed;          ///< agent index -> status string
  std::string last;                                         ///< last event name
  std::size_t malformed = 0;                                ///< lines that were not an event object
};

/// Parses the child's lines (untrusted): a line that is not a JSON object with an "event", or that
/// holds a floating-point number, counts as malformed and is skipped; unknown events only update
/// `last`. Field types are not checked here: nlohmann::json's type_error reaches the caller.
Events parse_events(const std::vector<std::string>& lines);

/// The step the child was in when it stopped, from the last thing it reported ("in hsa_init",
/// "while querying agent 2 and its memory pools", ...), for the failure messages.
std::string step_after(const Events& ev);

// ---------------------------------------------------------------------------------------------
// The child (checks/runtime/hsa_child.cpp).

/// Runs in the forked child (run_in_child, checks/common/child_run.hpp): dlopens the first of
/// `candidates` (library_candidates()) that is ROCr, calls hsa_init and writes the events above
/// to `fd`, one per line, as far as the runtime lets it.
void child_body(int fd, const std::vector<std::string>& candidates);

} // namespace halo::probes::hsa

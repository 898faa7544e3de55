// SPDX-License-Identifier: MIT
// PyTorch's allocator settings string, checked as c10/core/AllocatorConfig.cpp parseArgs reads
// it: the strings people set (seed 001, halo-forge's default) pass; each TORCH_CHECK of the
// parser is met by one string that trips it, with PyTorch's own message.
#include "framework/alloc_conf.hpp"

#include <catch2/catch.hpp>

using halo::probes::alloc_conf_problems;

TEST_CASE("allocator settings PyTorch accepts", "[alloc_conf][issue14]") {
  for (const char* ok :
       {"", "expandable_segments:True", "garbage_collection_threshold:0.8,max_split_size_mb:512",
        "backend:native,expandable_segments:True,garbage_collection_threshold:0.9,"
        "max_split_size_mb:512",
        " expandable_segments : False , max_split_size_mb : 20 ", // spaces are dropped
        "roundup_power2_divisions:4", "roundup_power2_divisions:[256:1,512:2,1024:4,>:8]",
        "release_lock_on_hipmalloc:True", "release_lock_on_cudamalloc:False",
        "pinned_use_hip_host_register:True,pinned_num_register_threads:8",
        "max_split_size_mb:-1", // stoi's -1 wraps to a huge size_t in c10 and passes
        "backend:hipMallocAsync"}) {
    INFO(ok);
    CHECK(alloc_conf_problems(ok).empty());
  }
}

TEST_CASE("allocator settings PyTorch refuses, with its message", "[alloc_conf][issue14]") {
  const auto first = [](const char* s) {
    const auto p = alloc_conf_problems(s);
    return p.empty() ? std::string("(accepted)") : p.front();
  };
  CHECK(first("expandable_segment:True") ==
        "Unrecognized CachingAllocator option: expandable_segment");
  CHECK(first("expandable_segments:true") ==
        "Expected a single True/False argument for expandable_segments");
  CHECK(first("expandable_segments:1") ==
        "Expected a single True/False argument for expandable_segments");
  CHECK(first("max_split_size_mb:19") ==
        "CachingAllocator option max_split_size_mb too small, must be >= 20");
  CHECK(first("max_split_size_mb:20") == "(accepted)");
  CHECK(first("garbage_collection_threshold:1.0") ==
        "garbage_collect_threshold is invalid, set it in (0.0, 1.0)");
  CHECK(first("garbage_collection_threshold:0") ==
        "garbage_collect_threshold is invalid, set it in (0.0, 1.0)");
  CHECK(first("garbage_collection_threshold:0.999") == "(accepted)");
  CHECK(first("max_split_size_mb=512") ==
        "Unrecognized CachingAllocator option: max_split_size_mb=512");
  CHECK(first("expandable_segments:True;max_split_size_mb:512") ==
        "Expected a single True/False argument for expandable_segments");
  CHECK(first("roundup_power2_divisions:3") == "For roundups, the divisons has to be power of 2 ");
  CHECK(first("roundup_power2_divisions:[300:2]") ==
        "For roundups, the intervals have to be power of 2 ");
  CHECK(first("pinned_num_register_threads:256") ==
        "Number of register threads should be less than or equal to 128");
  CHECK(first("backend:cuda") ==
        "Unknown allocator backend, options are native and hipMallocAsync");
  CHECK(first("max_split_size_mb:") == "Error, expecting max_split_size_mb value");
  CHECK(first("max_split_size_mb:abc") ==
        "max_split_size_mb: 'abc' is not a number (std::stoi throws)");
  // Bounded: a huge value is read up to 4 KiB and gives one answer, not thousands.
  CHECK(alloc_conf_problems(std::string(1 << 20, 'x')).size() == 1);
}

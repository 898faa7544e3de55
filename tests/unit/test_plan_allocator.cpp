// SPDX-License-Identifier: MIT
// The caching allocator simulation (include/halo/plan_allocator.hpp) against the rules of
// PyTorch's c10/cuda/CUDACachingAllocator.cpp that it claims to follow (issue 47 §1).
#include <halo/plan_allocator.hpp>

#include <catch2/catch.hpp>

#include <stdexcept>

namespace {
constexpr std::int64_t MiB = 1024 * 1024;
}

TEST_CASE("allocator sim: small requests share 2 MiB segments (kSmallSize, kSmallBuffer)",
          "[plan][allocator]") {
  halo::plan::CachingAllocatorSim a;
  a.malloc(MiB); // exactly kSmallSize: still the small pool
  CHECK(a.reserved() == 2 * MiB);
  a.malloc(MiB);
  CHECK(a.reserved() == 2 * MiB); // the same segment
  a.malloc(1);                    // rounded to 512 B, a new 2 MiB segment
  CHECK(a.reserved() == 4 * MiB);
  CHECK(a.allocated() == 2 * MiB + 512);
}

TEST_CASE("allocator sim: 1-10 MiB requests get a 20 MiB segment, larger ones their size in 2 MiB",
          "[plan][allocator]") {
  halo::plan::CachingAllocatorSim a;
  a.malloc(MiB + 1);
  CHECK(a.reserved() == 20 * MiB); // kLargeBuffer below kMinLargeAlloc
  a.malloc(5 * MiB);
  CHECK(a.reserved() == 20 * MiB); // the split remainder of that segment
  halo::plan::CachingAllocatorSim b;
  b.malloc(10 * MiB); // kMinLargeAlloc: a segment of its own size
  CHECK(b.reserved() == 10 * MiB);
  b.malloc(100 * MiB + 1); // rounded up to 2 MiB
  CHECK(b.reserved() == 112 * MiB);
}

TEST_CASE("allocator sim: a cached block is reused only when large enough, best fit",
          "[plan][allocator]") {
  halo::plan::CachingAllocatorSim a;
  const auto big = a.malloc(100 * MiB);
  const auto mid = a.malloc(60 * MiB);
  a.free(big);
  a.free(mid);
  CHECK(a.reserved() == 160 * MiB);
  a.malloc(50 * MiB); // best fit: the 60 MiB block, split (10 MiB remain)
  CHECK(a.reserved() == 160 * MiB);
  a.malloc(90 * MiB); // the 100 MiB block
  CHECK(a.reserved() == 160 * MiB);
  a.malloc(20 * MiB); // 10 MiB cached remain: too small, so a new segment
  CHECK(a.reserved() == 180 * MiB);
}

TEST_CASE("allocator sim: the large pool splits only above 1 MiB of remainder",
          "[plan][allocator]") {
  halo::plan::CachingAllocatorSim a;
  const auto h = a.malloc(20 * MiB);
  a.free(h);
  a.malloc(19 * MiB); // 1 MiB would remain: not split, the whole block is handed out
  CHECK(a.allocated() == 20 * MiB);
  halo::plan::CachingAllocatorSim b;
  const auto g = b.malloc(20 * MiB);
  b.free(g);
  b.malloc(18 * MiB); // 2 MiB remain: split
  CHECK(b.allocated() == 18 * MiB);
}

TEST_CASE("allocator sim: freed neighbours merge; separate segments never do",
          "[plan][allocator]") {
  halo::plan::CachingAllocatorSim a;
  const auto whole = a.malloc(40 * MiB);
  a.free(whole);
  const auto x = a.malloc(20 * MiB);
  const auto y = a.malloc(20 * MiB);
  CHECK(a.reserved() == 40 * MiB);
  a.free(x);
  a.free(y);
  a.malloc(40 * MiB); // the merged block
  CHECK(a.reserved() == 40 * MiB);
  halo::plan::CachingAllocatorSim b;
  const auto p = b.malloc(20 * MiB);
  const auto q = b.malloc(20 * MiB);
  b.free(p);
  b.free(q);
  b.malloc(40 * MiB); // two 20 MiB segments are not one 40 MiB block
  CHECK(b.reserved() == 80 * MiB);
  CHECK_THROWS_AS(b.free(p), std::logic_error);
}

TEST_CASE("allocator sim: expandable segments grow one segment in 20 MiB pages",
          "[plan][allocator]") {
  halo::plan::CachingAllocatorSim a(true);
  const auto x = a.malloc(30 * MiB);
  CHECK(a.reserved() == 40 * MiB);
  a.malloc(30 * MiB); // 10 MiB free at the end, one more page makes 30
  CHECK(a.reserved() == 60 * MiB);
  a.free(x);
  a.malloc(40 * MiB); // the 30 MiB hole is too small: two more pages at the end
  CHECK(a.reserved() == 100 * MiB);
  a.malloc(25 * MiB); // fits the hole (expandable segments split any remainder)
  CHECK(a.reserved() == 100 * MiB);
  CHECK(a.allocated() == 95 * MiB);
  CHECK(a.peak_allocated() == 95 * MiB);
}

TEST_CASE("allocator sim: a repeated request sequence that frees what it took leaves the cache "
          "as it found it",
          "[plan][allocator]") {
  for (const bool expandable : {false, true}) {
    halo::plan::CachingAllocatorSim a(expandable);
    const auto weights = a.malloc(300 * MiB);
    const auto micro_step = [&a] { // one gradient-accumulation micro-step's pattern
      const auto act = a.malloc(64 * MiB);
      const auto small = a.malloc(4096);
      const auto grad = a.malloc(30 * MiB);
      a.free(act);
      const auto logits = a.malloc(90 * MiB);
      a.free(grad);
      a.free(logits);
      a.free(small);
    };
    micro_step();
    const auto after_first = a.cache_state();
    for (int i = 0; i < 1000; ++i)
      micro_step();
    CHECK(a.cache_state() == after_first);
    CHECK(a.allocated() == 300 * MiB);
    // A request that needs a new segment changes the state (reserved and the free blocks).
    const auto more = a.malloc(500 * MiB);
    CHECK(a.cache_state() != after_first);
    a.free(more);
    CHECK(a.cache_state() != after_first); // the cache keeps the segment
    a.free(weights);
  }
}

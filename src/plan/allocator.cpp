// SPDX-License-Identifier: MIT
// PyTorch's caching allocator, simulated (include/halo/plan_allocator.hpp). Each rule below is
// c10/cuda/CUDACachingAllocator.cpp of pytorch/pytorch (read at commit 001074d2, namespace
// c10::cuda::CUDACachingAllocator::Native, class DeviceCachingAllocator); the function named in
// each comment is where the rule is. Left out because a training step on one stream never meets
// them: other streams and events, CUDA graph pools, the out-of-memory path
// (release_available_cached_blocks, release_cached_blocks), max_split_size_mb and
// roundup_power2_divisions (both unset by default: CachingAllocatorConfig).
#include <halo/plan_allocator.hpp>

#include <stdexcept>

namespace halo::plan {
namespace {
// The constants at the top of CUDACachingAllocator.cpp.
constexpr std::int64_t kMinBlockSize = 512;    // "all sizes are rounded to at least 512 bytes"
constexpr std::int64_t kSmallSize = 1048576;   // "largest 'small' allocation is 1 MiB"
constexpr std::int64_t kSmallBuffer = 2097152; // "'small' allocations are packed in 2 MiB blocks"
constexpr std::int64_t kMinLargeAlloc =
    10485760; // "allocations between 1 and 10 MiB may use kLargeBuffer"
constexpr std::int64_t kRoundLarge = 2097152; // "round up large allocations to 2 MiB"
constexpr std::int64_t kLargeBuffer =
    20971520; // "'large' allocations may be packed in 20 MiB blocks"

/// round_size: at least kMinBlockSize, else up to a multiple of it.
std::int64_t round_size(std::int64_t size) {
  if (size < kMinBlockSize) return kMinBlockSize;
  return kMinBlockSize * ((size + kMinBlockSize - 1) / kMinBlockSize);
}

/// get_allocation_size: the segment cudaMalloc is asked for when no cached block fits.
std::int64_t get_allocation_size(std::int64_t size) {
  if (size <= kSmallSize) return kSmallBuffer;
  if (size < kMinLargeAlloc) return kLargeBuffer;
  return kRoundLarge * ((size + kRoundLarge - 1) / kRoundLarge);
}
} // namespace

struct CachingAllocatorSim::Block {
  Pool* pool = nullptr;
  std::int64_t address = 0;
  std::int64_t size = 0;
  bool allocated = false;
  Block* prev = nullptr; ///< the neighbour split from the same segment, lower address
  Block* next = nullptr;
};

namespace {
/// BlockComparatorSize: free blocks ordered by size, then address (one stream here).
struct BySize {
  bool operator()(const CachingAllocatorSim::Block* a, const CachingAllocatorSim::Block* b) const;
};
} // namespace

struct CachingAllocatorSim::Pool {
  bool small = false;
  std::set<Block*, BySize> blocks; ///< free (cached) blocks
  // Expandable segments: the pool's one segment, mapped up to `mapped_end`, and its last block.
  std::int64_t page = 0;
  std::int64_t base = 0;
  std::int64_t mapped_end = 0;
  Block* last = nullptr;
};

namespace {
bool BySize::operator()(const CachingAllocatorSim::Block* a,
                        const CachingAllocatorSim::Block* b) const {
  if (a->size != b->size) return a->size < b->size;
  return a->address < b->address;
}
} // namespace

CachingAllocatorSim::CachingAllocatorSim(bool expandable)
    : expandable_(expandable), small_(std::make_unique<Pool>()), large_(std::make_unique<Pool>()) {
  small_->small = true;
  // Note [Expandable Segments]: "we use 2MiB pages for our small pool and 20MiB pages for our
  // large pool".
  small_->page = kSmallBuffer;
  large_->page = kLargeBuffer;
  // Each pool's expandable segment reserves its own address range (ExpandableSegment ctor).
  small_->base = 0;
  large_->base = std::int64_t{1} << 50;
}

CachingAllocatorSim::~CachingAllocatorSim() = default;

CachingAllocatorSim::Block* CachingAllocatorSim::new_block(Pool* pool, std::int64_t address,
                                                           std::int64_t size) {
  Block* b = nullptr;
  if (!spare_.empty()) { // a block merged away by free(): reused, so memory stays bounded
    b = spare_.back();
    spare_.pop_back();
    *b = Block{};
  } else {
    blocks_.push_back(std::make_unique<Block>());
    b = blocks_.back().get();
  }
  b->pool = pool;
  b->address = address;
  b->size = size;
  return b;
}

/// get_free_block: the smallest cached block of the pool at least `size` large
/// (pool.blocks.lower_bound(&p.search_key)); none is reused when all are smaller.
CachingAllocatorSim::Block* CachingAllocatorSim::get_free_block(Pool& pool, std::int64_t size) {
  Block key;
  key.size = size;
  key.address = -1;
  auto it = pool.blocks.lower_bound(&key);
  if (it == pool.blocks.end()) return nullptr;
  Block* b = *it;
  pool.blocks.erase(it);
  return b;
}

/// alloc_block: a new segment of get_allocation_size(size) from the device (cudaMalloc).
CachingAllocatorSim::Block* CachingAllocatorSim::alloc_block(Pool& pool, std::int64_t size) {
  const std::int64_t seg = get_allocation_size(size);
  Block* b = new_block(&pool, next_address_, seg);
  next_address_ += seg + kLargeBuffer; // segments are not adjacent: never merged
  reserved_ += seg;
  return b;
}

/// Expandable segments (Note [Expandable Segments], try_allocate_expandable / map_block): when
/// no mapped free block fits, the pool's one segment maps more pages at its end, extending the
/// free block there (or starting a new one), in whole pages of the pool's page size.
CachingAllocatorSim::Block* CachingAllocatorSim::expand(Pool& pool, std::int64_t size) {
  if (pool.mapped_end == 0) pool.mapped_end = pool.base;
  Block* tail = pool.last != nullptr && !pool.last->allocated ? pool.last : nullptr;
  const std::int64_t have = tail != nullptr ? tail->size : 0;
  const std::int64_t pages = (size - have + pool.page - 1) / pool.page;
  const std::int64_t add = pages * pool.page;
  reserved_ += add;
  if (tail != nullptr) {
    pool.blocks.erase(tail);
    tail->size += add;
  } else {
    tail = new_block(&pool, pool.mapped_end, add);
    tail->prev = pool.last;
    if (pool.last != nullptr) pool.last->next = tail;
    pool.last = tail;
  }
  pool.mapped_end += add;
  return tail;
}

/// alloc_found_block + should_split: the block is split when the rest is worth keeping: in the
/// small pool or with expandable segments when at least kMinBlockSize remains, in the large pool
/// when more than kSmallSize remains (max_split_size unset). The allocation keeps the low
/// addresses; the remainder goes back to the pool.
void CachingAllocatorSim::split(Pool& pool, Block* b, std::int64_t size) {
  const std::int64_t remaining = b->size - size;
  const bool do_split =
      (pool.small || expandable_) ? remaining >= kMinBlockSize : remaining > kSmallSize;
  if (!do_split) return;
  Block* rest = new_block(&pool, b->address + size, remaining);
  rest->prev = b;
  rest->next = b->next;
  if (b->next != nullptr) b->next->prev = rest;
  b->next = rest;
  if (pool.last == b) pool.last = rest;
  b->size = size;
  pool.blocks.insert(rest);
}

std::int64_t CachingAllocatorSim::malloc(std::int64_t bytes) {
  if (bytes <= 0) return -1;
  const std::int64_t size = round_size(bytes);
  // get_pool: requests of at most kSmallSize come from the small pool.
  Pool& pool = size <= kSmallSize ? *small_ : *large_;
  Block* b = get_free_block(pool, size);
  if (b == nullptr) b = expandable_ ? expand(pool, size) : alloc_block(pool, size);
  split(pool, b, size);
  b->allocated = true;
  // stats.allocated_bytes counts the block's size (alloc_found_block).
  allocated_ += b->size;
  if (allocated_ > peak_allocated_) peak_allocated_ = allocated_;
  const std::int64_t h = next_handle_++;
  live_.emplace(h, b);
  return h;
}

/// free -> free_block: the block goes back to its pool, merged with free neighbours of the same
/// segment (try_merge_blocks).
void CachingAllocatorSim::free(std::int64_t handle) {
  if (handle < 0) return;
  const auto it = live_.find(handle);
  if (it == live_.end()) throw std::logic_error("CachingAllocatorSim::free: not allocated");
  Block* b = it->second;
  live_.erase(it);
  Pool& pool = *b->pool;
  allocated_ -= b->size;
  b->allocated = false;
  if (Block* p = b->prev; p != nullptr && !p->allocated) {
    pool.blocks.erase(p);
    p->size += b->size;
    p->next = b->next;
    if (b->next != nullptr) b->next->prev = p;
    if (pool.last == b) pool.last = p;
    spare_.push_back(b);
    b = p;
  }
  if (Block* n = b->next; n != nullptr && !n->allocated) {
    pool.blocks.erase(n);
    b->size += n->size;
    b->next = n->next;
    if (n->next != nullptr) n->next->prev = b;
    if (pool.last == n) pool.last = b;
    spare_.push_back(n);
  }
  pool.blocks.insert(b);
}

std::vector<std::int64_t> CachingAllocatorSim::cache_state() const {
  std::vector<std::int64_t> out = {reserved_, allocated_, next_address_};
  for (const Pool* pool : {small_.get(), large_.get()}) {
    out.push_back(pool->mapped_end);
    out.push_back(static_cast<std::int64_t>(pool->blocks.size()));
    for (const Block* b : pool->blocks) {
      out.push_back(b->address);
      out.push_back(b->size);
    }
  }
  return out;
}

} // namespace halo::plan

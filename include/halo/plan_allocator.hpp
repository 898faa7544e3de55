// SPDX-License-Identifier: MIT
// A small simulation of PyTorch's CUDA/HIP caching allocator (issue 47 §1), used by the memory
// estimate of `halo-doctor plan` (src/plan/estimate.cpp) to read the peak *reserved* memory of a
// training step's allocation sequence. Every rule it follows is PyTorch's
// c10/cuda/CUDACachingAllocator.cpp (pytorch/pytorch, read at commit 001074d2; HIP builds compile
// the same file hipified, so ROCm follows the same rules); src/plan/allocator.cpp cites the
// function of each rule.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <vector>

namespace halo::plan {

/// A caching allocator on one stream with unlimited device memory: blocks are never returned to
/// the device (no empty_cache, no out-of-memory retry), so `reserved` only grows, as in a training
/// loop that never reaches the capacity. Sizes are bytes. Not thread-safe.
class CachingAllocatorSim {
public:
  /// `expandable`: PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (one growing segment per
  /// pool, mapped in 2 MiB pages for the small pool and 20 MiB pages for the large pool).
  explicit CachingAllocatorSim(bool expandable = false);
  ~CachingAllocatorSim();
  CachingAllocatorSim(const CachingAllocatorSim&) = delete;
  CachingAllocatorSim& operator=(const CachingAllocatorSim&) = delete;
  CachingAllocatorSim(CachingAllocatorSim&&) = delete;
  CachingAllocatorSim& operator=(CachingAllocatorSim&&) = delete;

  /// Allocates `bytes` (> 0) and returns a handle for free(). A request of 0 bytes returns -1
  /// and allocates nothing (PyTorch returns a null pointer for it).
  std::int64_t malloc(std::int64_t bytes);
  /// Frees a handle returned by malloc(); -1 is ignored. Throws std::logic_error on a handle that
  /// is not allocated.
  void free(std::int64_t handle);

  /// Bytes handed out now (rounded block sizes, as torch.cuda.memory_allocated() counts them).
  [[nodiscard]] std::int64_t allocated() const { return allocated_; }
  /// torch.cuda.max_memory_allocated().
  [[nodiscard]] std::int64_t peak_allocated() const { return peak_allocated_; }
  /// Bytes held from the device (torch.cuda.memory_reserved(); never decreases here).
  [[nodiscard]] std::int64_t reserved() const { return reserved_; }

  /// The cache's state, as a value two states compare equal by: bytes reserved and allocated,
  /// where the next segment would go, each pool's mapped end and its free (cached) blocks
  /// (address, size) in the order get_free_block searches them. Two equal states with the same
  /// blocks allocated answer the same request sequence with the same blocks, so a caller that
  /// replays a repeating sequence (gradient accumulation's micro-steps) can stop once a
  /// repetition leaves the state as it found it.
  [[nodiscard]] std::vector<std::int64_t> cache_state() const;

  struct Block;
  struct Pool;

private:
  bool expandable_;
  std::int64_t allocated_ = 0;
  std::int64_t peak_allocated_ = 0;
  std::int64_t reserved_ = 0;
  std::int64_t next_address_ = std::int64_t{1} << 51; ///< past both pools' expandable ranges
  std::int64_t next_handle_ = 0;
  std::unique_ptr<Pool> small_;
  std::unique_ptr<Pool> large_;
  std::map<std::int64_t, Block*> live_;
  std::vector<std::unique_ptr<Block>> blocks_;
  std::vector<Block*> spare_; ///< blocks merged into a neighbour, for new_block to reuse

  Block* new_block(Pool* pool, std::int64_t address, std::int64_t size);
  static Block* get_free_block(Pool& pool, std::int64_t size);
  Block* alloc_block(Pool& pool, std::int64_t size);
  Block* expand(Pool& pool, std::int64_t size);
  void split(Pool& pool, Block* b, std::int64_t size);
};

} // namespace halo::plan

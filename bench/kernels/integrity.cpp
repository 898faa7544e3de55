// SPDX-License-Identifier: MIT
// halo-bench integrity part: host -> device -> host round trips of known patterns (checked on
// the device and on the host) and the on-device fp32 <-> bf16 conversions. Compiled as HIP or
// CUDA (see gpu_compat.h).
#include "device_internal.hpp"
#include "halo_bench/pattern.hpp"

#include <chrono>
#include <cstring>
#include <string>

#if defined(__CUDACC__)
#include <cuda_bf16.h>
#define HALO_DEVICE_BF16_FUNCTION "__float2bfloat16 / __bfloat162float (cuda_bf16.h)"
#elif __has_include(<hip/hip_bf16.h>)
#include <hip/hip_bf16.h>
#define HALO_HIP_BF16_HEADER 1
#define HALO_DEVICE_BF16_FUNCTION "__float2bfloat16 / __bfloat162float (hip/hip_bf16.h)"
#else
#include <hip/hip_bfloat16.h>
#define HALO_DEVICE_BF16_FUNCTION "hip_bfloat16::round_to_bfloat16 (hip/hip_bfloat16.h)"
#endif

namespace halo_bench::gpu {
namespace {

// ---- integrity kernels --------------------------------------------------------------------------
/// Records in `first_bad` (initialised to ~0) the smallest word index whose value differs from
/// pattern `kind`, and counts the differing words.
__global__ void pattern_check_kernel(const std::uint32_t* __restrict__ data, std::size_t words,
                                     int kind, std::uint32_t seed,
                                     unsigned long long* __restrict__ first_bad,
                                     unsigned long long* __restrict__ bad_count) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < words;
       i += stride) {
    if (data[i] != halo_bench::pattern_word(kind, i, seed)) {
      atomicMin(first_bad, static_cast<unsigned long long>(i));
      atomicAdd(bad_count, 1ull);
    }
  }
}

__global__ void pattern_fill_kernel(std::uint32_t* __restrict__ data, std::size_t words, int kind,
                                    std::uint32_t seed) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < words;
       i += stride)
    data[i] = halo_bench::pattern_word(kind, i, seed);
}

/// fp32 -> bf16 and bf16 -> fp32 with the runtime's own bf16 type.
__global__ void convert_kernel(const std::uint32_t* __restrict__ f32_in, std::size_t n_f32,
                               std::uint16_t* __restrict__ bf16_out,
                               const std::uint16_t* __restrict__ bf16_in, std::size_t n_bf16,
                               std::uint32_t* __restrict__ f32_out) {
  const std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n_f32) {
    const float x = __uint_as_float(f32_in[i]);
#if defined(__CUDACC__)
    const __nv_bfloat16 b = __float2bfloat16(x);
    bf16_out[i] = *reinterpret_cast<const unsigned short*>(&b);
#elif defined(HALO_HIP_BF16_HEADER)
    const __hip_bfloat16 b = __float2bfloat16(x);
    bf16_out[i] = *reinterpret_cast<const unsigned short*>(&b);
#else
    bf16_out[i] = hip_bfloat16::round_to_bfloat16(x).data;
#endif
  }
  if (i < n_bf16) {
    const unsigned short bits = bf16_in[i];
#if defined(__CUDACC__)
    __nv_bfloat16 b;
    *reinterpret_cast<unsigned short*>(&b) = bits;
    f32_out[i] = __float_as_uint(__bfloat162float(b));
#elif defined(HALO_HIP_BF16_HEADER)
    __hip_bfloat16 b;
    *reinterpret_cast<unsigned short*>(&b) = bits;
    f32_out[i] = __float_as_uint(__bfloat162float(b));
#else
    hip_bfloat16 b;
    b.data = bits;
    f32_out[i] = __float_as_uint(static_cast<float>(b));
#endif
  }
}

/// Host buffer of `bytes` bytes: pinned (hipHostMalloc) or pageable (operator new).
class HostBuffer {
public:
  HostBuffer(std::size_t bytes, bool pinned) : pinned_(pinned) {
    if (pinned) {
      pinned_buffer_ = Buffer(bytes, MemoryKind::host_pinned);
    } else {
      pageable_.resize((bytes + 3) / 4);
    }
  }
  std::uint32_t* words() { return pinned_ ? pinned_buffer_.as<std::uint32_t>() : pageable_.data(); }

private:
  bool pinned_;
  Buffer pinned_buffer_;
  std::vector<std::uint32_t> pageable_;
};

void copy(void* dst, const void* src, std::size_t bytes, bool to_device, CopyPath path,
          hipStream_t stream) {
  const auto kind = to_device ? hipMemcpyHostToDevice : hipMemcpyDeviceToHost;
  if (path == CopyPath::pinned_async) {
    HALO_GPU_CHECK(hipMemcpyAsync(dst, src, bytes, kind, stream));
    HALO_GPU_CHECK(hipStreamSynchronize(stream));
  } else {
    HALO_GPU_CHECK(hipMemcpy(dst, src, bytes, kind));
  }
}

/// Host-side first difference against the pattern (the CPU library has the same logic,
/// halo_bench::check_pattern; this copy avoids linking C++20 code into the device TU).
bool host_check(const std::uint32_t* got, std::size_t words, int kind, std::uint32_t seed,
                RoundTrip& r, const char* stage) {
  bool ok = true;
  for (std::size_t i = 0; i < words; ++i) {
    const std::uint32_t want = halo_bench::pattern_word(kind, i, seed);
    if (got[i] != want) {
      if (ok) {
        const std::uint32_t diff = got[i] ^ want;
        unsigned byte = 0;
        while (((diff >> (8 * byte)) & 0xffu) == 0)
          ++byte;
        r.first_bad_offset = static_cast<std::uint64_t>(i) * 4 + byte;
        r.expected_word = want;
        r.got_word = got[i];
        r.stage = stage;
        ok = false;
      }
      ++r.bad_words;
    }
  }
  return ok;
}

} // namespace

RoundTrip run_round_trip(CopyPath path, std::uint64_t bytes, int pattern_kind, std::uint32_t seed) {
  RoundTrip r;
  const auto begin = std::chrono::steady_clock::now();
  const std::size_t words = static_cast<std::size_t>(bytes / 4);
  const std::size_t size = words * 4;
  const bool pinned = path != CopyPath::pageable;
  hipStream_t stream{};
  if (path == CopyPath::pinned_async) HALO_GPU_CHECK(hipStreamCreate(&stream));
  struct StreamGuard {
    hipStream_t s;
    bool owned;
    ~StreamGuard() {
      if (owned) (void)hipStreamDestroy(s);
    }
  } guard{stream, path == CopyPath::pinned_async};
  HostBuffer host(size, pinned);
  HostBuffer back(size, pinned);
  Buffer device(size);
  Buffer device2(size);
  Buffer first_bad(sizeof(unsigned long long));
  Buffer bad_count(sizeof(unsigned long long));
  std::uint32_t* h = host.words();
  for (std::size_t i = 0; i < words; ++i)
    h[i] = halo_bench::pattern_word(pattern_kind, i, seed);
  r.ok = true;

  // 1. host -> device, checked on the device.
  copy(device.as<void>(), h, size, true, path, stream);
  HALO_GPU_CHECK(hipMemset(first_bad.as<void>(), 0xff, sizeof(unsigned long long)));
  HALO_GPU_CHECK(hipMemset(bad_count.as<void>(), 0, sizeof(unsigned long long)));
  const unsigned grid = grid_for(words, 256);
  pattern_check_kernel<<<std::min(grid, 65535u), 256>>>(
      device.as<std::uint32_t>(), words, pattern_kind, seed, first_bad.as<unsigned long long>(),
      bad_count.as<unsigned long long>());
  HALO_GPU_CHECK_LAUNCH();
  unsigned long long first = 0;
  unsigned long long count = 0;
  HALO_GPU_CHECK(hipMemcpy(&first, first_bad.as<void>(), sizeof first, hipMemcpyDeviceToHost));
  HALO_GPU_CHECK(hipMemcpy(&count, bad_count.as<void>(), sizeof count, hipMemcpyDeviceToHost));
  if (count != 0 && first < words) {
    r.ok = false;
    r.stage = "h2d";
    std::uint32_t got = 0;
    HALO_GPU_CHECK(hipMemcpy(&got, device.as<std::uint32_t>() + first, 4, hipMemcpyDeviceToHost));
    const std::uint32_t want = halo_bench::pattern_word(pattern_kind, first, seed);
    unsigned byte = 0;
    while (byte < 3 && (((got ^ want) >> (8 * byte)) & 0xffu) == 0)
      ++byte;
    r.first_bad_offset = first * 4 + byte;
    r.expected_word = want;
    r.got_word = got;
    r.bad_words = count;
  }
  // 2. device-written pattern -> host.
  if (r.ok) {
    pattern_fill_kernel<<<std::min(grid, 65535u), 256>>>(device2.as<std::uint32_t>(), words,
                                                         pattern_kind, seed);
    HALO_GPU_CHECK_LAUNCH();
    HALO_GPU_CHECK(hipDeviceSynchronize());
    copy(back.words(), device2.as<void>(), size, false, path, stream);
    r.ok = host_check(back.words(), words, pattern_kind, seed, r, "d2h");
  }
  // 3. the uploaded buffer back to the host: the whole round trip.
  if (r.ok) {
    std::memset(back.words(), 0, size);
    copy(back.words(), device.as<void>(), size, false, path, stream);
    r.ok = host_check(back.words(), words, pattern_kind, seed, r, "round trip");
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
  return r;
}

DeviceConversion convert_on_device(const std::vector<std::uint32_t>& fp32_bits,
                                   const std::vector<std::uint16_t>& bf16_bits) {
  DeviceConversion out;
  out.function = HALO_DEVICE_BF16_FUNCTION;
  const std::size_t nf = fp32_bits.size();
  const std::size_t nb = bf16_bits.size();
  Buffer f_in(std::max<std::size_t>(nf, 1) * 4), b_out(std::max<std::size_t>(nf, 1) * 2);
  Buffer b_in(std::max<std::size_t>(nb, 1) * 2), f_out(std::max<std::size_t>(nb, 1) * 4);
  if (nf != 0) f_in.upload(fp32_bits.data(), nf * 4);
  if (nb != 0) b_in.upload(bf16_bits.data(), nb * 2);
  const std::size_t n = std::max(nf, nb);
  convert_kernel<<<grid_for(n, 256), 256>>>(f_in.as<std::uint32_t>(), nf, b_out.as<std::uint16_t>(),
                                            b_in.as<std::uint16_t>(), nb,
                                            f_out.as<std::uint32_t>());
  HALO_GPU_CHECK_LAUNCH();
  out.to_bf16.resize(nf);
  out.widened.resize(nb);
  if (nf != 0)
    HALO_GPU_CHECK(hipMemcpy(out.to_bf16.data(), b_out.as<void>(), nf * 2, hipMemcpyDeviceToHost));
  if (nb != 0)
    HALO_GPU_CHECK(hipMemcpy(out.widened.data(), f_out.as<void>(), nb * 4, hipMemcpyDeviceToHost));
  return out;
}

} // namespace halo_bench::gpu

#pragma once
/// Device memory and the few kernels planner-calibrate needs (device.cu): random inputs, a
/// delay kernel for launch-gap-free batches, and a read-dominated bandwidth kernel.
#include <cuda_runtime.h>

#include <cstddef>

namespace planner::calibrate {

enum class ElementType { f32, f16, bf16, e4m3 };
size_t element_bytes(ElementType t);

/// Fills `count` elements with uniform values in [-1, 1) from a counter-based hash of (seed,
/// index): random inputs (constant data runs GEMMs at lower power and higher clocks, so it
/// overstates speed: 890 vs 740 TFLOP/s on the H200, shared/DEVICE.md), reproducible by seed.
void fill_uniform(void* data, size_t count, ElementType type, unsigned long long seed,
                  cudaStream_t stream);

/// A one-thread kernel that spins for `seconds` on %globaltimer (sm_70+): it holds the stream
/// while the host enqueues a batch behind it.
void enqueue_delay(cudaStream_t stream, double seconds);

/// Reads `bytes` (a multiple of 16) from `data` with 16-byte loads in a grid-stride loop and
/// sums them; writes `sink` only if the sum hits an impossible value, so no load is removed.
void enqueue_read(const void* data, size_t bytes, float* sink, int blocks, int threads,
                  cudaStream_t stream);
/// Resident blocks of the read kernel on the whole device at `threads` per block.
int read_kernel_grid(int device, int threads);

/// cudaMalloc'd memory on the current device, freed on destruction.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& o) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  void* get() const { return data_; }
  size_t bytes() const { return bytes_; }

 private:
  void* data_ = nullptr;
  size_t bytes_ = 0;
};

/// Page-locked host memory (cudaMallocHost), for host-device bandwidth.
class PinnedBuffer {
 public:
  explicit PinnedBuffer(size_t bytes);
  ~PinnedBuffer();
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;
  void* get() const { return data_; }

 private:
  void* data_ = nullptr;
};

}  // namespace planner::calibrate

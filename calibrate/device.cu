#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <algorithm>
#include <cmath>

#include "calibrate/device.h"
#include "calibrate/harness.h"

namespace planner::calibrate {
namespace {

/// splitmix64 (Steele, Lea and Flood 2014): a counter-based generator, one hash per element.
__device__ unsigned long long mix(unsigned long long x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

__device__ float uniform(unsigned long long seed, size_t i) {
  return float(mix(seed * 0x632BE59BD9B4E019ull + i) >> 40) * (2.0f / 16777216.0f) - 1.0f;
}

template <typename T>
__device__ T convert(float v);
template <>
__device__ float convert<float>(float v) {
  return v;
}
template <>
__device__ __half convert<__half>(float v) {
  return __float2half(v);
}
template <>
__device__ __nv_bfloat16 convert<__nv_bfloat16>(float v) {
  return __float2bfloat16(v);
}
template <>
__device__ __nv_fp8_e4m3 convert<__nv_fp8_e4m3>(float v) {
  return __nv_fp8_e4m3(v);
}

template <typename T>
__global__ void fill_kernel(T* data, size_t count, unsigned long long seed) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < count;
       i += size_t(gridDim.x) * blockDim.x)
    data[i] = convert<T>(uniform(seed, i));
}

template <typename T>
void launch_fill(void* data, size_t count, unsigned long long seed, cudaStream_t s) {
  const int threads = 256;
  const int blocks = int(std::min<size_t>((count + threads - 1) / threads, 65536));
  fill_kernel<T><<<std::max(blocks, 1), threads, 0, s>>>(static_cast<T*>(data), count, seed);
  CAL_CUDA(cudaGetLastError());
}

__device__ unsigned long long globaltimer_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__global__ void delay_kernel(unsigned long long ns) {
  const unsigned long long start = globaltimer_ns();
  while (globaltimer_ns() - start < ns) {
  }
}

__global__ void read_kernel(const float4* __restrict__ data, size_t n4, float* sink) {
  float acc = 0;
  const size_t stride = size_t(gridDim.x) * blockDim.x;
#pragma unroll 4
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n4; i += stride) {
    const float4 v = data[i];
    acc += (v.x + v.y) + (v.z + v.w);
  }
  if (acc == 1.2345e30f) *sink = acc;  // values in [-1, 1): never true
}

}  // namespace

size_t element_bytes(ElementType t) {
  switch (t) {
    case ElementType::f32:
      return 4;
    case ElementType::f16:
    case ElementType::bf16:
      return 2;
    case ElementType::e4m3:
      return 1;
  }
  return 1;
}

void fill_uniform(void* data, size_t count, ElementType type, unsigned long long seed,
                  cudaStream_t stream) {
  switch (type) {
    case ElementType::f32:
      return launch_fill<float>(data, count, seed, stream);
    case ElementType::f16:
      return launch_fill<__half>(data, count, seed, stream);
    case ElementType::bf16:
      return launch_fill<__nv_bfloat16>(data, count, seed, stream);
    case ElementType::e4m3:
      return launch_fill<__nv_fp8_e4m3>(data, count, seed, stream);
  }
}

void enqueue_delay(cudaStream_t stream, double seconds) {
  delay_kernel<<<1, 1, 0, stream>>>(static_cast<unsigned long long>(seconds * 1e9));
  CAL_CUDA(cudaGetLastError());
}

void enqueue_read(const void* data, size_t bytes, float* sink, int blocks, int threads,
                  cudaStream_t stream) {
  read_kernel<<<blocks, threads, 0, stream>>>(static_cast<const float4*>(data), bytes / 16, sink);
  CAL_CUDA(cudaGetLastError());
}

int read_kernel_grid(int device, int threads) {
  int per_sm = 0, sms = 0;
  CAL_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, read_kernel, threads, 0));
  CAL_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  return std::max(1, per_sm) * sms;
}

DeviceBuffer::DeviceBuffer(size_t bytes) : bytes_(bytes) {
  if (bytes) CAL_CUDA(cudaMalloc(&data_, bytes));
}
DeviceBuffer::~DeviceBuffer() {
  if (data_) cudaFree(data_);
}
DeviceBuffer::DeviceBuffer(DeviceBuffer&& o) noexcept : data_(o.data_), bytes_(o.bytes_) {
  o.data_ = nullptr, o.bytes_ = 0;
}
DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
  std::swap(data_, o.data_);
  std::swap(bytes_, o.bytes_);
  return *this;
}

PinnedBuffer::PinnedBuffer(size_t bytes) { CAL_CUDA(cudaMallocHost(&data_, bytes)); }
PinnedBuffer::~PinnedBuffer() {
  if (data_) cudaFreeHost(data_);
}

}  // namespace planner::calibrate

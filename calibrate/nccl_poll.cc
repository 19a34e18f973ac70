#include "calibrate/nccl_poll.h"

#include "calibrate/collectives.h"
#include "calibrate/device.h"
#include "calibrate/harness.h"

namespace planner::calibrate {

void allocate_team_buffers(TeamBuffers& b, const std::vector<int>& devices,
                           const std::vector<int>& seed_offsets, double bytes,
                           unsigned long long seed) {
  for (size_t i = 0; i < devices.size(); ++i) {
    CAL_CUDA(cudaSetDevice(devices[i]));
    cudaStream_t s = nullptr;
    CAL_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    b.streams.push_back(s);
    b.send.push_back(nullptr), b.recv.push_back(nullptr);
    CAL_CUDA(cudaMalloc(&b.send.back(), size_t(bytes)));
    CAL_CUDA(cudaMalloc(&b.recv.back(), size_t(bytes)));
    fill_uniform(b.send.back(), size_t(bytes) / 4, ElementType::f32, seed + seed_offsets[i], s);
    CAL_CUDA(cudaStreamSynchronize(s));
  }
}

void free_team_buffers(TeamBuffers& b, const std::vector<int>& devices) {
  for (size_t i = 0; i < b.streams.size(); ++i) {
    cudaSetDevice(devices[i]);
    cudaStreamDestroy(b.streams[i]);
    cudaFree(b.send[i]);
    cudaFree(b.recv[i]);
  }
  b = TeamBuffers{};
}

PollTarget nccl_poll_target(const std::vector<cudaStream_t>& streams,
                            const std::vector<ncclComm_t>& comms) {
  PollTarget p;
  p.pending = [&streams] {
    int pending = 0;
    for (cudaStream_t s : streams) {
      const cudaError_t q = cudaStreamQuery(s);
      if (q == cudaErrorNotReady)
        ++pending;
      else
        CAL_CUDA(q);
    }
    return pending;
  };
  p.async_error = [&comms]() -> std::string {
    for (ncclComm_t c : comms) {
      ncclResult_t async = ncclSuccess;
      const ncclResult_t r = ncclCommGetAsyncError(c, &async);
      if (r != ncclSuccess) return ncclGetErrorString(r);
      if (async != ncclSuccess && async != ncclInProgress) return ncclGetErrorString(async);
    }
    return "";
  };
  p.abort = [&comms] {
    for (ncclComm_t c : comms) ncclCommAbort(c);
  };
  return p;
}

}  // namespace planner::calibrate

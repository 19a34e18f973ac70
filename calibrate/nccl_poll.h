#pragma once
/// The watchdog's view of a set of CUDA streams and NCCL communicators (planner-calibrate's
/// teams and planner-validate's local team share it).
#include <cuda_runtime.h>
#include <nccl.h>

#include <vector>

#include "calibrate/watchdog.h"

namespace planner::calibrate {

/// Per local member of a communicator: a non-blocking stream and send and receive buffers.
/// Raw on purpose (no destructor): after a watchdog abort nothing may wait on NCCL's kernels, so
/// only free_team_buffers releases them.
struct TeamBuffers {
  std::vector<cudaStream_t> streams;
  std::vector<void*> send, recv;
};
/// One stream and two `bytes` buffers on each of `devices`, the send buffer filled with random
/// floats (seed + seed_offsets[i]).
void allocate_team_buffers(TeamBuffers& b, const std::vector<int>& devices,
                           const std::vector<int>& seed_offsets, double bytes,
                           unsigned long long seed);
void free_team_buffers(TeamBuffers& b, const std::vector<int>& devices);

/// Polls `streams` (pending count; device errors throw), the communicators' asynchronous errors,
/// and aborts every communicator on a timeout. Both vectors must outlive the returned target.
PollTarget nccl_poll_target(const std::vector<cudaStream_t>& streams,
                            const std::vector<ncclComm_t>& comms);

}  // namespace planner::calibrate

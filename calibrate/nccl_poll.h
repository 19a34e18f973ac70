#pragma once
/// The watchdog's view of a set of CUDA streams and NCCL communicators (planner-calibrate's
/// teams and planner-validate's local team share it).
#include <vector>

#include <cuda_runtime.h>
#include <nccl.h>

#include "calibrate/watchdog.h"

namespace planner::calibrate {

/// Polls `streams` (pending count; device errors throw), the communicators' asynchronous errors,
/// and aborts every communicator on a timeout. Both vectors must outlive the returned target.
PollTarget nccl_poll_target(const std::vector<cudaStream_t>& streams,
                            const std::vector<ncclComm_t>& comms);

}  // namespace planner::calibrate

#include "calibrate/nccl_poll.h"

#include "calibrate/collectives.h"
#include "calibrate/harness.h"

namespace planner::calibrate {

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

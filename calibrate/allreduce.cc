// AllReduce, as nccl-tests all_reduce_perf: every rank holds S bytes (count = S / 4 floats) and
// ends with the element-wise sum over all ranks. A ring moves 2(n-1)/n x S in and out of each
// rank, so busbw = algbw x 2(n-1)/n (nccl-tests doc/PERFORMANCE.md, "AllReduce").
#include "calibrate/collectives.h"

namespace planner::calibrate {
namespace {

ncclResult_t launch(const void* send, void* recv, size_t count, int, int, ncclComm_t comm,
                    cudaStream_t stream) {
  return ncclAllReduce(send, recv, count, ncclFloat, ncclSum, comm, stream);
}

}  // namespace

const CollectiveDef kAllReduce{Collective::allreduce, false, "2(n-1)/n", launch};

}  // namespace planner::calibrate

// AllGather, as nccl-tests all_gather_perf: S is the gathered output (n blocks of S / n bytes),
// each rank contributes one block. Each rank receives the (n-1) blocks it lacks, so
// busbw = algbw x (n-1)/n (nccl-tests doc/PERFORMANCE.md, "AllGather").
#include "calibrate/collectives.h"

namespace planner::calibrate {
namespace {

ncclResult_t launch(const void* send, void* recv, size_t count, int, int n, ncclComm_t comm,
                    cudaStream_t stream) {
  return ncclAllGather(send, recv, count / n, ncclFloat, comm, stream);
}

}  // namespace

const CollectiveDef kAllGather{Collective::allgather, true, "(n-1)/n", launch};

}  // namespace planner::calibrate

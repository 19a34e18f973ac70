// ReduceScatter, as nccl-tests reduce_scatter_perf: S is each rank's input (n blocks of S / n
// bytes); rank i ends with the sum of block i. Each rank sends (n-1) blocks, so
// busbw = algbw x (n-1)/n (nccl-tests doc/PERFORMANCE.md, "ReduceScatter").
#include "calibrate/collectives.h"

namespace planner::calibrate {
namespace {

ncclResult_t launch(const void* send, void* recv, size_t count, int, int n, ncclComm_t comm,
                    cudaStream_t stream) {
  return ncclReduceScatter(send, recv, count / n, ncclFloat, ncclSum, comm, stream);
}

}  // namespace

const CollectiveDef kReduceScatter{Collective::reduce_scatter, true, "(n-1)/n", launch};

}  // namespace planner::calibrate

#pragma once
/// One NCCL collective the nccl-tests way (doc/PERFORMANCE.md): `bytes` is nccl-tests' size S,
/// each collective's file states how a rank's buffers relate to S, and bus bandwidth is
/// algbw x planner::bus_factor(kind, n), the same function the cost model divides by, so that a
/// calibrated busbw and a modelled one mean the same thing. Data type float, operation sum.
#include <cuda_runtime.h>
#include <nccl.h>

#include <cstddef>

#include "calibrate/harness.h"
#include "planner/cluster.h"

#define CAL_NCCL(call)                                                                             \
  do {                                                                                             \
    const ncclResult_t cal_r_ = (call);                                                            \
    if (cal_r_ != ncclSuccess && cal_r_ != ncclInProgress)                                         \
      ::planner::calibrate::device_failure(__FILE__, __LINE__, #call, ncclGetErrorString(cal_r_)); \
  } while (0)

namespace planner::calibrate {

struct CollectiveDef {
  Collective kind;
  /// S holds n equal per-rank blocks (allgather, reduce-scatter, all-to-all): S must then be a
  /// multiple of n floats.
  bool per_rank_blocks;
  const char* bus_factor_text;  ///< for the table header, e.g. "2(n-1)/n"
  /// Enqueues one operation of `count` = S / 4 floats for `rank` of `n`. `send` and `recv`
  /// hold at least S bytes each.
  ncclResult_t (*launch)(const void* send, void* recv, size_t count, int rank, int n,
                         ncclComm_t comm, cudaStream_t stream);
};

extern const CollectiveDef kAllReduce;      // allreduce.cc
extern const CollectiveDef kAllGather;      // allgather.cc
extern const CollectiveDef kReduceScatter;  // reduce_scatter.cc
extern const CollectiveDef kAllToAll;       // alltoall.cc
extern const CollectiveDef kSendRecv;       // sendrecv.cc

/// S rounded down to whole floats (whole blocks of n floats where per_rank_blocks); 0 when
/// nothing is left (nccl-tests skips those sizes too).
inline double collective_bytes(const CollectiveDef& d, double S, int n) {
  const double unit = 4.0 * (d.per_rank_blocks ? n : 1);
  return double(static_cast<long long>(S / unit)) * unit;
}

}  // namespace planner::calibrate

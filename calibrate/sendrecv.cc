// SendRecv, as nccl-tests sendrecv_perf: every rank sends S bytes to the next rank and receives
// S bytes from the previous one (a ring shift: a pipeline stage boundary, all at once). Each
// byte crosses one link once, so busbw = algbw (factor 1, nccl-tests doc/PERFORMANCE.md).
#include "calibrate/collectives.h"

namespace planner::calibrate {
namespace {

ncclResult_t launch(const void* send, void* recv, size_t count, int rank, int n, ncclComm_t comm,
                    cudaStream_t stream) {
  ncclResult_t result = ncclGroupStart();
  if (result == ncclSuccess)
    result = ncclSend(send, count, ncclFloat, (rank + 1) % n, comm, stream);
  if (result == ncclSuccess)
    result = ncclRecv(recv, count, ncclFloat, (rank + n - 1) % n, comm, stream);
  const ncclResult_t end = ncclGroupEnd();
  return result != ncclSuccess ? result : end;
}

}  // namespace

const CollectiveDef kSendRecv{Collective::sendrecv, false, "1", launch};

}  // namespace planner::calibrate

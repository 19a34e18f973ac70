// AlltoAll, as nccl-tests alltoall_perf: S is each rank's input, n blocks of S / n bytes, block
// j going to rank j; built from grouped ncclSend/ncclRecv as nccl-tests does (ncclAlltoAll only
// exists in recent NCCL). (n-1) of the n blocks leave the rank, so busbw = algbw x (n-1)/n
// (nccl-tests doc/PERFORMANCE.md).
#include "calibrate/collectives.h"

namespace planner::calibrate {
namespace {

ncclResult_t launch(const void* send, void* recv, size_t count, int, int n, ncclComm_t comm,
                    cudaStream_t stream) {
  const size_t block = count / n;
  const char* s = static_cast<const char*>(send);
  char* r = static_cast<char*>(recv);
  ncclResult_t result = ncclGroupStart();
  for (int peer = 0; peer < n && result == ncclSuccess; ++peer) {
    result = ncclSend(s + peer * block * sizeof(float), block, ncclFloat, peer, comm, stream);
    if (result == ncclSuccess)
      result = ncclRecv(r + peer * block * sizeof(float), block, ncclFloat, peer, comm, stream);
  }
  const ncclResult_t end = ncclGroupEnd();
  return result != ncclSuccess ? result : end;
}

}  // namespace

const CollectiveDef kAllToAll{Collective::alltoall, true, "(n-1)/n", launch};

}  // namespace planner::calibrate

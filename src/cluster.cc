#include "planner/cluster.h"

namespace planner {

const char* to_string(Dtype d) {
  switch (d) {
    case Dtype::fp16:
      return "fp16";
    case Dtype::bf16:
      return "bf16";
    case Dtype::fp8:
      return "fp8";
    case Dtype::tf32:
      return "tf32";
  }
  return "?";
}

const char* to_string(Collective c) {
  switch (c) {
    case Collective::allreduce:
      return "allreduce";
    case Collective::allgather:
      return "allgather";
    case Collective::reduce_scatter:
      return "reduce_scatter";
    case Collective::alltoall:
      return "alltoall";
    case Collective::sendrecv:
      return "sendrecv";
  }
  return "?";
}

}  // namespace planner

#include "planner/cluster.h"

#include "planner/names.h"

namespace planner {

const char* to_string(Dtype d) { return name_of(d); }

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

#include "planner/cluster.h"

#include "planner/format.h"
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

std::string topology_note(const ClusterProfile& c) {
  std::string out;
  if (c.nvlink_domain != c.gpus_per_node) out += fmt(", NVLink domain of {} GPUs", c.nvlink_domain);
  if (c.nics_per_node != c.gpus_per_node) out += fmt(", {} NICs/node", c.nics_per_node);
  return out;
}

}  // namespace planner

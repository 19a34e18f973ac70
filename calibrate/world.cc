#include "calibrate/world.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

#ifdef PLANNER_WITH_MPI
#include <mpi.h>
#endif

namespace planner::calibrate {
namespace {

constexpr int kTextBytes = 256;

std::string hostname() {
  char buf[kTextBytes] = {};
  gethostname(buf, sizeof buf - 1);
  return buf;
}

#ifdef PLANNER_WITH_MPI
MPI_Comm as_comm(void* p) { return *static_cast<MPI_Comm*>(p); }
#endif

/// Node index, local rank and local size of `rank` from every rank's host name.
void place(World& w, const std::vector<std::string>& host_of_rank) {
  w.hosts.clear();
  std::vector<int> per_node;
  for (int r = 0; r < int(host_of_rank.size()); ++r) {
    int node = 0;
    while (node < int(w.hosts.size()) && w.hosts[node] != host_of_rank[r]) ++node;
    if (node == int(w.hosts.size())) w.hosts.push_back(host_of_rank[r]), per_node.push_back(0);
    if (r == w.rank) w.node = node, w.local_rank = per_node[node];
    ++per_node[node];
  }
  w.nodes = int(w.hosts.size());
  w.local_size = per_node[w.node];
  for (int n = 0; n < w.nodes; ++n)
    if (per_node[n] != w.local_size)
      throw std::runtime_error("host " + w.hosts[n] + " runs " + std::to_string(per_node[n]) +
                               " ranks but " + w.hosts[w.node] + " runs " +
                               std::to_string(w.local_size) +
                               ": start the same number of ranks (one per GPU) on every node");
}

}  // namespace

World init_world(int* argc, char*** argv) {
  World w;
#ifdef PLANNER_WITH_MPI
  MPI_Init(argc, argv);
  w.mpi = true;
  MPI_Comm_rank(MPI_COMM_WORLD, &w.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &w.size);
#else
  (void)argc, (void)argv;
#endif
  place(w, world_gather(w, hostname()));
  return w;
}

void finalize_world(const World& w) {
#ifdef PLANNER_WITH_MPI
  if (w.mpi) MPI_Finalize();
#else
  (void)w;
#endif
}

void abort_world(const World& w, int code) {
  std::fflush(stdout);
  std::fflush(stderr);
#ifdef PLANNER_WITH_MPI
  if (w.mpi && w.size > 1) MPI_Abort(MPI_COMM_WORLD, code);
#else
  (void)w;
#endif
  std::_Exit(code);
}

double world_max(const World& w, double v) {
#ifdef PLANNER_WITH_MPI
  if (w.mpi && w.size > 1) {
    double out = v;
    MPI_Allreduce(&v, &out, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return out;
  }
#else
  (void)w;
#endif
  return v;
}

void world_barrier(const World& w) {
#ifdef PLANNER_WITH_MPI
  if (w.mpi && w.size > 1) MPI_Barrier(MPI_COMM_WORLD);
#else
  (void)w;
#endif
}

std::vector<std::string> world_gather(const World& w, const std::string& text) {
  char mine[kTextBytes] = {};
  std::strncpy(mine, text.c_str(), kTextBytes - 1);
  std::vector<char> all(size_t(w.size) * kTextBytes);
#ifdef PLANNER_WITH_MPI
  if (w.mpi)
    MPI_Allgather(mine, kTextBytes, MPI_CHAR, all.data(), kTextBytes, MPI_CHAR, MPI_COMM_WORLD);
  else
    std::memcpy(all.data(), mine, kTextBytes);
#else
  std::memcpy(all.data(), mine, kTextBytes);
#endif
  std::vector<std::string> out;
  for (int r = 0; r < w.size; ++r) out.emplace_back(all.data() + size_t(r) * kTextBytes);
  return out;
}

void world_poke(const World& w) {
#ifdef PLANNER_WITH_MPI
  if (w.mpi && w.size > 1) {
    int flag = 0;
    MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
  }
#else
  (void)w;
#endif
}

Group::Group(const World& w, int color, int key) : world_ranks_{w.rank} {
#ifdef PLANNER_WITH_MPI
  if (w.mpi) {
    auto* comm = new MPI_Comm;
    MPI_Comm_split(MPI_COMM_WORLD, color, key, comm);
    comm_ = comm;
    MPI_Comm_rank(*comm, &rank_);
    MPI_Comm_size(*comm, &size_);
    world_ranks_.assign(size_t(size_), 0);
    MPI_Allgather(&w.rank, 1, MPI_INT, world_ranks_.data(), 1, MPI_INT, *comm);
  }
#else
  (void)color, (void)key;
#endif
}

Group::~Group() {
#ifdef PLANNER_WITH_MPI
  if (comm_) {
    MPI_Comm_free(static_cast<MPI_Comm*>(comm_));
    delete static_cast<MPI_Comm*>(comm_);
  }
#endif
}

void Group::broadcast(void* data, int bytes, int root) const {
#ifdef PLANNER_WITH_MPI
  if (comm_) MPI_Bcast(data, bytes, MPI_BYTE, root, as_comm(comm_));
#else
  (void)data, (void)bytes, (void)root;
#endif
}

std::vector<int> Group::world_ranks() const { return world_ranks_; }

}  // namespace planner::calibrate

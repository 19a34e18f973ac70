#pragma once
/// The processes of a run: one (no MPI) or an MPI world with one rank per GPU. Only world.cc
/// includes mpi.h; without PLANNER_WITH_MPI these functions describe a world of one process, so
/// the callers need no #ifdef.
#include <string>
#include <vector>

namespace planner::calibrate {

struct World {
  int rank = 0, size = 1;              ///< MPI_COMM_WORLD
  int local_rank = 0, local_size = 1;  ///< among the ranks on this host
  int node = 0, nodes = 1;             ///< hosts in order of their lowest rank
  std::vector<std::string> hosts;      ///< one per node
  bool mpi = false;                    ///< MPI initialised (built with MPI)
};

/// MPI_Init when built with MPI (also for a lone process: MPI singleton). Hosts come from
/// gethostname and an allgather. Throws std::runtime_error when nodes have different numbers
/// of ranks (the tiers would then not be alike).
World init_world(int* argc, char*** argv);
void finalize_world(const World& w);
/// Ends every process: MPI_Abort under MPI (the others may be blocked in a collective), else exit.
[[noreturn]] void abort_world(const World& w, int code);

/// Max of `v` over all ranks (MPI_Allreduce), `v` itself without MPI.
double world_max(const World& w, double v);
void world_barrier(const World& w);
/// Every rank's `text` (up to 255 characters), in rank order, on every rank.
std::vector<std::string> world_gather(const World& w, const std::string& text);
/// Lets MPI progress while a rank polls CUDA (OpenMPI needs it; nccl-tests does the same).
void world_poke(const World& w);

/// A sub-communicator (MPI_Comm_split): the ranks with the same `color`, ordered by `key`.
class Group {
 public:
  Group(const World& w, int color, int key);
  ~Group();
  Group(const Group&) = delete;
  Group& operator=(const Group&) = delete;
  int rank() const { return rank_; }
  int size() const { return size_; }
  void broadcast(void* data, int bytes, int root) const;
  std::vector<int> world_ranks() const;  ///< MPI_COMM_WORLD rank of each member, by group rank

 private:
  void* comm_ = nullptr;  ///< MPI_Comm, owned
  int rank_ = 0, size_ = 1;
  std::vector<int> world_ranks_;
};

}  // namespace planner::calibrate

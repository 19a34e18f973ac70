// Search-speed benchmark: plans evaluated per second on one core, and the wall time of the full
// default search for megatron-1t on 3,072 A100s with global batch 3,072 (issue targets: at least
// 1,000,000 plans/s and under one second for the whole command). Prints figures; asserts nothing.
#include <fmt/core.h>

#include <chrono>
#include <cstdlib>
#include <string>

#include "planner/cost/simulate.h"
#include "planner/io/cluster_io.h"
#include "planner/io/model_io.h"
#include "planner/search.h"

using namespace planner;
using Clock = std::chrono::steady_clock;

static double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

int main(int argc, char** argv) {
  const std::string root = argc > 1 ? argv[1] : ".";
  const ModelSpec m = io::load_model(root + "/configs/models/megatron-1t.yaml");
  const ClusterProfile c = io::load_cluster(root + "/hw_profiles/dgx-a100-80gb.yaml");
  SearchOptions o;
  o.gpus = {3072};
  o.global_batch = 3072;
  const KnobSpace k = default_knobs(m, c, 3072);

  // 1. The closed-form search alone (the pre-filter), repeated for a stable figure, then the
  //    default search with its simulator re-ranking of the best candidates.
  SearchResult r;
  const int reps = 5;
  SearchOptions closed = o;
  closed.simulate_candidates = 0;
  auto t0 = Clock::now();
  for (int i = 0; i < reps; ++i) r = search(m, c, k, closed);
  const double search_s = seconds_since(t0) / reps;
  t0 = Clock::now();
  const SearchResult full = search(m, c, k, o);
  const double full_s = seconds_since(t0);
  const long long estimated = r.evaluated - r.rejections[int(Rejection::gpus_mismatch)];
  fmt::print("megatron-1t, 3072 x A100 80GB, gbs 3072, default knobs\n");
  fmt::print("  plans enumerated         {} ({} ranked, {} out of memory)\n", r.evaluated,
             r.rejections[int(Rejection::none)], r.rejections[int(Rejection::out_of_memory)]);
  fmt::print("  closed-form search       {:.4f} s\n", search_s);
  fmt::print("  + simulator re-ranking   {:.4f} s in all ({} candidates simulated twice)\n", full_s,
             full.simulated);
  fmt::print(
      "  plans per second         {:.3g} (all enumerated), {:.3g} (past the GPU-count check)\n",
      r.evaluated / search_s, estimated / search_s);

  // 2. Full estimates of valid plans only: the cost of the cost model itself, one core.
  Plan p = r.top.front().plan;
  EstimateCache cache;
  cache.layout = block_layout(m);
  cache.cell = cell_costs(m, c, p, cache.layout);  // what the search memoises per cell
  EstimateOptions eo;
  eo.reasons = false;
  const int n = 2000000;
  Workspace ws;  // reused from plan to plan, as the search does
  for (bool detail : {true, false}) {
    eo.detail = detail;
    double sink = 0;
    t0 = Clock::now();
    for (int i = 0; i < n; ++i) {
      p.zero = i & 1;  // vary a knob so nothing is hoisted
      sink += estimate(m, c, p, eo, &cache, &ws).iteration_time_s;
    }
    const double est_s = seconds_since(t0);
    fmt::print(
        "  full estimates per second {:.3g} ({}; one feasible plan, memoised layer; checksum "
        "{:.3g})\n",
        n / est_s, detail ? "with detail" : "ranking result, as the search", sink);
  }

  // 3. The pipeline simulator: pp = 64, 1,024 micro-batches, vpp = 2 (issue target: well under
  // 10 ms), and ZB-H1 at the same size.
  for (Schedule sched : {Schedule::interleaved, Schedule::zb_h1}) {
    SimInput in;
    in.schedule = sched, in.pp = 64, in.vpp = sched == Schedule::interleaved ? 2 : 1;
    in.microbatches = 1024, in.p2p_s = 1e-4;
    in.chunks.assign(size_t(in.pp) * in.vpp, ChunkCost{0.01, 0.02, 0.01});
    SimResult res;
    const int sims = 20;
    t0 = Clock::now();
    for (int i = 0; i < sims; ++i) res = simulate(in);
    fmt::print(
        "  simulate pp=64 m=1024 {:<12} {:.2f} ms per iteration simulated "
        "({} stages, makespan {:.2f} s)\n",
        sched == Schedule::interleaved ? "vpp=2" : "zb-h1", seconds_since(t0) / sims * 1e3,
        res.busy_s.size(), res.makespan_s);
  }

  // 4. The whole command, process start and YAML loading included.
  if (argc > 2) {
    const std::string cmd =
        std::string(argv[2]) + " suggest --model " + root +
        "/configs/models/megatron-1t.yaml --cluster " + root +
        "/hw_profiles/dgx-a100-80gb.yaml --gpus 3072 --global-batch 3072 >/dev/null";
    t0 = Clock::now();
    const int rc = std::system(cmd.c_str());
    fmt::print("  planner suggest command  {:.4f} s wall (exit {})\n", seconds_since(t0), rc);
  }
  return 0;
}

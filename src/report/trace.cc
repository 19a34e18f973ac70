#include "planner/report/trace.h"

#include <nlohmann/json.hpp>

#include "planner/io/json.h"

namespace planner {

double trace_events(const Plan& p) {
  const double chunks = double(p.pp) * p.vpp, m = p.microbatches();
  const double tasks = chunks * m * (p.schedule == Schedule::zb_h1 ? 3 : 2);
  const double transfers = 2 * (chunks - 1) * m;
  return 3.0 * p.pp + 1 + tasks + transfers;
}

void write_chrome_trace(const SimResult& sim, const Plan& p,
                        const std::function<void(std::string_view)>& out) {
  using nlohmann::json;
  bool first = true;
  auto event = [&](const json& e) {
    out(first ? "\n" : ",\n");
    out(io::dump_json(e));
    first = false;
  };
  out("{\"displayTimeUnit\":\"ms\",\"otherData\":");
  out(io::dump_json(json{{"plan", to_plan_string(p)}, {"iteration_s", sim.makespan_s}}));
  out(",\"traceEvents\":[");
  const int stages = static_cast<int>(sim.busy_s.size());
  for (int s = 0; s < stages; ++s) {
    event({{"name", "thread_name"},
           {"ph", "M"},
           {"pid", 0},
           {"tid", 2 * s},
           {"args", {{"name", "stage " + std::to_string(s) + " compute"}}}});
    event({{"name", "thread_name"},
           {"ph", "M"},
           {"pid", 0},
           {"tid", 2 * s + 1},
           {"args", {{"name", "stage " + std::to_string(s) + " receive"}}}});
    event({{"name", "thread_sort_index"},
           {"ph", "M"},
           {"pid", 0},
           {"tid", 2 * s},
           {"args", {{"sort_index", 2 * s}}}});
  }
  event({{"name", "process_name"},
         {"ph", "M"},
         {"pid", 0},
         {"args", {{"name", "planner: " + to_plan_string(p)}}}});
  for (const SimTask& t : sim.trace) {
    const bool transfer = t.kind == TaskKind::transfer;
    const char* category = t.kind == TaskKind::forward           ? "forward"
                           : transfer                            ? "transfer"
                           : t.kind == TaskKind::backward_weight ? "weight-gradient"
                                                                 : "backward";
    std::string name = std::string(to_string(t.kind)) + " mb" + std::to_string(t.microbatch);
    if (p.vpp > 1) name += " c" + std::to_string(t.chunk);
    event({{"name", name},
           {"cat", category},
           {"ph", "X"},
           {"pid", 0},
           {"tid", 2 * t.stage + (transfer ? 1 : 0)},
           {"ts", t.start_s * 1e6},
           {"dur", (t.end_s - t.start_s) * 1e6},
           {"args", {{"microbatch", t.microbatch}, {"chunk", t.chunk}, {"stage", t.stage}}}});
  }
  out("\n]}\n");
}

}  // namespace planner

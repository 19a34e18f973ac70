#include "planner/report/trace.h"

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "planner/error.h"

namespace planner {

nlohmann::json chrome_trace(const SimResult& sim, const Plan& p) {
  using nlohmann::json;
  json events = json::array();
  const int stages = static_cast<int>(sim.busy_s.size());
  for (int s = 0; s < stages; ++s) {
    events.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", 0}, {"tid", 2 * s},
                      {"args", {{"name", "stage " + std::to_string(s) + " compute"}}}});
    events.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", 0}, {"tid", 2 * s + 1},
                      {"args", {{"name", "stage " + std::to_string(s) + " receive"}}}});
    events.push_back({{"name", "thread_sort_index"}, {"ph", "M"}, {"pid", 0}, {"tid", 2 * s},
                      {"args", {{"sort_index", 2 * s}}}});
  }
  events.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", 0},
                    {"args", {{"name", "planner: " + to_plan_string(p)}}}});
  for (const SimTask& t : sim.trace) {
    const bool transfer = t.kind == TaskKind::transfer;
    const char* category = t.kind == TaskKind::forward    ? "forward"
                           : transfer                      ? "transfer"
                           : t.kind == TaskKind::backward_weight ? "weight-gradient"
                                                                  : "backward";
    std::string name = std::string(to_string(t.kind)) + " mb" + std::to_string(t.microbatch);
    if (p.vpp > 1) name += " c" + std::to_string(t.chunk);
    events.push_back({{"name", name},
                      {"cat", category},
                      {"ph", "X"},
                      {"pid", 0},
                      {"tid", 2 * t.stage + (transfer ? 1 : 0)},
                      {"ts", t.start_s * 1e6},
                      {"dur", (t.end_s - t.start_s) * 1e6},
                      {"args", {{"microbatch", t.microbatch}, {"chunk", t.chunk}, {"stage", t.stage}}}});
  }
  return {{"traceEvents", events}, {"displayTimeUnit", "ms"},
          {"otherData", {{"plan", to_plan_string(p)}, {"iteration_s", sim.makespan_s}}}};
}

void write_file_atomically(const std::string& path, const std::string& content) {
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());  // unique per process
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw InputError(path, 0, "", "cannot write the file");
    out << content;
    if (!out.flush()) {
      std::remove(tmp.c_str());
      throw InputError(path, 0, "", "cannot write the file");
    }
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::remove(tmp.c_str());
    throw InputError(path, 0, "", "cannot write the file: " + ec.message());
  }
}

}  // namespace planner

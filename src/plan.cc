#include "planner/plan.h"

#include <sstream>

#include "planner/error.h"
#include "planner/knob_table.h"
#include "planner/names.h"

namespace planner {

const char* to_string(Recompute r) { return name_of(r); }
const char* to_string(Schedule s) { return name_of(s); }

std::string to_plan_string(const Plan& p) {
  std::string out;
  for (const KnobDef& k : knob_table()) {
    const int v = k.get(p);
    if (v == kUnset) continue;  // left to the execution stack
    out += (out.empty() ? "" : ",") + std::string(k.name) + "=" + k.text(v);
  }
  return out;
}

Plan parse_plan(const std::string& text, const std::string& origin) {
  Plan p;
  p.dp = 0;   // 0: derive from the GPU count
  p.gbs = 0;  // 0: take --global-batch
  bool schedule_given = false;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (item.empty()) continue;
    auto eq = item.find('=');
    if (eq == std::string::npos)
      throw InputError(origin, 0, item, "expected key=value (e.g. tp=8)");
    const std::string key = item.substr(0, eq), value = item.substr(eq + 1);
    const KnobDef* k = find_knob(key);
    if (!k) {
      std::string near = nearest_word(key, knob_names());
      throw InputError(
          origin, 0, key,
          "unknown plan knob" + (near.empty() ? std::string() : ", did you mean '" + near + "'?"));
    }
    k->set(p, parse_knob_value(*k, value, origin));
    schedule_given = schedule_given || k->id == KnobId::schedule;
  }
  if (!schedule_given) p.schedule = p.vpp > 1 ? Schedule::interleaved : Schedule::one_f_one_b;
  if (p.vpp > 1 && p.schedule != Schedule::interleaved)
    throw InputError(origin, 0, "vpp", "vpp > 1 needs schedule=interleaved");
  if (p.vpp == 1 && p.schedule == Schedule::interleaved)
    throw InputError(origin, 0, "schedule",
                     "schedule=interleaved needs vpp > 1 (model chunks per stage)");
  return p;
}

}  // namespace planner

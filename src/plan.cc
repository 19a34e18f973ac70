#include "planner/plan.h"

#include <charconv>
#include <sstream>
#include <vector>

#include "planner/error.h"

namespace planner {

const char* to_string(Recompute r) {
  switch (r) {
    case Recompute::none:
      return "none";
    case Recompute::selective:
      return "selective";
    case Recompute::full:
      return "full";
  }
  return "?";
}

const char* to_string(Schedule s) {
  switch (s) {
    case Schedule::gpipe:
      return "gpipe";
    case Schedule::one_f_one_b:
      return "1f1b";
    case Schedule::interleaved:
      return "interleaved";
    case Schedule::zb_h1:
      return "zb-h1";
  }
  return "?";
}

std::string to_plan_string(const Plan& p) {
  std::ostringstream o;
  o << "tp=" << p.tp << ",pp=" << p.pp << ",dp=" << p.dp << ",cp=" << p.cp << ",vpp=" << p.vpp
    << ",mbs=" << p.mbs << ",gbs=" << p.gbs << ",zero=" << p.zero
    << ",recompute=" << to_string(p.recompute) << ",sp=" << (p.sp ? 1 : 0)
    << ",schedule=" << to_string(p.schedule) << ",dtype=" << to_string(p.dtype);
  if (p.attention) o << ",attn=" << (*p.attention == AttentionKernel::flash ? "flash" : "unfused");
  return o.str();
}

namespace {

const std::vector<std::string> kPlanKeys = {"dp",       "tp",    "pp",   "cp",        "vpp",
                                            "mbs",      "gbs",   "zero", "recompute", "sp",
                                            "schedule", "dtype", "attn"};

int to_int(const std::string& value, const std::string& key, const std::string& origin) {
  int v = 0;
  auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
  if (ec != std::errc() || ptr != value.data() + value.size())
    throw InputError(origin, 0, key, "expected an integer, got '" + value + "'");
  return v;
}

template <typename E>
E pick(const std::string& value, const std::string& key, const std::string& origin,
       const std::vector<std::pair<std::string, E>>& options) {
  std::string list;
  for (const auto& [name, e] : options) {
    if (name == value) return e;
    list += (list.empty() ? "" : ", ") + name;
  }
  throw InputError(origin, 0, key, "unknown value '" + value + "' (expected one of " + list + ")");
}

void set_key(Plan& p, const std::string& key, const std::string& v, const std::string& origin) {
  if (key == "dp")
    p.dp = to_int(v, key, origin);
  else if (key == "tp")
    p.tp = to_int(v, key, origin);
  else if (key == "pp")
    p.pp = to_int(v, key, origin);
  else if (key == "cp")
    p.cp = to_int(v, key, origin);
  else if (key == "vpp")
    p.vpp = to_int(v, key, origin);
  else if (key == "mbs")
    p.mbs = to_int(v, key, origin);
  else if (key == "gbs")
    p.gbs = to_int(v, key, origin);
  else if (key == "zero")
    p.zero = to_int(v, key, origin);
  else if (key == "sp")
    p.sp = pick<bool>(v, key, origin, {{"0", false}, {"1", true}});
  else if (key == "recompute")
    p.recompute = pick<Recompute>(v, key, origin,
                                  {{"none", Recompute::none},
                                   {"selective", Recompute::selective},
                                   {"full", Recompute::full}});
  else if (key == "schedule")
    p.schedule = pick<Schedule>(v, key, origin,
                                {{"gpipe", Schedule::gpipe},
                                 {"1f1b", Schedule::one_f_one_b},
                                 {"interleaved", Schedule::interleaved},
                                 {"zb-h1", Schedule::zb_h1}});
  else if (key == "dtype")
    p.dtype = pick<Dtype>(
        v, key, origin,
        {{"fp16", Dtype::fp16}, {"bf16", Dtype::bf16}, {"fp8", Dtype::fp8}, {"tf32", Dtype::tf32}});
  else if (key == "attn")
    p.attention = pick<AttentionKernel>(
        v, key, origin, {{"flash", AttentionKernel::flash}, {"unfused", AttentionKernel::unfused}});
}

}  // namespace

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
    std::string key = item.substr(0, eq), value = item.substr(eq + 1);
    bool known = false;
    for (const auto& k : kPlanKeys) known = known || k == key;
    if (!known) {
      std::string near = nearest_word(key, kPlanKeys);
      throw InputError(
          origin, 0, key,
          "unknown plan knob" + (near.empty() ? std::string() : ", did you mean '" + near + "'?"));
    }
    set_key(p, key, value, origin);
    schedule_given = schedule_given || key == "schedule";
  }
  for (auto [v, k] :
       {std::pair{p.tp, "tp"}, {p.pp, "pp"}, {p.cp, "cp"}, {p.vpp, "vpp"}, {p.mbs, "mbs"}}) {
    if (v <= 0)
      throw InputError(origin, 0, k, "must be a positive integer, got " + std::to_string(v));
    if (v > kMaxKnob) throw InputError(origin, 0, k, "must be at most " + std::to_string(kMaxKnob));
  }
  if (p.dp > kMaxKnob)
    throw InputError(origin, 0, "dp", "must be at most " + std::to_string(kMaxKnob));
  if (p.gbs > kMaxGlobalBatch)
    throw InputError(origin, 0, "gbs", "must be at most " + std::to_string(kMaxGlobalBatch));
  if (p.dp < 0 || p.gbs < 0)
    throw InputError(origin, 0, p.dp < 0 ? "dp" : "gbs", "must be a positive integer");
  if (p.zero < 0 || p.zero > 3)
    throw InputError(origin, 0, "zero", "must be 0, 1, 2 or 3, got " + std::to_string(p.zero));
  if (!schedule_given) p.schedule = p.vpp > 1 ? Schedule::interleaved : Schedule::one_f_one_b;
  if (p.vpp > 1 && p.schedule != Schedule::interleaved)
    throw InputError(origin, 0, "vpp", "vpp > 1 needs schedule=interleaved");
  if (p.vpp == 1 && p.schedule == Schedule::interleaved)
    throw InputError(origin, 0, "schedule",
                     "schedule=interleaved needs vpp > 1 (model chunks per stage)");
  return p;
}

}  // namespace planner

#include "planner/plan.h"

#include <sstream>

#include "planner/error.h"
#include "planner/format.h"
#include "planner/knob_table.h"
#include "planner/names.h"

namespace planner {

const char* to_string(Recompute r) { return name_of(r); }
const char* to_string(Schedule s) { return name_of(s); }

std::string to_plan_string(const Plan& p) {
  std::string out;
  for (const KnobDef& k : knob_table()) {
    const int v = k.get(p);
    if (v == kUnset) continue;     // left to the execution stack
    if (!out.empty()) out += ',';  // (appends: GCC 12's -Wrestrict misfires on "," + string)
    out += k.name;
    out += '=';
    out += k.text(v);
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

namespace {

/// The largest count f for `shortened` stages (the first and last, or the last) below the other
/// stages' m = (layers - shortened x f) / (pp - shortened), f and m multiples of vpp; 0 if none.
int shortened_stage_layers(int layers, int pp, int vpp, int shortened) {
  if (pp <= shortened) return 0;
  for (int f = (layers - 1) / pp; f >= 1; --f) {
    const int rest = layers - shortened * f;
    if (rest % (pp - shortened) != 0) continue;
    const int m = rest / (pp - shortened);
    if (m > f && f % vpp == 0 && m % vpp == 0) return f;
  }
  return 0;
}

}  // namespace

int short_end_layers(int layers, int pp, int vpp) {
  return shortened_stage_layers(layers, pp, vpp, 2);
}

int short_last_layers(int layers, int pp, int vpp) {
  return shortened_stage_layers(layers, pp, vpp, 1);
}

SplitError split_check(int layers, const Plan& p, std::string* why) {
  const int pp = p.pp, vpp = p.vpp, chunks = pp * vpp;
  auto no = [&](SplitError e, auto&& text) {
    if (why) *why = text();
    return e;
  };
  switch (p.split) {
    case PipelineSplit::even:
      if (layers % pp != 0)
        return no(SplitError::layers, [&] {
          return fmt(
              "pp={} does not divide layers={} (split=short_ends or embed_loss cut them "
              "unevenly)",
              pp, layers);
        });
      if ((layers / pp) % vpp != 0)
        return no(SplitError::vpp, [&] {
          return fmt("vpp={} needs pp>1 and to divide the {} layers per stage", vpp, layers / pp);
        });
      return SplitError::none;
    case PipelineSplit::short_ends:
      if (short_end_layers(layers, pp, vpp) == 0)
        return no(SplitError::layers, [&] {
          return fmt(
              "split=short_ends needs pp >= 3 and a first and last stage shorter than the "
              "others, in whole chunks of vpp={}: none for {} layers on pp={}",
              vpp, layers, pp);
        });
      return SplitError::none;
    case PipelineSplit::short_last:
      if (short_last_layers(layers, pp, vpp) == 0)
        return no(SplitError::layers, [&] {
          return fmt(
              "split=short_last needs pp >= 2 and a last stage shorter than the others, in whole "
              "chunks of vpp={}: none for {} layers on pp={}",
              vpp, layers, pp);
        });
      return SplitError::none;
    case PipelineSplit::embed_loss:
      // The embedding and the loss each take a layer's place: layers + 2 shared by the chunks.
      if (pp < 2 || (layers + 2) % chunks != 0 || (layers + 2) / chunks < 2)
        return no(SplitError::layers, [&] {
          return fmt(
              "split=embed_loss needs pp >= 2 and pp*vpp={} to divide layers + 2 = {} "
              "with at least 2 per chunk",
              chunks, layers + 2);
        });
      return SplitError::none;
  }
  return SplitError::layers;
}

int split_stage_layers(int layers, const Plan& p, int stage) {
  const int pp = p.pp, vpp = p.vpp;
  switch (p.split) {
    case PipelineSplit::even:
      return layers / pp;
    case PipelineSplit::short_ends: {
      const int f = short_end_layers(layers, pp, vpp);
      return stage == 0 || stage == pp - 1 ? f : (layers - 2 * f) / (pp - 2);
    }
    case PipelineSplit::embed_loss: {
      const int n = (layers + 2) / (pp * vpp);
      return n * vpp - (stage == 0 ? 1 : 0) - (stage == pp - 1 ? 1 : 0);
    }
    case PipelineSplit::short_last: {
      const int l = short_last_layers(layers, pp, vpp);
      return stage == pp - 1 ? l : (layers - l) / (pp - 1);
    }
  }
  return layers / pp;
}

}  // namespace planner

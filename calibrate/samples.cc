#include "calibrate/samples.h"

#include <algorithm>
#include <functional>
#include <initializer_list>
#include <nlohmann/json.hpp>

#include "planner/cost/communication.h"
#include "planner/error.h"
#include "planner/format.h"
#include "planner/io/file.h"
#include "planner/io/json.h"
#include "planner/io/yaml_util.h"

namespace planner::calibrate {

const char* to_string(HbmKind k) {
  switch (k) {
    case HbmKind::d2d_copy:
      return "d2d_copy";
    case HbmKind::read:
      return "read";
    case HbmKind::h2d:
      return "h2d";
    case HbmKind::d2h:
      return "d2h";
  }
  return "?";
}

const char* to_string(Tier t) { return t == Tier::intra_node ? "intra_node" : "inter_node"; }

double CollectiveSample::busbw_Bps() const { return algbw_Bps() * bus_factor(collective, ranks); }

namespace {

using Json = nlohmann::ordered_json;
using io::YamlReader;

// ---- writing -------------------------------------------------------------------------------

Json context_json(const RunContext& c) {
  return Json{{"tool", c.tool},
              {"gpu", c.gpu},
              {"sms", c.sms},
              {"compute_capability", c.compute_capability},
              {"hbm_bytes", c.hbm_bytes},
              {"l2_bytes", c.l2_bytes},
              {"driver", c.driver},
              {"cuda_runtime", c.cuda_runtime},
              {"cublas", c.cublas},
              {"nccl", c.nccl},
              {"hosts", c.hosts},
              {"gpus_per_node", c.gpus_per_node},
              {"nodes", c.nodes},
              {"date", c.date},
              {"command_line", c.command_line},
              {"sweep", c.sweep}};
}

Json gemm_json(const GemmSample& g) {
  return Json{{"dtype", to_string(g.dtype)},
              {"linear", g.linear},
              {"orientation", g.orientation},
              {"layout", g.layout},
              {"hidden", g.hidden},
              {"tp", g.tp},
              {"tokens", g.tokens},
              {"m", g.m},
              {"n", g.n},
              {"k", g.k},
              {"time_us", g.time_s * 1e6},
              {"tflops", 2 * g.m * g.n * g.k / g.time_s / 1e12},
              {"repeats", g.repeats},
              {"spread", g.spread}};
}

Json hbm_json(const HbmSample& h) {
  return Json{{"kind", to_string(h.kind)},
              {"bytes", h.bytes},
              {"moved_bytes", h.moved_bytes},
              {"time_us", h.time_s * 1e6},
              {"GBps", h.bandwidth_Bps() / 1e9},
              {"repeats", h.repeats},
              {"spread", h.spread}};
}

Json collective_json(const CollectiveSample& c) {
  return Json{{"tier", to_string(c.tier)},
              {"collective", to_string(c.collective)},
              {"ranks", c.ranks},
              {"bytes", c.bytes},
              {"time_us", c.time_s * 1e6},
              {"algbw_GBps", c.algbw_Bps() / 1e9},
              {"busbw_GBps", c.busbw_Bps() / 1e9},
              {"repeats", c.repeats},
              {"spread", c.spread}};
}

/// A JSON array with one compact entry per line, so that thousands of samples stay readable.
template <typename T, typename F>
void write_rows(std::string& o, const char* key, const std::vector<T>& rows, F to_json, bool last) {
  o += fmt("  \"{}\": [", key);
  for (size_t i = 0; i < rows.size(); ++i)
    o += (i ? ",\n    " : "\n    ") + io::dump_json(to_json(rows[i]));
  o += rows.empty() ? "]" : "\n  ]";
  o += last ? "\n" : ",\n";
}

// ---- reading -------------------------------------------------------------------------------

/// JSON syntax first, with the planner's strict reader (yaml-cpp would accept more than JSON and
/// word its errors for YAML).
void check_json_syntax(const std::string& text, const std::string& file) {
  (void)io::parse_json(text, file);
}

double positive(const YamlReader& r, const std::string& key) {
  const double v = r.get_double(key);
  if (!(v > 0)) r.fail(key, "must be positive");
  return v;
}

double non_negative(const YamlReader& r, const std::string& key, double fallback) {
  if (!r.has(key)) return fallback;
  const double v = r.get_double(key);
  if (!(v >= 0)) r.fail(key, "must not be negative");
  return v;
}

template <typename E>
E parse_enum(const YamlReader& r, const std::string& key, std::initializer_list<E> values) {
  const std::string text = r.get_string(key);
  std::string all;
  for (E e : values) {
    if (text == to_string(e)) return e;
    all += (all.empty() ? "" : ", ") + std::string(to_string(e));
  }
  r.fail(key, "expected one of " + all + ", got '" + text + "'");
}

void for_each_entry(const YamlReader& r, const std::string& key,
                    const std::function<void(const YamlReader&)>& read) {
  if (!r.has(key)) return;
  const YAML::Node list = r.node(key);
  if (!list.IsSequence()) r.fail(key, "expected a list of samples");
  for (size_t i = 0; i < list.size(); ++i)
    read(YamlReader(list[i], r.file(), r.path(key) + "[" + std::to_string(i) + "]"));
}

std::string optional_string(const YamlReader& r, const std::string& key) {
  return r.has(key) ? r.get_string(key) : std::string();
}

RunContext read_context(const YamlReader& r) {
  r.check_keys({"tool", "gpu", "sms", "compute_capability", "hbm_bytes", "l2_bytes", "driver",
                "cuda_runtime", "cublas", "nccl", "hosts", "gpus_per_node", "nodes", "date",
                "command_line", "sweep"});
  RunContext c;
  c.tool = optional_string(r, "tool");
  c.gpu = optional_string(r, "gpu");
  c.sms = r.has("sms") ? r.get_int("sms") : 0;
  c.compute_capability = optional_string(r, "compute_capability");
  c.hbm_bytes = non_negative(r, "hbm_bytes", 0);
  c.l2_bytes = non_negative(r, "l2_bytes", 0);
  c.driver = optional_string(r, "driver");
  c.cuda_runtime = optional_string(r, "cuda_runtime");
  c.cublas = optional_string(r, "cublas");
  c.nccl = optional_string(r, "nccl");
  if (r.has("hosts")) {
    const YAML::Node hosts = r.node("hosts");
    if (!hosts.IsSequence()) r.fail("hosts", "expected a list of host names");
    for (const auto& h : hosts) {
      if (!h.IsScalar()) r.fail("hosts", "expected a list of host names");
      c.hosts.push_back(h.Scalar());
    }
  }
  c.gpus_per_node = r.has("gpus_per_node") ? r.get_int("gpus_per_node") : 1;
  c.nodes = r.has("nodes") ? r.get_int("nodes") : 1;
  if (c.gpus_per_node < 1) r.fail("gpus_per_node", "must be a positive integer");
  if (c.nodes < 1) r.fail("nodes", "must be a positive integer");
  c.date = optional_string(r, "date");
  c.command_line = optional_string(r, "command_line");
  c.sweep = optional_string(r, "sweep");
  return c;
}

GemmSample read_gemm(const YamlReader& r) {
  r.check_keys({"dtype", "linear", "orientation", "layout", "hidden", "tp", "tokens", "m", "n", "k",
                "time_us", "tflops", "repeats", "spread"});
  GemmSample g;
  g.dtype = parse_enum(r, "dtype", {Dtype::fp16, Dtype::bf16, Dtype::fp8, Dtype::tf32});
  g.linear = optional_string(r, "linear");
  g.orientation = optional_string(r, "orientation");
  g.layout = optional_string(r, "layout");
  g.hidden = r.has("hidden") ? r.get_int("hidden") : 0;
  g.tp = r.has("tp") ? r.get_int("tp") : 0;
  g.tokens = r.has("tokens") ? r.get_int("tokens") : 0;
  g.m = positive(r, "m");
  g.n = positive(r, "n");
  g.k = positive(r, "k");
  g.time_s = positive(r, "time_us") * 1e-6;
  g.repeats = r.has("repeats") ? r.get_int("repeats") : 0;
  g.spread = non_negative(r, "spread", 0);
  return g;
}

HbmSample read_hbm(const YamlReader& r) {
  r.check_keys({"kind", "bytes", "moved_bytes", "time_us", "GBps", "repeats", "spread"});
  HbmSample h;
  h.kind = parse_enum(r, "kind", {HbmKind::d2d_copy, HbmKind::read, HbmKind::h2d, HbmKind::d2h});
  h.bytes = positive(r, "bytes");
  h.moved_bytes = positive(r, "moved_bytes");
  h.time_s = positive(r, "time_us") * 1e-6;
  h.repeats = r.has("repeats") ? r.get_int("repeats") : 0;
  h.spread = non_negative(r, "spread", 0);
  return h;
}

CollectiveSample read_collective(const YamlReader& r) {
  r.check_keys({"tier", "collective", "ranks", "bytes", "time_us", "algbw_GBps", "busbw_GBps",
                "repeats", "spread"});
  CollectiveSample c;
  c.tier = parse_enum(r, "tier", {Tier::intra_node, Tier::inter_node});
  c.collective =
      parse_enum(r, "collective",
                 {Collective::allreduce, Collective::allgather, Collective::reduce_scatter,
                  Collective::alltoall, Collective::sendrecv});
  c.ranks = r.get_int("ranks");
  if (c.ranks < 2) r.fail("ranks", "a collective needs at least 2 ranks");
  c.bytes = positive(r, "bytes");
  c.time_s = positive(r, "time_us") * 1e-6;
  c.repeats = r.has("repeats") ? r.get_int("repeats") : 0;
  c.spread = non_negative(r, "spread", 0);
  return c;
}

}  // namespace

std::string samples_json(const Samples& s) {
  std::string context = io::dump_json(context_json(s.context), 2);
  for (size_t p = context.find('\n'); p != std::string::npos; p = context.find('\n', p + 3))
    context.replace(p, 1, "\n  ");
  std::string o =
      fmt("{{\n  \"schema_version\": {},\n  \"context\": {},\n", kSamplesSchemaVersion, context);
  write_rows(o, "gemm", s.gemm, gemm_json, false);
  write_rows(o, "hbm", s.hbm, hbm_json, false);
  write_rows(o, "collectives", s.collectives, collective_json, true);
  o += "}\n";
  return o;
}

Samples parse_samples(const std::string& text, const std::string& file) {
  check_json_syntax(text, file);
  const YamlReader r(io::parse_yaml_text(text, file), file);
  r.check_keys({"schema_version", "context", "gemm", "hbm", "collectives"});
  const int version = r.get_int("schema_version");
  if (version != kSamplesSchemaVersion)
    r.fail("schema_version", "unsupported version " + std::to_string(version) +
                                 " (this planner-calibrate reads version " +
                                 std::to_string(kSamplesSchemaVersion) + ")");
  Samples s;
  s.context = read_context(r.child("context"));
  for_each_entry(r, "gemm", [&](const YamlReader& e) { s.gemm.push_back(read_gemm(e)); });
  for_each_entry(r, "hbm", [&](const YamlReader& e) { s.hbm.push_back(read_hbm(e)); });
  for_each_entry(r, "collectives",
                 [&](const YamlReader& e) { s.collectives.push_back(read_collective(e)); });
  return s;
}

Samples load_samples(const std::string& path) { return parse_samples(io::read_file(path), path); }

}  // namespace planner::calibrate

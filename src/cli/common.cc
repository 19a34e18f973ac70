#include "cli/common.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <set>

#include "cli/commands.h"
#include "planner/error.h"
#include "planner/format.h"
#include "planner/io/bands_io.h"
#include "planner/io/cluster_io.h"
#include "planner/io/file.h"
#include "planner/io/knobs.h"
#include "planner/io/model_io.h"
#include "planner/io/output.h"
#include "planner/limits.h"
#include "planner/names.h"
#include "planner/report/trace.h"
#include "planner/units.h"

namespace planner::cli {
namespace {

/// The whole of `text` as a number, or nullopt.
std::optional<double> whole_number(const std::string& text) {
  if (text.empty() || std::isspace(static_cast<unsigned char>(text[0]))) return std::nullopt;
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size()) return std::nullopt;
  return v;
}

/// How many shipped names an unknown name's message lists.
constexpr size_t kNearestNames = 3;

}  // namespace

namespace {
std::optional<AccuracyBands> load_shipped_bands(const char* name) {
  namespace fs = std::filesystem;
  for (const fs::path& root : {fs::path("."), fs::path(PLANNER_SOURCE_DIR)}) {
    const fs::path file = root / "configs/accuracy" / name;
    std::error_code ec;
    if (fs::is_regular_file(file, ec)) return io::load_bands(file.string());
  }
  return std::nullopt;
}
}  // namespace

const AccuracyBands* shipped_bands() {
  static const std::optional<AccuracyBands> bands = load_shipped_bands("bands.csv");
  return bands ? &*bands : nullptr;
}

const AccuracyBands* shipped_moe_bands() {
  static const std::optional<AccuracyBands> bands = load_shipped_bands("moe-bands.csv");
  return bands ? &*bands : nullptr;
}

namespace {

/// The endings of shipped inputs, in the order a name tries them: the model YAML, then a
/// Hugging Face config.json (the models with experts).
constexpr std::array<const char*, 2> kShippedExtensions = {".yaml", ".json"};

bool shipped_extension(const std::filesystem::path& p) {
  return std::find(kShippedExtensions.begin(), kShippedExtensions.end(), p.extension().string()) !=
         kShippedExtensions.end();
}

}  // namespace

std::vector<std::string> shipped_names(const std::string& folder) {
  namespace fs = std::filesystem;
  std::set<std::string> names;
  for (const fs::path& root : {fs::path("."), fs::path(PLANNER_SOURCE_DIR)}) {
    std::error_code ec;
    for (fs::directory_iterator it(root / folder, ec), end; !ec && it != end; it.increment(ec))
      if (shipped_extension(it->path())) names.insert(it->path().stem().string());
  }
  return {names.begin(), names.end()};
}

std::string resolve_input(const std::string& text, const std::string& folder,
                          const std::string& option) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (text.empty() || text.find('/') != std::string::npos || fs::exists(text, ec) || ec)
    return text;                   // a path: read as given (a missing one is read_file's message)
  std::vector<std::string> files;  // the name as given when it has an ending, else each ending
  if (shipped_extension(text))
    files.push_back(folder + "/" + text);
  else
    for (const char* ext : kShippedExtensions) files.push_back(folder + "/" + text + ext);
  for (const fs::path& root : {fs::path("."), fs::path(PLANNER_SOURCE_DIR)})
    for (const std::string& file : files) {
      const fs::path candidate = root == "." ? fs::path(file) : root / file;
      if (fs::is_regular_file(candidate, ec)) return candidate.string();
    }
  const std::vector<std::string> names = shipped_names(folder);
  std::string near;
  for (const std::string& n : nearest_words(fs::path(text).stem().string(), names, kNearestNames))
    near += (near.empty() ? "" : ", ") + n;
  throw InputError("", 0, option,
                   "'" + text + "' is neither a file nor a name in " + folder + "/" +
                       (near.empty() ? "" : " (nearest: " + near + ")"));
}

CLI::Validator integer_in(long long lo, long long hi) {
  const std::string range = std::to_string(lo) + " to " + std::to_string(hi);
  return CLI::Validator(
      [=](std::string& text) -> std::string {
        long long v = 0;
        const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
        if (ec == std::errc() && end == text.data() + text.size() && !text.empty())
          return v >= lo && v <= hi ? "" : "must be from " + range + ", got " + text;
        const std::optional<double> x = whole_number(text);
        if (x && std::isfinite(*x) && *x == std::floor(*x) && std::fabs(*x) < 1e18)
          return "expected an integer from " + range + ", got '" + text +
                 "' (write it in digits: " + std::to_string(static_cast<long long>(*x)) + ")";
        return "expected an integer from " + range + ", got '" + text + "'";
      },
      "INT in " + range, "integer_in");
}

CLI::Validator sequences_in(long long lo, long long hi) {
  const CLI::Validator digits = integer_in(lo, hi);
  const std::string range = std::to_string(lo) + " to " + std::to_string(hi);
  return CLI::Validator(
      [=](std::string& text) -> std::string {
        const char unit = text.empty() ? '\0' : text.back();
        if (unit == 'k' || unit == 'm')
          return "'" + text + "' is ambiguous: write K (x " + std::to_string(kBinaryK) +
                 ") or M (x " + std::to_string(kBinaryM) + ") in capitals, or the digits";
        if (unit != 'K' && unit != 'M') return digits(text);
        const std::optional<double> x = whole_number(text.substr(0, text.size() - 1));
        const double v = x ? *x * double(unit == 'K' ? kBinaryK : kBinaryM) : -1;
        if (!x || !std::isfinite(v) || v != std::floor(v) || v < double(lo) || v > double(hi))
          return "expected a whole number of sequences from " + range +
                 " (K = " + std::to_string(kBinaryK) + ", M = " + std::to_string(kBinaryM) +
                 "), got '" + text + "'" + (x && std::isfinite(v) ? fmt(" ({:.12g})", v) : "");
        text = std::to_string(static_cast<long long>(v));
        return "";
      },
      "SEQUENCES in " + range + " (K = 1024, M = 1048576)", "sequences_in");
}

CLI::Validator number_in(double lo, double hi, bool lo_open) {
  const std::string range = fmt("{}{:g}, {:g}]", lo_open ? "(" : "[", lo, hi);
  return CLI::Validator(
      [=](std::string& text) -> std::string {
        const std::optional<double> v = whole_number(text);
        if (!v) return "expected a number in " + range + ", got '" + text + "'";
        const bool ok = std::isfinite(*v) && (lo_open ? *v > lo : *v >= lo) && *v <= hi;
        return ok ? "" : "must be finite and in " + range + ", got " + text;
      },
      "NUMBER in " + range, "number_in");
}

void add_plan_options(CLI::App* s, PlanArgs& a, const std::string& plan_example) {
  s->add_option("--model", a.model, "model YAML (configs/models/) or Hugging Face config.json")
      ->required();
  s->add_option("--cluster", a.cluster, "cluster profile YAML (hw_profiles/)")->required();
  CLI::Option* gpus = s->add_option(
      "--gpus", a.gpus, "GPUs (default: dp*tp*pp*cp of the plan, else the profile's default)");
  s->add_option("--nodes", a.nodes, "hosts of gpus_per_node GPUs, in place of --gpus")
      ->excludes(gpus);
  s->add_option("--plan", a.plan, "e.g. \"" + plan_example + "\"")->required();
  s->add_option("--global-batch", a.global_batch, kGlobalBatchHelp + ", if not in --plan")
      ->transform(sequences_in(1, kMaxGlobalBatch));
  s->add_option("--dtype", a.dtype, "bf16 (default), fp16, fp8, tf32, mxfp8 (Blackwell)");
}

void add_limit_options(CLI::App* s, LimitArgs& a, const std::string& memory_help) {
  s->add_flag("--tp-across-nodes", a.tp_across_nodes, "allow TP groups larger than a node");
  s->add_option("--memory-limit-GiB", a.memory_limit_GiB, memory_help)
      ->check(number_in(0, 1e6, true));
}

std::vector<Framework> frameworks_of(const std::string& text, bool all_allowed) {
  if (text.empty()) return {Framework::megatron};
  if (all_allowed && text == "all") return {kCurrentFrameworks.begin(), kCurrentFrameworks.end()};
  if (const auto f = framework_named(text)) return {*f};
  throw InputError("", 0, "--framework",
                   "unknown framework '" + text + "' (expected " + framework_names() +
                       (all_allowed ? ", or all)" : "; with suggest, all)"));
}

ClusterProfile cluster_for(const ClusterProfile& c, std::optional<Framework> f, bool announce) {
  if (!f) return c;
  ClusterProfile out = c;
  std::string note;
  out.software = execution_stack(*f, c, &note);
  if (!note.empty() && announce) spdlog::info("--framework {}: {}", to_string(*f), note);
  return out;
}

void add_framework_option(CLI::App* s, std::string& framework, bool all) {
  s->add_option("--framework", framework,
                all ? framework_names() + ", or all (the best plans of " + framework_names(true) +
                          " ranked together); default megatron"
                    : framework_names() + ": the plans it can run, on its stack; default megatron");
}

EstimateOptions estimate_options(const LimitArgs& a, bool all_allowed) {
  EstimateOptions o;
  const std::vector<Framework> f = frameworks_of(a.framework, all_allowed);  // "all": the first
  o.framework = f.front();
  o.tp_across_nodes = a.tp_across_nodes;
  o.memory_limit_bytes = a.memory_limit_GiB * kGiB;
  return o;
}

Inputs load_inputs(const std::string& model_file, const std::string& cluster_file) {
  Inputs in;
  in.model_file = resolve_input(model_file, "configs/models", "--model");
  in.cluster_file = resolve_input(cluster_file, "hw_profiles", "--cluster");
  in.model_bytes = io::read_file(in.model_file);
  in.model = io::parse_model_file(in.model_bytes, in.model_file);
  in.cluster_bytes = io::read_file(in.cluster_file);
  in.cluster = io::parse_cluster(in.cluster_bytes, in.cluster_file);
  if (in.cluster.legacy_software)
    spdlog::warn(
        "{}: its software block is read as the default execution choices; a profile now describes "
        "hardware only (flash_efficiency, flash_backward_efficiency and overlap_compute_slowdown "
        "go under gpu:), the stack comes from --framework and the plan's knobs",
        in.cluster_file);
  return in;
}

std::vector<int> parse_gpus(const std::string& text, const ClusterProfile& c) {
  if (text.empty()) return {c.default_gpus()};
  const bool range = text.find('-') != std::string::npos;
  std::vector<int> out;
  for (int g : io::parse_int_set(text, "--gpus")) {
    // A range keeps what can be placed: every count inside a domain, whole hosts beyond.
    if (range && (g <= 0 || !c.job_size_ok(g))) continue;
    if (g <= 0) throw InputError("", 0, "--gpus", "must be positive, got " + std::to_string(g));
    if (g > limits::kClusterGpus)
      throw InputError("", 0, "--gpus",
                       fmt("{} is over the limit of {} GPUs", g, limits::kClusterGpus));
    if (!c.job_size_ok(g))
      throw InputError("", 0, "--gpus",
                       fmt("{} GPUs: beyond one NVLink domain ({} GPUs) a job takes whole hosts "
                           "of gpus_per_node={} ({})",
                           g, c.nvlink_domain, c.gpus_per_node, c.file));
    out.push_back(g);
  }
  if (out.empty())
    throw InputError("", 0, "--gpus", "'" + text + "' holds no GPU count that can be placed");
  return out;
}

std::string gpus_option(const std::string& gpus, const std::string& nodes,
                        const ClusterProfile& c) {
  if (nodes.empty()) return gpus;
  std::string out;
  for (int n : io::parse_int_set(nodes, "--nodes")) {
    if (n <= 0 || 1LL * n * c.gpus_per_node > limits::kClusterGpus)
      throw InputError(
          "", 0, "--nodes",
          fmt("must be from 1 to {}, got {}", limits::kClusterGpus / c.gpus_per_node, n));
    out += (out.empty() ? "" : ",") + std::to_string(n * c.gpus_per_node);
  }
  return out;
}

Dtype parse_dtype(const std::string& text) {
  const auto w = io::parse_word_set(text, "--dtype", {"bf16", "fp16", "fp8", "tf32", "mxfp8"});
  if (w.size() != 1) throw InputError("", 0, "--dtype", "expected one precision");
  return named<Dtype>(w[0]).value_or(Dtype::bf16);
}

std::optional<AttentionKernel> parse_attention(const std::string& text) {
  if (text.empty()) return std::nullopt;
  const auto w = io::parse_word_set(text, "--attention", {"flash", "unfused"});
  if (w.size() != 1) throw InputError("", 0, "--attention", "expected one of flash, unfused");
  return w[0] == "flash" ? AttentionKernel::flash : AttentionKernel::unfused;
}

Estimate estimate_as_reported(const ModelSpec& m, const ClusterProfile& c, const Plan& p,
                              const EstimateOptions& o) {
  const Estimate rejected = refine(m, c, p, o);
  if (rejected.rejection != Rejection::out_of_memory) return rejected;
  EstimateOptions unlimited = o;
  unlimited.memory_limit_bytes = std::numeric_limits<double>::max();
  Estimate e = refine(m, c, p, unlimited);
  if (!e.ok() || !finite_result(e)) return rejected;
  e.memory_limit_bytes = rejected.memory_limit_bytes;
  return e;
}

void require_finite(const Estimate& e) {
  if (finite_result(e)) return;
  throw InputError("", 0, "",
                   "the prediction for --plan \"" + to_plan_string(e.plan) +
                       "\" is not a finite number: the model or the profile holds a number the "
                       "cost model cannot handle");
}

void check_trace_size(const Plan& p) {
  const double events = trace_events(p);
  if (events <= limits::kTraceEvents) return;
  throw InputError(
      "", 0, "--trace",
      fmt("the trace of this plan would hold {:.3g} events (about {:.0f} MB; the limit is "
          "{}): the schedule repeats, so trace a smaller global batch",
          events, events * limits::kTraceEventBytes / kMB, limits::kTraceEvents));
}

void write_trace(const Inputs& in, const Estimate& e, const EstimateOptions& o,
                 const std::string& path) {
  check_trace_size(e.plan);
  io::OutputFile out(path);  // before the simulation: an unwritable path fails at once
  SimResult sim;
  EstimateOptions of = o;
  of.framework = e.framework;
  simulate_plan(in.model, cluster_for(in.cluster, e.framework, false), e.plan, of,
                &e.chunk_partition, &sim, true);
  write_chrome_trace(sim, e.plan, [&](std::string_view piece) { out.write(piece); });
  out.commit();
}

Plan complete_plan(const std::string& plan, const std::string& gpus_text, const std::string& dtype,
                   int global_batch, const Inputs& in) {
  Plan p = parse_plan(plan, "--plan");
  const long long gpus = !gpus_text.empty() ? parse_gpus(gpus_text, in.cluster).back()
                         : p.dp > 0         ? p.gpus()
                                            : in.cluster.default_gpus();
  if (!dtype.empty()) p.dtype = parse_dtype(dtype);
  const long long model_parallel = 1LL * p.tp * p.pp * p.cp;
  if (p.dp == 0) {
    if (gpus % model_parallel != 0)
      throw InputError("", 0, "--plan",
                       "tp*pp*cp = " + std::to_string(model_parallel) + " does not divide " +
                           std::to_string(gpus) + " GPUs");
    p.dp = static_cast<int>(gpus / model_parallel);
  } else if (p.gpus() != gpus) {
    throw InputError(
        "", 0, "--plan",
        "dp*tp*pp*cp = " + std::to_string(p.gpus()) + " but --gpus is " + std::to_string(gpus));
  }
  if (p.gbs == 0) p.gbs = global_batch;
  if (p.gbs <= 0)
    throw InputError("", 0, "--plan", "no global batch: give gbs=... in --plan or --global-batch");
  return p;
}

}  // namespace planner::cli

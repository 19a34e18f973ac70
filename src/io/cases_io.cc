#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <map>
#include <sstream>

#include "planner/error.h"
#include "planner/io/csv.h"
#include "planner/io/file.h"
#include "planner/io/model_io.h"
#include "planner/knob_table.h"
#include "planner/limits.h"
#include "planner/regress.h"

namespace planner {
namespace {

/// The exact columns of shared/data/published-runs.csv, in order.
const std::vector<std::string> kColumns = {"id",
                                           "source",
                                           "cluster",
                                           "num_gpus",
                                           "layers",
                                           "hidden",
                                           "heads",
                                           "kv_heads",
                                           "ffn",
                                           "swiglu",
                                           "vocab",
                                           "seq",
                                           "tp",
                                           "pp",
                                           "dp",
                                           "cp",
                                           "sp",
                                           "vpp",
                                           "mbs",
                                           "gbs",
                                           "zero",
                                           "recompute",
                                           "precision",
                                           "measured_iter_time_s",
                                           "measured_tflops_per_gpu",
                                           "flops_formula"};

/// Where each column of the file is: the base columns (kColumns) and the optional ones given.
using ColumnIndex = std::map<std::string, size_t>;

class Row {
 public:
  Row(const std::vector<std::string>& f, const ColumnIndex& at, const std::string& file, int line)
      : f_(f), at_(at), file_(file), line_(line) {}
  bool has(const std::string& column) const { return at_.count(column) > 0; }
  const std::string& text(const std::string& column) const { return f_[at_.at(column)]; }
  bool empty(const std::string& column) const { return !has(column) || text(column).empty(); }
  [[noreturn]] void fail(const std::string& column, const std::string& what) const {
    throw InputError(file_, line_, "", "column '" + column + "': " + what);
  }
  double number(const std::string& column) const {
    try {
      size_t used = 0;
      const double v = std::stod(text(column), &used);
      if (used == text(column).size() && v > 0 && std::isfinite(v)) return v;
    } catch (const std::exception&) {
    }
    fail(column, "expected a positive finite number, got '" + text(column) + "'");
  }
  int integer(const std::string& column, int min = 1) const {
    try {
      size_t used = 0;
      const int v = std::stoi(text(column), &used);
      if (used == text(column).size() && v >= min && v <= kMaxKnob) return v;
    } catch (const std::exception&) {
    }
    fail(column, "expected an integer from " + std::to_string(min) + " to " +
                     std::to_string(kMaxKnob) + ", got '" + text(column) + "'");
  }
  const std::string& file() const { return file_; }

 private:
  const std::vector<std::string>& f_;
  const ColumnIndex& at_;
  const std::string& file_;
  int line_;
};

/// The cluster column names a file in the profiles folder: a plain name, no path.
constexpr size_t kMaxProfileName = 128;
bool is_profile_name(const std::string& name) {
  if (name.empty() || name.size() > kMaxProfileName || name[0] == '.') return false;
  for (char ch : name)
    if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '.' && ch != '_' && ch != '-')
      return false;
  return true;
}

/// Optional columns, anywhere among the base ones: `model`, a model file (YAML or config.json,
/// relative to the CSV) in place of the shape columns; `published_tflops_per_gpu`, the source's
/// own model TFLOP/s (informational); `mtp_layers`, the multi-token-prediction modules the run
/// trained (in place of the model file's); `framework`, the framework version the run used, whose
/// execution stack the row is predicted on (regress applies a framework's refusals only when
/// given --framework); `model_parallel`, tp x pp where the source gives only that product; and
/// any plan knob (ep, etp, ep_comm_overlap ...), read as --plan reads it.
const std::vector<std::string> kOptionalColumns = {"model", "published_tflops_per_gpu", "framework",
                                                   "mtp_layers", "model_parallel"};

/// The shape columns a `model` file replaces.
const std::vector<std::string> kShapeColumns = {"layers", "hidden", "heads", "kv_heads",
                                                "ffn",    "swiglu", "vocab"};

/// Model files read so far, by path: each is read once however many rows name it.
using LoadedModels = std::map<std::string, ModelSpec>;

/// The model of a row: its `model` file, or its shape columns.
void read_model(const Row& r, RegressionCase& c, LoadedModels& loaded) {
  ModelSpec& m = c.model;
  if (!r.empty("model")) {
    for (const std::string& k : kShapeColumns)
      if (!r.empty(k)) r.fail(k, "must be empty when 'model' names the model file");
    const std::filesystem::path file =
        std::filesystem::path(r.file()).parent_path() / r.text("model");
    auto it = loaded.find(file.string());
    if (it == loaded.end()) it = loaded.emplace(file.string(), io::load_model(file.string())).first;
    m = it->second;
    m.seq_len = r.integer("seq");
    m.name = c.id;
    return;
  }
  m.name = c.id;
  m.layers = r.integer("layers");
  m.hidden = r.integer("hidden");
  m.heads = r.integer("heads");
  m.kv_heads = r.empty("kv_heads") ? m.heads : r.integer("kv_heads");
  m.ffn = r.integer("ffn");
  const int swiglu = r.integer("swiglu", 0);
  if (swiglu > 1) r.fail("swiglu", "expected 0 or 1, got '" + r.text("swiglu") + "'");
  m.swiglu = swiglu == 1;
  m.vocab = r.integer("vocab");
  m.seq_len = r.integer("seq");
}

/// The row's `mtp_layers`, over the model's own count where given.
void read_mtp_layers(const Row& r, ModelSpec& m) {
  if (r.empty("mtp_layers")) return;
  const int n = r.integer("mtp_layers", 0);
  if (n > limits::kMtpLayers)
    r.fail("mtp_layers",
           "expected 0 to " + std::to_string(limits::kMtpLayers) + ", got " + r.text("mtp_layers"));
  m.mtp_layers = n;
}

RegressionCase read_case(const Row& r, int line, LoadedModels& loaded) {
  RegressionCase c;
  c.line = line;
  c.id = r.text("id");
  if (c.id.empty()) r.fail("id", "empty id");
  c.source = r.text("source");
  c.cluster = r.text("cluster");
  if (!is_profile_name(c.cluster))
    r.fail("cluster", "expected a profile name (up to " + std::to_string(kMaxProfileName) +
                          " letters, digits, '.', '_' or '-', not starting with '.'), got '" +
                          c.cluster.substr(0, 40) + (c.cluster.size() > 40 ? "...'" : "'"));
  c.num_gpus = r.integer("num_gpus");
  read_model(r, c, loaded);
  read_mtp_layers(r, c.model);
  const ModelSpec& m = c.model;
  if (!r.empty("published_tflops_per_gpu"))
    c.published_tflops_per_gpu = r.number("published_tflops_per_gpu");
  // The knob columns, read as the knob table reads a --plan value (an empty cell: not fixed).
  for (const KnobDef& k : knob_table()) {
    if (k.id == KnobId::gbs || r.empty(k.name)) continue;
    try {
      c.knobs[static_cast<int>(k.id)] = parse_knob_value(k, r.text(k.name), "");
    } catch (const InputError& e) {
      r.fail(k.name, e.message());
    }
  }
  for (KnobId k : {KnobId::ep, KnobId::etp})
    if (c.knob(k).value_or(1) > 1 && !m.moe.any())
      r.fail(knob(k).name, "needs a model with experts");
  if (!r.empty("model_parallel")) {
    const int mp = r.integer("model_parallel", 1);
    if (c.knob(KnobId::tp) || c.knob(KnobId::pp))
      r.fail("model_parallel", "give tp and pp, or their product model_parallel, not both");
    c.model_parallel = mp;
  }
  c.gbs = r.integer("gbs");
  c.precision = r.text("precision");
  if (!r.empty("measured_iter_time_s")) c.measured_iter_time_s = r.number("measured_iter_time_s");
  if (!r.empty("measured_tflops_per_gpu"))
    c.measured_tflops_per_gpu = r.number("measured_tflops_per_gpu");
  c.flops_formula = r.text("flops_formula");
  if (!c.measured_iter_time_s && !c.measured_tflops_per_gpu)
    r.fail("measured_iter_time_s",
           "neither measured_iter_time_s nor measured_tflops_per_gpu is given");
  // The formula converts a measured TFLOP/s to time and every prediction to TFLOP/s: a row with
  // only a time may leave it out (megatron-mfu), but not name one that does not exist.
  if ((c.measured_tflops_per_gpu || !c.flops_formula.empty()) &&
      !formula_flops(c.flops_formula, m, 1))
    r.fail("flops_formula",
           "unknown formula '" + c.flops_formula + "' (megatron-hfu, megatron-mfu)");
  if (!r.empty("framework")) {
    const std::string& fw = r.text("framework");
    c.framework = framework_named(fw);
    if (!c.framework)
      r.fail("framework", "unknown framework '" + fw + "' (expected " + framework_names() + ")");
  }
  return c;
}

}  // namespace

std::vector<RegressionCase> parse_cases(const std::string& text, const std::string& file) {
  std::istringstream in(text);
  std::string line;
  std::vector<std::string> fields;
  if (!std::getline(in, line)) throw InputError(file, 0, "", "the file is empty");
  if (!io::split_csv(line, fields))
    throw InputError(file, 1, "", "unterminated quote in the header");
  // The base columns in order; an optional column may stand anywhere among them, once.
  ColumnIndex at;
  size_t next = 0;
  for (size_t i = 0; i < fields.size(); ++i) {
    const std::string& name = fields[i];
    const bool optional = std::find(kOptionalColumns.begin(), kOptionalColumns.end(), name) !=
                              kOptionalColumns.end() ||
                          (find_knob(name) != nullptr && name != "dtype");
    if (next < kColumns.size() && name == kColumns[next]) {
      at[name] = i, ++next;
    } else if (optional && !at.count(name)) {
      at[name] = i;
    } else if (next < kColumns.size()) {
      throw InputError(file, 1, "",
                       "expected column " + std::to_string(i + 1) + " to be '" + kColumns[next] +
                           "', found '" + name + "'");
    } else {
      throw InputError(file, 1, "",
                       "unexpected extra column '" + name +
                           "' (the optional columns: model, published_tflops_per_gpu, "
                           "framework, mtp_layers, model_parallel and any plan knob of --plan "
                           "but dtype)");
    }
  }
  if (next < kColumns.size())
    throw InputError(file, 1, "",
                     "expected column " + std::to_string(fields.size() + 1) + " to be '" +
                         kColumns[next] + "', found ''");
  const size_t columns = fields.size();
  LoadedModels loaded;
  std::vector<RegressionCase> cases;
  for (int n = 2; std::getline(in, line); ++n) {
    if (line.empty() || line == "\r") continue;
    if (!io::split_csv(line, fields)) throw InputError(file, n, "", "unterminated quote");
    if (fields.size() != columns)
      throw InputError(file, n, "",
                       "expected " + std::to_string(columns) + " columns, found " +
                           std::to_string(fields.size()));
    if (cases.size() == limits::kCaseRows)
      throw InputError(file, n, "",
                       "more than " + std::to_string(limits::kCaseRows) +
                           " rows (each is a search); split the file");
    cases.push_back(read_case(Row(fields, at, file, n), n, loaded));
  }
  if (cases.empty()) throw InputError(file, 0, "", "no rows");
  return cases;
}

std::vector<RegressionCase> load_cases(const std::string& path) {
  return parse_cases(io::read_file(path), path);
}

}  // namespace planner

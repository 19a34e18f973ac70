#include <cctype>
#include <cmath>
#include <sstream>

#include "planner/error.h"
#include "planner/io/csv.h"
#include "planner/io/file.h"
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

class Row {
 public:
  Row(const std::vector<std::string>& f, const std::string& file, int line)
      : f_(f), file_(file), line_(line) {}
  const std::string& text(int col) const { return f_[col]; }
  bool empty(int col) const { return f_[col].empty(); }
  [[noreturn]] void fail(int col, const std::string& what) const { fail(kColumns[col], what); }
  [[noreturn]] void fail(const std::string& column, const std::string& what) const {
    throw InputError(file_, line_, "", "column '" + column + "': " + what);
  }
  double number(int col) const {
    try {
      size_t used = 0;
      const double v = std::stod(f_[col], &used);
      if (used == f_[col].size() && v > 0 && std::isfinite(v)) return v;
    } catch (const std::exception&) {
    }
    fail(col, "expected a positive finite number, got '" + f_[col] + "'");
  }
  int integer(int col, int min = 1) const {
    try {
      size_t used = 0;
      const int v = std::stoi(f_[col], &used);
      if (used == f_[col].size() && v >= min && v <= kMaxKnob) return v;
    } catch (const std::exception&) {
    }
    fail(col, "expected an integer from " + std::to_string(min) + " to " +
                  std::to_string(kMaxKnob) + ", got '" + f_[col] + "'");
  }

 private:
  const std::vector<std::string>& f_;
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

int col(const char* name) {
  for (size_t i = 0; i < kColumns.size(); ++i)
    if (kColumns[i] == name) return static_cast<int>(i);
  return -1;
}

/// The optional last column: the framework version the run used, whose execution stack the row
/// is predicted on (regress applies a framework's refusals only when given --framework).
constexpr const char* kFrameworkColumn = "framework";

RegressionCase read_case(const Row& r, int line, bool has_framework) {
  RegressionCase c;
  c.line = line;
  c.id = r.text(col("id"));
  if (c.id.empty()) r.fail(col("id"), "empty id");
  c.source = r.text(col("source"));
  c.cluster = r.text(col("cluster"));
  if (!is_profile_name(c.cluster))
    r.fail(col("cluster"), "expected a profile name (up to " + std::to_string(kMaxProfileName) +
                               " letters, digits, '.', '_' or '-', not starting with '.'), got '" +
                               c.cluster.substr(0, 40) + (c.cluster.size() > 40 ? "...'" : "'"));
  c.num_gpus = r.integer(col("num_gpus"));
  ModelSpec& m = c.model;
  m.name = c.id;
  m.layers = r.integer(col("layers"));
  m.hidden = r.integer(col("hidden"));
  m.heads = r.integer(col("heads"));
  m.kv_heads = r.empty(col("kv_heads")) ? m.heads : r.integer(col("kv_heads"));
  m.ffn = r.integer(col("ffn"));
  const int swiglu = r.integer(col("swiglu"), 0);
  if (swiglu > 1) r.fail(col("swiglu"), "expected 0 or 1, got '" + r.text(col("swiglu")) + "'");
  m.swiglu = swiglu == 1;
  m.vocab = r.integer(col("vocab"));
  m.seq_len = r.integer(col("seq"));
  // The knob columns, read as the knob table reads a --plan value (an empty cell: not fixed).
  for (const KnobDef& k : knob_table()) {
    const int at = col(k.name);
    if (at < 0 || k.id == KnobId::gbs || r.empty(at)) continue;
    try {
      c.knobs[static_cast<int>(k.id)] = parse_knob_value(k, r.text(at), "");
    } catch (const InputError& e) {
      r.fail(at, e.message());
    }
  }
  c.gbs = r.integer(col("gbs"));
  c.precision = r.text(col("precision"));
  if (!r.empty(col("measured_iter_time_s")))
    c.measured_iter_time_s = r.number(col("measured_iter_time_s"));
  if (!r.empty(col("measured_tflops_per_gpu")))
    c.measured_tflops_per_gpu = r.number(col("measured_tflops_per_gpu"));
  c.flops_formula = r.text(col("flops_formula"));
  if (!c.measured_iter_time_s && !c.measured_tflops_per_gpu)
    r.fail(col("measured_iter_time_s"),
           "neither measured_iter_time_s nor measured_tflops_per_gpu is given");
  // The formula converts a measured TFLOP/s to time and every prediction to TFLOP/s: a row with
  // only a time may leave it out (megatron-mfu), but not name one that does not exist.
  if ((c.measured_tflops_per_gpu || !c.flops_formula.empty()) &&
      !formula_flops(c.flops_formula, m, 1))
    r.fail(col("flops_formula"),
           "unknown formula '" + c.flops_formula + "' (megatron-hfu, megatron-mfu)");
  const std::string& fw = has_framework ? r.text(static_cast<int>(kColumns.size())) : "";
  if (!fw.empty()) {
    c.framework = framework_named(fw);
    if (!c.framework)
      r.fail(kFrameworkColumn,
             "unknown framework '" + fw + "' (expected " + framework_names() + ")");
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
  for (size_t i = 0; i < kColumns.size(); ++i)
    if (i >= fields.size() || fields[i] != kColumns[i])
      throw InputError(file, 1, "",
                       "expected column " + std::to_string(i + 1) + " to be '" + kColumns[i] +
                           "', found '" + (i < fields.size() ? fields[i] : std::string()) + "'");
  const bool has_framework =
      fields.size() == kColumns.size() + 1 && fields.back() == kFrameworkColumn;
  if (fields.size() != kColumns.size() && !has_framework)
    throw InputError(file, 1, "",
                     "unexpected extra column '" + fields[kColumns.size()] + "'" +
                         (fields.size() == kColumns.size() + 1
                              ? std::string(" (the one optional last column is 'framework')")
                              : std::string()));
  const size_t columns = fields.size();
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
    cases.push_back(read_case(Row(fields, file, n), n, has_framework));
  }
  if (cases.empty()) throw InputError(file, 0, "", "no rows");
  return cases;
}

std::vector<RegressionCase> load_cases(const std::string& path) {
  return parse_cases(io::read_file(path), path);
}

}  // namespace planner

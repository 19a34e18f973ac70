#include "fuzz_common.h"

#include <spdlog/spdlog.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <sstream>

#include "cli/app.h"
#include "planner/error.h"
#include "planner/io/cluster_io.h"
#include "planner/io/json.h"
#include "planner/io/model_io.h"
#include "planner/io/output.h"
#include "planner/report/html.h"
#include "planner/report/report.h"
#include "planner/report/svg.h"

namespace fuzz {
namespace {

int g_stdout = -1;            ///< a memory file standing in for fd 1
std::ostringstream g_stderr;  ///< what the planner writes to std::cerr
std::string g_dir;            ///< this process's temporary folder

/// Everything written to stdout since the last call.
std::string take_stdout() {
  std::cout.flush();
  std::fflush(stdout);
  std::string out;
  const off_t size = ::lseek(g_stdout, 0, SEEK_CUR);
  out.resize(static_cast<size_t>(size));
  if (size > 0 && ::pread(g_stdout, out.data(), out.size(), 0) != size) out.clear();
  if (::ftruncate(g_stdout, 0) != 0 || ::lseek(g_stdout, 0, SEEK_SET) != 0) __builtin_trap();
  return out;
}

/// Removes this process's temporary folder when the fuzzer exits normally (a crashing run keeps it:
/// fuzz/run.sh points TMPDIR inside the harness's findings folder).
void remove_temp_dir() {
  std::error_code ec;
  std::filesystem::remove_all(g_dir, ec);
}

/// Every number in `j` finite (nlohmann would print NaN and inf as null).
bool json_finite(const nlohmann::json& j) {
  if (j.is_number_float()) return std::isfinite(j.get<double>());
  if (j.is_structured())
    for (const auto& v : j)
      if (!json_finite(v)) return false;
  return true;
}

}  // namespace

std::string source(const std::string& relative) { return PLANNER_SOURCE_DIR "/" + relative; }

void init() {
  if (g_stdout >= 0) return;
  g_stdout = ::memfd_create("planner-stdout", 0);
  if (g_stdout < 0 || ::dup2(g_stdout, STDOUT_FILENO) < 0) __builtin_trap();
  std::cerr.rdbuf(g_stderr.rdbuf());  // fd 2 stays libFuzzer's and the sanitizers'
  spdlog::set_level(spdlog::level::off);
  g_dir = (std::filesystem::temp_directory_path() / ("planner-fuzz-" + std::to_string(::getpid())))
              .string();
  std::filesystem::create_directories(g_dir);
  std::atexit(remove_temp_dir);
}

std::string temp_path(const std::string& name) { return g_dir + "/" + name; }

std::string as_file(std::string_view bytes, const std::string& name) {
  const std::string path = temp_path(name);
  planner::io::write_file_atomically(path, bytes);
  return path;
}

bool has_nonfinite_word(std::string_view text) {
  for (size_t i = 0; i + 3 <= text.size(); ++i) {
    const auto lower = [&](size_t k) { return std::tolower(static_cast<unsigned char>(text[k])); };
    const bool nan = lower(i) == 'n' && lower(i + 1) == 'a' && lower(i + 2) == 'n';
    const bool inf = lower(i) == 'i' && lower(i + 1) == 'n' && lower(i + 2) == 'f';
    if (!nan && !inf) continue;
    const bool before = i > 0 && std::isalpha(static_cast<unsigned char>(text[i - 1]));
    const bool after = i + 3 < text.size() && std::isalpha(static_cast<unsigned char>(text[i + 3]));
    if (!before && !after) return true;
  }
  return false;
}

bool holds_nan_or_inf(std::string_view text) {
  std::string lower(text);
  for (char& ch : lower) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return lower.find("nan") != std::string::npos || lower.find("inf") != std::string::npos;
}

int run_cli(const std::vector<std::string>& args, std::string_view input) {
  std::vector<const char*> argv = {"planner", "-q"};
  for (const std::string& a : args) argv.push_back(a.c_str());
  g_stderr.str("");
  const int rc = planner::cli::run(static_cast<int>(argv.size()), argv.data());
  const std::string out = take_stdout();
  if (rc == 3 || rc < 0 || rc > 3) __builtin_trap();  // an internal error is a defect
  // The input's text is echoed (labels, names), whole or cut short ("...$info" -> "$inf..."): an
  // input holding "nan" or "inf" anywhere may show it as a word.
  if (rc == 0 && has_nonfinite_word(out) && !holds_nan_or_inf(input)) __builtin_trap();
  return rc;
}

void check_plan(const planner::ModelSpec& m, const planner::ClusterProfile& c,
                const planner::Plan& p) {
  using namespace planner;
  for (bool simulated : {false, true}) {
    const Estimate e = simulated ? refine(m, c, p) : estimate(m, c, p);
    if (!e.ok()) continue;
    if (!finite_result(e)) __builtin_trap();
    const RunContext ctx{"model", "cluster", &m, &c, static_cast<int>(p.gpus()), 0, p.gbs, 3e11};
    std::ostringstream out;
    print_estimate_text(out, ctx, e);
    // The text, the plot and the HTML report, without the names they echo (any word at all).
    std::string text = out.str() + estimate_plot_svg(ctx, e) + estimate_html(ctx, e, {});
    for (const std::string& raw : {m.name, c.name, c.gpu.name})
      for (const std::string& name : {raw, html_escape(raw)})  // as text, and as SVG and HTML
        for (size_t at; !name.empty() && (at = text.find(name)) != std::string::npos;)
          text.erase(at, name.size());
    if (has_nonfinite_word(text)) __builtin_trap();
    if (!json_finite(estimate_json(ctx, e))) __builtin_trap();
  }
}

void plan_model_file(std::string_view bytes, const std::string& name) {
  using namespace planner;
  static const ClusterProfile h100 = io::load_cluster(source("hw_profiles/dgx-h100-80gb.yaml"));
  ModelSpec m;
  try {
    m = io::parse_model_file(std::string(bytes), name);
  } catch (const InputError&) {
    return;  // refused with a message: what bad input should get
  }
  check_plan(m, h100, simple_plan(8));
  Plan tp = simple_plan(4);
  tp.tp = 2, tp.sp = true, tp.recompute = Recompute::selective;
  check_plan(m, h100, tp);
}

planner::Plan simple_plan(int dp) {
  planner::Plan p;
  p.dp = dp, p.gbs = dp;
  return p;
}

}  // namespace fuzz

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  fuzz::init();
  return 0;
}

#include "calibrate/context.h"

#include <fmt/chrono.h>

#include <algorithm>
#include <cctype>
#include <ctime>
#include <filesystem>
#include <sstream>

#include "planner/error.h"

#ifndef PLANNER_HW_PROFILES_DIR
#define PLANNER_HW_PROFILES_DIR "hw_profiles"
#endif

namespace planner::calibrate {

std::string nccl_version_string(int code) {
  const bool new_scheme = code >= 20900;  // NCCL_VERSION() in nccl.h switched at 2.9
  const int major = new_scheme ? code / 10000 : code / 1000;
  const int minor = new_scheme ? (code % 10000) / 100 : (code % 1000) / 100;
  const int patch = code % 100;
  return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
}

std::string cuda_version_string(int code) {
  return std::to_string(code / 1000) + "." + std::to_string((code % 1000) / 10);
}

std::string cublas_version_string(long long code) {
  return std::to_string(code / 10000) + "." + std::to_string((code % 10000) / 100) + "." +
         std::to_string(code % 100);
}

std::string parse_nvrm_driver_version(const std::string& text) {
  std::istringstream in(text.substr(0, text.find('\n')));
  std::string word;
  while (in >> word) {
    const bool digits_and_dots = std::all_of(word.begin(), word.end(), [](char c) {
      return std::isdigit(static_cast<unsigned char>(c)) || c == '.';
    });
    if (digits_and_dots && word.find('.') != std::string::npos &&
        std::isdigit(static_cast<unsigned char>(word[0])))
      return word;
  }
  return "";
}

double parse_bytes(const std::string& text, const std::string& option) {
  size_t used = 0;
  double v = 0;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  const std::string suffix = used ? text.substr(used) : "?";
  const double unit = suffix.empty()  ? 1
                      : suffix == "K" ? 1024.0
                      : suffix == "M" ? 1024.0 * 1024
                      : suffix == "G" ? 1024.0 * 1024 * 1024
                                      : 0;
  if (unit == 0 || !(v * unit >= 1))
    throw InputError("", 0, option,
                     "expected a size such as 8, 64K, 16M or 1G, got '" + text + "'");
  return v * unit;
}

std::string utc_now_iso8601() {
  return fmt::format("{:%Y-%m-%dT%H:%M:%SZ}", fmt::gmtime(std::time(nullptr)));
}

std::string shell_command_line(int argc, const char* const* argv) {
  std::string out;
  for (int i = 0; i < argc; ++i) {
    const std::string a = argv[i];
    const bool plain = !a.empty() && std::all_of(a.begin(), a.end(), [](char c) {
      return std::isalnum(static_cast<unsigned char>(c)) ||
             std::string("-_./=,:+@%").find(c) != std::string::npos;
    });
    if (i) out.push_back(' ');
    if (plain) {
      out.append(a);
      continue;
    }
    out.push_back('\'');  // single quotes; a quote inside becomes '\''
    for (char c : a) c == '\'' ? out.append("'\\''") : out.append(1, c);
    out.push_back('\'');
  }
  return out;
}

std::string rank_list(std::vector<int> ranks) {
  std::sort(ranks.begin(), ranks.end());
  ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
  std::string out;
  for (size_t i = 0; i < ranks.size();) {
    size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    if (!out.empty()) out += ',';
    out += std::to_string(ranks[i]);
    if (j > i) out.append(1, '-').append(std::to_string(ranks[j]));
    i = j + 1;
  }
  return out;
}

std::string default_base_profile(const std::string& gpu_name, double hbm_bytes) {
  const auto has = [&](const char* s) { return gpu_name.find(s) != std::string::npos; };
  if (has("H200")) return "dgx-h200.yaml";
  if (has("H100")) return "dgx-h100-80gb.yaml";
  if (has("A100"))
    return hbm_bytes > 60.0 * (1 << 30) ? "dgx-a100-80gb.yaml" : "dgx-a100-40gb.yaml";
  return "";
}

std::string resolve_base_profile(const std::string& base_option, const std::string& gpu_name,
                                 double hbm_bytes) {
  if (!base_option.empty()) return base_option;
  const std::string file = default_base_profile(gpu_name, hbm_bytes);
  if (file.empty())
    throw InputError("", 0, "--base",
                     "no profile in hw_profiles/ matches GPU '" + gpu_name +
                         "': pass --base PROFILE.yaml with its datasheet peak_tflops and "
                         "hbm_bandwidth_GBps (the fit keeps those)");
  for (const char* dir : {"hw_profiles", PLANNER_HW_PROFILES_DIR}) {
    const std::filesystem::path p = std::filesystem::path(dir) / file;
    if (std::filesystem::exists(p)) return p.string();
  }
  throw InputError("", 0, "--base",
                   "GPU '" + gpu_name + "' matches hw_profiles/" + file +
                       ", which is neither in ./hw_profiles nor in " PLANNER_HW_PROFILES_DIR
                       ": pass --base");
}

}  // namespace planner::calibrate

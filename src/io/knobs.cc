#include "planner/io/knobs.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <sstream>

#include "planner/error.h"
#include "planner/limits.h"
#include "planner/plan.h"

namespace planner::io {
namespace {

int to_int(const std::string& s, const std::string& option) {
  int v = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || ptr != s.data() + s.size() || s.empty())
    throw InputError("", 0, option, "expected an integer, a range a-b or a list, got '" + s + "'");
  return v;
}

std::vector<std::string> split(const std::string& text, char sep) {
  std::vector<std::string> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, sep)) out.push_back(item);
  return out;
}

}  // namespace

std::vector<int> parse_int_set(const std::string& text, const std::string& option) {
  std::vector<std::pair<int, int>> ranges;
  long long count = 0;  // values before duplicates are dropped, checked before any is stored
  for (const std::string& part : split(text, ',')) {
    const auto dash = part.find('-', 1);
    const int lo = to_int(part.substr(0, dash), option);
    const int hi = dash == std::string::npos ? lo : to_int(part.substr(dash + 1), option);
    if (lo < 0 || hi < lo)
      throw InputError("", 0, option,
                       "expected non-negative values and ranges lo-hi, got '" + part + "'");
    if (hi > kMaxKnob)
      throw InputError("", 0, option, "values must be at most " + std::to_string(kMaxKnob));
    count += 1LL + hi - lo;
    if (count > limits::kListValues)
      throw InputError("", 0, option,
                       "the list expands to more than " + std::to_string(limits::kListValues) +
                           " values; give fewer or narrower ranges");
    ranges.emplace_back(lo, hi);
  }
  std::vector<int> values;
  values.reserve(static_cast<size_t>(count));
  for (const auto& [lo, hi] : ranges)
    for (int v = lo; v <= hi; ++v) values.push_back(v);
  if (values.empty()) throw InputError("", 0, option, "expected at least one value");
  std::sort(values.begin(), values.end());
  values.erase(std::unique(values.begin(), values.end()), values.end());
  return values;
}

std::vector<std::string> parse_word_set(const std::string& text, const std::string& option,
                                        const std::vector<std::string>& allowed) {
  std::vector<std::string> out;
  for (const std::string& w : split(text, ',')) {
    if (std::find(allowed.begin(), allowed.end(), w) == allowed.end()) {
      std::string list;
      for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
      throw InputError("", 0, option, "unknown value '" + w + "' (expected " + list + ")");
    }
    if (std::find(out.begin(), out.end(), w) == out.end()) out.push_back(w);
  }
  if (out.empty()) throw InputError("", 0, option, "expected at least one value");
  return out;
}

double parse_count(const std::string& text, const std::string& option) {
  double scale = 1;
  std::string num = text;
  if (!num.empty()) {
    switch (num.back()) {
      case 'K':
      case 'k':
        scale = 1e3;
        break;
      case 'M':
        scale = 1e6;
        break;
      case 'B':
      case 'G':
        scale = 1e9;
        break;
      case 'T':
        scale = 1e12;
        break;
      default:
        break;
    }
    if (scale != 1) num.pop_back();
  }
  try {
    size_t used = 0;
    const double v = std::stod(num, &used) * scale;
    if (used != num.size() || !(v > 0) || !std::isfinite(v)) throw std::invalid_argument(text);
    return v;
  } catch (const std::exception&) {
    throw InputError("", 0, option,
                     "expected a positive count such as 300B or 1e12, got '" + text + "'");
  }
}

}  // namespace planner::io

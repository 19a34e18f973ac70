#include "planner/error.h"

#include <algorithm>

namespace planner {
namespace {

std::string format(const std::string& file, int line, const std::string& key,
                   const std::string& what) {
  std::string out;
  out.append(file);
  if (line > 0) out.append(":").append(std::to_string(line));
  if (!key.empty()) {
    if (!out.empty()) out.append(": ");
    const bool option = file.empty() && key[0] == '-';  // a command-line option, not a file key
    out.append(option ? "option " : "key '").append(key).append(option ? "" : "'");
  }
  if (!out.empty()) out.append(": ");
  out.append(what);
  return out;
}

int edit_distance(const std::string& a, const std::string& b) {
  std::vector<int> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = static_cast<int>(j);
  for (size_t i = 1; i <= a.size(); ++i) {
    int diag = row[0];
    row[0] = static_cast<int>(i);
    for (size_t j = 1; j <= b.size(); ++j) {
      int up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

}  // namespace

InputError::InputError(std::string file, int line, std::string key, const std::string& what)
    : std::runtime_error(format(file, line, key, what)),
      file_(std::move(file)),
      line_(line),
      key_(std::move(key)),
      message_(what) {}

std::string nearest_word(const std::string& word, const std::vector<std::string>& candidates) {
  std::string best;
  int best_d = 1 << 30;
  for (const auto& c : candidates) {
    int d = edit_distance(word, c);
    if (d < best_d) best_d = d, best = c;
  }
  // Close enough to be a typo: at most a third of the word's letters differ.
  int limit = std::max<int>(2, static_cast<int>(word.size()) / 3);
  return best_d <= limit ? best : std::string();
}

std::vector<std::string> nearest_words(const std::string& word,
                                       const std::vector<std::string>& candidates, size_t n) {
  std::vector<std::pair<int, std::string>> ranked;
  for (const auto& c : candidates) ranked.emplace_back(edit_distance(word, c), c);
  std::stable_sort(ranked.begin(), ranked.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<std::string> out;
  for (size_t i = 0; i < ranked.size() && i < n; ++i) out.push_back(ranked[i].second);
  return out;
}

}  // namespace planner

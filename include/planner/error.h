#pragma once
#include <stdexcept>
#include <string>
#include <vector>

namespace planner {

/// Bad user input. Carries where it was found; only main() turns it into a message and exit 2.
class InputError : public std::runtime_error {
 public:
  InputError(std::string file, int line, std::string key, const std::string& what);
  const std::string& file() const { return file_; }
  int line() const { return line_; }
  const std::string& key() const { return key_; }
  /// What is wrong, without the file, line and key.
  const std::string& message() const { return message_; }

 private:
  std::string file_;
  int line_;
  std::string key_;
  std::string message_;
};

/// The candidate closest to `word` by edit distance, or "" when none is reasonably close.
std::string nearest_word(const std::string& word, const std::vector<std::string>& candidates);

/// The `n` candidates closest to `word` by edit distance, closest first (ties in the candidates'
/// order), however far: for "the nearest names are ..." where nothing matches.
std::vector<std::string> nearest_words(const std::string& word,
                                       const std::vector<std::string>& candidates, size_t n);

}  // namespace planner

#pragma once
#include <yaml-cpp/yaml.h>

#include <string>
#include <vector>

namespace planner::io {

/// Reads a YAML file; a missing file or a syntax error throws InputError with file and line.
YAML::Node load_yaml_file(const std::string& path);
/// Parses YAML text; `file` names it in errors. An empty document throws too.
YAML::Node parse_yaml_text(const std::string& text, const std::string& file);

/// Typed access that names file, line and key on every failure.
class YamlReader {
 public:
  YamlReader(YAML::Node node, std::string file, std::string prefix = "");
  /// Throws when a key is not in `allowed`, suggesting the nearest one.
  void check_keys(const std::vector<std::string>& allowed) const;
  bool has(const std::string& key) const;
  int get_int(const std::string& key) const;
  double get_double(const std::string& key) const;
  bool get_bool(const std::string& key) const;
  std::string get_string(const std::string& key) const;
  YamlReader child(const std::string& key) const;
  YAML::Node node(const std::string& key) const;
  int line_of(const std::string& key) const;
  int line() const;
  const std::string& file() const { return file_; }
  std::string path(const std::string& key) const;  ///< "gpu.peak_tflops.bf16"
  [[noreturn]] void fail(const std::string& key, const std::string& what) const;

 private:
  YAML::Node node_;
  std::string file_;
  std::string prefix_;
};

}  // namespace planner::io

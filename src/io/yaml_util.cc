#include "planner/io/yaml_util.h"

#include <yaml-cpp/depthguard.h>

#include <algorithm>
#include <cmath>

#include "planner/error.h"
#include "planner/io/file.h"

namespace planner::io {

YAML::Node load_yaml_file(const std::string& path) {
  return parse_yaml_text(read_file(path), path);
}

YAML::Node parse_yaml_text(const std::string& text, const std::string& file) {
  YAML::Node doc;
  try {
    doc = YAML::Load(text);
  } catch (const YAML::DeepRecursion& e) {
    throw InputError(file, e.mark.line + 1, "",
                     "YAML nested too deeply (yaml-cpp stops at a depth of " +
                         std::to_string(e.depth()) + "; the planner's files need 4 levels)");
  } catch (const YAML::Exception& e) {
    throw InputError(file, e.mark.line + 1, "", "YAML syntax error: " + e.msg);
  }
  if (!doc || doc.IsNull()) throw InputError(file, 0, "", "the file is empty");
  return doc;
}

YamlReader::YamlReader(YAML::Node node, std::string file, std::string prefix)
    : node_(std::move(node)), file_(std::move(file)), prefix_(std::move(prefix)) {
  if (!node_.IsMap())
    throw InputError(
        file_, line(), prefix_,
        prefix_.empty() ? "expected a mapping of keys" : "expected a mapping of keys here");
}

std::string YamlReader::path(const std::string& key) const {
  return prefix_.empty() ? key : prefix_ + "." + key;
}

int YamlReader::line() const { return node_.Mark().line >= 0 ? node_.Mark().line + 1 : 0; }

int YamlReader::line_of(const std::string& key) const {
  for (auto it = node_.begin(); it != node_.end(); ++it)
    if (it->first.IsScalar() && it->first.Scalar() == key) return it->first.Mark().line + 1;
  return line();
}

void YamlReader::fail(const std::string& key, const std::string& what) const {
  throw InputError(file_, line_of(key), path(key), what);
}

void YamlReader::check_keys(const std::vector<std::string>& allowed) const {
  std::vector<std::string> seen;
  for (auto it = node_.begin(); it != node_.end(); ++it) {
    if (!it->first.IsScalar())
      throw InputError(file_, it->first.Mark().line + 1, prefix_, "keys must be plain names");
    const std::string key = it->first.Scalar();
    if (std::find(seen.begin(), seen.end(), key) != seen.end())
      throw InputError(file_, it->first.Mark().line + 1, path(key), "duplicate key");
    seen.push_back(key);
    bool ok = false;
    for (const auto& a : allowed) ok = ok || a == key;
    if (ok) continue;
    const std::string near = nearest_word(key, allowed);
    throw InputError(
        file_, it->first.Mark().line + 1, path(key),
        "unknown key" + (near.empty() ? std::string() : ", did you mean '" + near + "'?"));
  }
}

bool YamlReader::has(const std::string& key) const { return bool(node_[key]); }

YAML::Node YamlReader::node(const std::string& key) const {
  YAML::Node n = node_[key];
  if (!n) throw InputError(file_, line(), path(key), "missing required key");
  return n;
}

namespace {

template <typename T>
T convert(const YamlReader& r, const YAML::Node& n, const std::string& key, const char* type) {
  if (!n.IsScalar()) r.fail(key, std::string("expected ") + type);
  try {
    return n.as<T>();
  } catch (const YAML::Exception&) {
    r.fail(key, std::string("expected ") + type + ", got '" + n.Scalar() + "'");
  }
}

}  // namespace

int YamlReader::get_int(const std::string& key) const {
  return convert<int>(*this, node(key), key, "an integer");
}
double YamlReader::get_double(const std::string& key) const {
  const double v = convert<double>(*this, node(key), key, "a number");
  if (!std::isfinite(v)) fail(key, "expected a finite number");
  return v;
}
bool YamlReader::get_bool(const std::string& key) const {
  return convert<bool>(*this, node(key), key, "true or false");
}
std::string YamlReader::get_string(const std::string& key) const {
  return convert<std::string>(*this, node(key), key, "a string");
}
YamlReader YamlReader::child(const std::string& key) const {
  YAML::Node n = node(key);
  if (!n.IsMap()) fail(key, "expected a mapping of keys");
  return YamlReader(n, file_, path(key));
}

}  // namespace planner::io

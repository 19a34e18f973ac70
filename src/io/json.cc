#include "planner/io/json.h"

#include <algorithm>

#include "planner/error.h"

namespace planner::io {
namespace {

using nlohmann::json;

/// Checks the text without building it: records where parsing stopped, the last key seen and
/// why (nlohmann reports a number overflow through parse_error too, with its position).
class Checker : public nlohmann::json_sax<json> {
 public:
  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool string(string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }
  bool start_object(std::size_t) override { return deeper(); }
  bool key(string_t& k) override {
    key_ = k;
    return true;
  }
  bool end_object() override { return --depth_, true; }
  bool start_array(std::size_t) override { return deeper(); }
  bool end_array() override { return --depth_, true; }
  bool parse_error(std::size_t position, const std::string&,
                   const nlohmann::detail::exception& e) override {
    position_ = position;
    overflow_ = e.id == 406;
    const std::string what = e.what();
    const size_t colon =
        what.rfind(": ");  // "[json.exception.parse_error.101] parse error at ...: "
    message_ = colon == std::string::npos || overflow_ ? what.substr(what.find(']') + 2)
                                                       : what.substr(colon + 2);
    return false;
  }

  bool too_deep = false;
  std::size_t position_ = 0;
  bool overflow_ = false;
  std::string message_, key_;

 private:
  bool deeper() {
    if (++depth_ <= kJsonMaxDepth) return true;
    too_deep = true;
    return false;
  }
  int depth_ = 0;
};

int line_at(const std::string& text, std::size_t position) {
  const auto end = text.begin() + static_cast<long>(std::min(position, text.size()));
  return 1 + static_cast<int>(std::count(text.begin(), end, '\n'));
}

/// The line where nesting first goes deeper than kJsonMaxDepth (brackets inside strings skipped).
int line_too_deep(const std::string& text) {
  int depth = 0, line = 1;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char ch = text[i];
    if (ch == '\n') ++line;
    if (in_string) {
      if (ch == '\\')
        ++i;
      else if (ch == '"')
        in_string = false;
    } else if (ch == '"') {
      in_string = true;
    } else if (ch == '[' || ch == '{') {
      if (++depth > kJsonMaxDepth) return line;
    } else if (ch == ']' || ch == '}') {
      --depth;
    }
  }
  return 0;
}

}  // namespace

std::string json_excerpt(const json& j) {
  const std::string text = dump_json(j);
  return text.size() <= 60 ? text : text.substr(0, 57) + "...";
}

bool is_json(const std::string& text) {
  Checker check;
  return json::sax_parse(text, &check) || check.too_deep || check.overflow_;
}

json parse_json(const std::string& text, const std::string& file) {
  Checker check;
  if (!json::sax_parse(text, &check)) {
    if (check.too_deep)
      throw InputError(
          file, line_too_deep(text), "",
          "invalid JSON: nested deeper than " + std::to_string(kJsonMaxDepth) + " levels");
    const int line = line_at(text, check.position_);
    if (check.overflow_)
      throw InputError(file, line, check.key_, "number out of range (" + check.message_ + ")");
    throw InputError(file, line, "", "invalid JSON: " + check.message_);
  }
  return json::parse(text);  // cannot fail now
}

}  // namespace planner::io

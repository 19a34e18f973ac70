#include "planner/io/csv.h"

namespace planner::io {

bool split_csv(const std::string& line, std::vector<std::string>& out) {
  out.clear();
  std::string f;
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char ch = line[i];
    if (quoted) {
      if (ch == '"' && i + 1 < line.size() && line[i + 1] == '"')
        f += '"', ++i;
      else if (ch == '"')
        quoted = false;
      else
        f += ch;
    } else if (ch == '"') {
      quoted = true;
    } else if (ch == ',') {
      out.push_back(f), f.clear();
    } else if (ch != '\r') {
      f += ch;
    }
  }
  out.push_back(f);
  return !quoted;
}

}  // namespace planner::io

#include "planner/io/bands_io.h"

#include <cmath>
#include <sstream>

#include "planner/error.h"
#include "planner/format.h"
#include "planner/io/csv.h"
#include "planner/io/file.h"

namespace planner::io {
namespace {
constexpr const char* kHeader = "gpu,precision,rows,sources,err_lo_pct,err_hi_pct";
}

std::string bands_csv(const AccuracyBands& bands) {
  std::string out = std::string(kHeader) + "\n";
  for (const AccuracyBand& b : bands)
    out += fmt("{},{},{},{},{:.3f},{:.3f}\n", b.gpu, b.precision, b.rows, b.sources, b.err_lo_pct,
               b.err_hi_pct);
  return out;
}

AccuracyBands load_bands(const std::string& path) {
  std::istringstream in(read_file(path));
  std::string line;
  int n = 0;
  AccuracyBands out;
  while (std::getline(in, line)) {
    ++n;
    if (n == 1) {
      if (line != kHeader) throw InputError(path, 1, "", std::string("expected '") + kHeader + "'");
      continue;
    }
    if (line.empty()) continue;
    std::vector<std::string> cells;
    AccuracyBand b;
    bool ok = split_csv(line, cells) && cells.size() == 6;
    try {
      if (ok) {
        b.gpu = cells[0], b.precision = cells[1];
        size_t used = 0;
        b.rows = std::stoi(cells[2], &used);
        ok = used == cells[2].size() && b.rows >= 1;
        b.sources = std::stoi(cells[3], &used);
        ok = ok && used == cells[3].size() && b.sources >= 1 && b.sources <= b.rows;
        b.err_lo_pct = std::stod(cells[4]), b.err_hi_pct = std::stod(cells[5]);
        ok = ok && std::isfinite(b.err_lo_pct) && std::isfinite(b.err_hi_pct) &&
             b.err_lo_pct <= b.err_hi_pct && b.err_lo_pct > -100 && b.err_hi_pct < 1e4;
      }
    } catch (const std::exception&) {
      ok = false;
    }
    if (!ok)
      throw InputError(
          path, n, "",
          "expected gpu,precision,rows,sources,err_lo_pct,err_hi_pct with 1 <= sources <= "
          "rows and -100 < err_lo_pct <= err_hi_pct");
    out.push_back(b);
  }
  return out;
}

}  // namespace planner::io

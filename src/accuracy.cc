#include "planner/accuracy.h"

#include <algorithm>
#include <cmath>

#include "planner/format.h"

namespace planner {

const AccuracyBand* band_for(const AccuracyBands& bands, const std::string& gpu,
                             const std::string& precision) {
  // MXFP8 runs the FP8 model with block scales: no published run has it, so it takes FP8's rows.
  const std::string kin = precision == "mxfp8" ? "fp8" : precision;
  for (const auto& [g, p] : {std::pair<std::string, std::string>{gpu, precision},
                             {gpu, kin},
                             {"*", precision},
                             {"*", kin},
                             {"*", "*"}})
    for (const AccuracyBand& b : bands)
      if (b.gpu == g && b.precision == p && b.rows >= kMinBandRows && b.sources >= kMinBandSources)
        return &b;
  return nullptr;
}

std::pair<double, double> band_times(double t, const AccuracyBand& b) {
  return {t / (1 + b.err_hi_pct / 100), t / (1 + b.err_lo_pct / 100)};
}

std::string band_text(const AccuracyBand& b) {
  const auto [lo, hi] = band_times(1.0, b);
  auto pct = [](double x) {
    const double v = std::round(100 * (x - 1));
    return fmt("{}{:.0f}%", v >= 0 ? "+" : "-", std::fabs(v));
  };
  return pct(lo) + "/" + pct(hi);
}

double quantile(std::vector<double> values, double p) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const double at = p * double(values.size() - 1);
  const size_t i = size_t(std::floor(at));
  if (i + 1 >= values.size()) return values.back();
  return values[i] + (at - double(i)) * (values[i + 1] - values[i]);
}

}  // namespace planner

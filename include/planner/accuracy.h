#pragma once
/// Error bars: how far measured times have fallen from the predictions for comparable published
/// runs, cross-validated (regress --cv source). A band is the 10th and 90th percentile of the
/// signed errors 100 (predicted - measured) / measured of one class of rows: a GPU and a
/// precision, else the precision over every GPU, else every row. A class stands only with rows
/// from at least kMinBandSources sources: one source's rows share its systematic error (the
/// Megatron-Bridge FP8 rows are 16-28% off together where NeMo's are within 9%), so they measure
/// that source, not the spread a run from elsewhere will show.
#include <string>
#include <utility>
#include <vector>

namespace planner {

struct AccuracyBand {
  std::string gpu = "*", precision = "*";  ///< the class; "*": any
  int rows = 0;
  int sources = 0;  ///< distinct sources among the rows (a regression row's source to its comma)
  double err_lo_pct = 0, err_hi_pct = 0;  ///< 10th and 90th percentile of the signed errors
};
using AccuracyBands = std::vector<AccuracyBand>;

/// Rows, and distinct sources, a class needs before its band stands for it (else the next wider
/// class).
inline constexpr int kMinBandRows = 5;
inline constexpr int kMinBandSources = 2;
/// The share of comparable runs a band covers: between the 10th and 90th percentile.
inline constexpr double kBandLowQuantile = 0.10, kBandHighQuantile = 0.90;

/// The narrowest class with at least kMinBandRows rows from kMinBandSources sources; nullptr when
/// there is none.
const AccuracyBand* band_for(const AccuracyBands& bands, const std::string& gpu,
                             const std::string& precision);

/// The true time's range for a prediction `t`: t / (1 + err_hi) to t / (1 + err_lo).
std::pair<double, double> band_times(double t, const AccuracyBand& b);

/// "-7%/+5%": the range relative to the prediction.
std::string band_text(const AccuracyBand& b);

/// The p-quantile (0..1) of `values` by linear interpolation between order statistics.
double quantile(std::vector<double> values, double p);

}  // namespace planner

#pragma once
/// The committed accuracy bands (configs/accuracy/bands.csv), written by `planner regress --cv
/// source --write-bands` and read by suggest and estimate.
#include <string>

#include "planner/accuracy.h"

namespace planner::io {

/// "gpu,precision,rows,sources,err_lo_pct,err_hi_pct" then one line per class.
std::string bands_csv(const AccuracyBands& bands);
/// Reads it; a malformed file throws InputError naming the line.
AccuracyBands load_bands(const std::string& path);

}  // namespace planner::io

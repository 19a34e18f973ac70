#pragma once
/// SI units inside the planner: seconds, bytes, FLOP, bytes/s. Convert only when loading and
/// printing. Decimal (kGB) and binary (kGiB) prefixes are both here; never mix them.

namespace planner {

inline constexpr double kKB = 1e3;
inline constexpr double kMB = 1e6;
inline constexpr double kGB = 1e9;
inline constexpr double kKiB = 1024.0;
inline constexpr double kMiB = 1024.0 * 1024.0;
inline constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
inline constexpr double kGbit = 1e9 / 8;  ///< a gigabit per second in bytes per second
inline constexpr double kTera = 1e12;
inline constexpr double kUs = 1e-6;
inline constexpr double kMs = 1e-3;
inline constexpr double kSecondsPerHour = 3600.0;
inline constexpr double kSecondsPerDay = 86400.0;

}  // namespace planner

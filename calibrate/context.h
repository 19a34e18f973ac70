#pragma once
/// Small pure helpers for the run's context lines and provenance (no CUDA): version strings,
/// dates, command lines, rank lists, and the base profile that matches a GPU.
#include <string>
#include <vector>

namespace planner::calibrate {

/// NCCL_VERSION_CODE / ncclGetVersion: 2.9 and later code major*10000 + minor*100 + patch
/// (22803 -> "2.28.3"), older ones major*1000 + minor*100 + patch (2708 -> "2.7.8").
std::string nccl_version_string(int code);
/// cudaRuntimeGetVersion / cudaDriverGetVersion: major*1000 + minor*10 (13000 -> "13.0").
std::string cuda_version_string(int code);
/// cublasLtGetVersion: major*10000 + minor*100 + patch (130002 -> "13.0.2").
std::string cublas_version_string(long long code);
/// The driver version in /proc/driver/nvidia/version ("NVRM version: NVIDIA UNIX x86_64 Kernel
/// Module  580.159  ..."): the first dotted number; "" when there is none.
std::string parse_nvrm_driver_version(const std::string& text);

/// A byte count as nccl-tests takes it: "8", "64K", "16M", "1G" (binary multiples). Throws
/// InputError naming `option` for anything else or a value below 1.
double parse_bytes(const std::string& text, const std::string& option);

/// Now, "2025-11-30T12:34:56Z".
std::string utc_now_iso8601();
/// The argument line as a shell would take it back (arguments with special characters quoted).
std::string shell_command_line(int argc, const char* const* argv);
/// Ranks as ranges: {0,1,2,3,8} -> "0-3,8".
std::string rank_list(std::vector<int> ranks);

/// The hw_profiles/ file whose datasheet peaks match a GPU name ("NVIDIA H200" ->
/// "dgx-h200.yaml"); "" when none does. A100s above 60 GiB get the 80 GB profile.
std::string default_base_profile(const std::string& gpu_name, double hbm_bytes);

/// --base when given; else default_base_profile() looked up in ./hw_profiles and in the source
/// tree's hw_profiles (PLANNER_HW_PROFILES_DIR). Throws InputError (option --base) when no
/// profile is known for the GPU.
std::string resolve_base_profile(const std::string& base_option, const std::string& gpu_name,
                                 double hbm_bytes);

}  // namespace planner::calibrate

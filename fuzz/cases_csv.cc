// Regression cases (the format of shared/data/published-runs.csv), through `planner regress`:
// each row's knobs searched on the shipped profiles and compared with its measurement.
#include "fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string cases = fuzz::as_file({reinterpret_cast<const char*>(data), size}, "cases.csv");
  fuzz::run_cli({"regress", "--cases", cases, "--profiles", fuzz::source("hw_profiles"),
                 "--allow-unsupported"},
                {reinterpret_cast<const char*>(data), size});
  return 0;
}

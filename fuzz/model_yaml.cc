// Model YAML (configs/models/*.yaml): io::parse_model_file, then every accepted model planned.
#include "fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::plan_model_file({reinterpret_cast<const char*>(data), size}, "model.yaml");
  return 0;
}

// Hugging Face config.json: io::parse_model_file (JSON by its name), then the model planned.
#include "fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::plan_model_file({reinterpret_cast<const char*>(data), size}, "config.json");
  return 0;
}

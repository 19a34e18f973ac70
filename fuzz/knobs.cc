// Knob ranges and --gpus lists, through `planner suggest`: the input's lines are, in order, the
// values of --gpus, --tp, --pp, --cp, --vpp, --mbs, --zero, --sp, --recompute, --schedule and
// --global-batch, then (given only when the line is there and not empty) the execution knobs
// --overlap-grad-reduce, --overlap-param-gather, --tp-comm-overlap and --framework, then the
// expert knobs --ep, --etp, --ep-comm-overlap, --dispatcher and --capacity-factor (an input that
// gives any of them plans gpt-oss-20b, a mixture of 32 experts, in place of the dense model).
// A missing line takes a narrow value (so that an execution stays short and the
// fuzzer's time goes to the lines it changes); an empty line leaves the option out (its default
// range, as a user who does not give it gets). Half the inputs also draw --plot and --report.
#include <iterator>
#include <sstream>

#include "fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  if (text.find('\0') != std::string::npos) return 0;
  static const char* const kOptions[] = {"--gpus",      "--tp",       "--pp",          "--cp",
                                         "--vpp",       "--mbs",      "--zero",        "--sp",
                                         "--recompute", "--schedule", "--global-batch"};
  static const char* const kNarrow[] = {"64", "1-2", "1-2",       "1",    "1",  "1",
                                        "1",  "1",   "selective", "1f1b", "512"};
  std::vector<std::string> args = {"suggest",
                                   "--model",
                                   fuzz::source("configs/models/megatron-1.7b.yaml"),
                                   "--cluster",
                                   fuzz::source("hw_profiles/dgx-a100-80gb.yaml"),
                                   "--top",
                                   "3"};
  const size_t model_at = 2;
  std::istringstream lines(text);
  std::string line;
  for (size_t i = 0; i < std::size(kOptions); ++i) {
    const bool given = static_cast<bool>(std::getline(lines, line));
    if (given && line.empty() && i + 1 < std::size(kOptions)) continue;  // the option's default
    args.insert(args.end(), {kOptions[i], given && !line.empty() ? line : kNarrow[i]});
  }
  for (const char* extra :
       {"--overlap-grad-reduce", "--overlap-param-gather", "--tp-comm-overlap", "--framework"})
    if (std::getline(lines, line) && !line.empty()) args.insert(args.end(), {extra, line});
  for (const char* expert :
       {"--ep", "--etp", "--ep-comm-overlap", "--dispatcher", "--capacity-factor"})
    if (std::getline(lines, line) && !line.empty()) {
      args.insert(args.end(), {expert, line});
      args[model_at] = fuzz::source("configs/models/gpt-oss-20b.json");
    }
  if (size % 2)  // half the inputs also draw the plot and write the report
    args.insert(args.end(), {"--plot", fuzz::temp_path("plot.svg"), "--report",
                             fuzz::temp_path("report.html")});
  fuzz::run_cli(args, text);
  return 0;
}

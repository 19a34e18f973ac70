// The I/O around the pure emitters: reading and hashing the inputs, and writing the files
// atomically (all contents are built first; each file goes to NAME.tmp and is renamed).
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <system_error>

#include "planner/emit.h"
#include "planner/error.h"
#include "planner/io/file.h"
#include "planner/units.h"

namespace fs = std::filesystem;

namespace planner::emit {
namespace {

void write_one(const fs::path& path, const EmittedFile& f) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(f.contents.data(), static_cast<std::streamsize>(f.contents.size()));
  out.close();
  if (!out) throw InputError(path.string(), 0, "", "cannot write file");
  if (f.executable) {
    std::error_code ec;
    fs::permissions(path, fs::perms::owner_exec | fs::perms::group_exec | fs::perms::others_exec,
                    fs::perm_options::add, ec);
    if (ec) throw InputError(path.string(), 0, "", "cannot make executable: " + ec.message());
  }
}

}  // namespace

std::string file_sha256(const std::string& path) { return sha256_hex(io::read_file(path)); }

std::string adapt_stack(Framework f, SoftwareStack& s) {
  if (f != Framework::deepspeed) return "";
  // Megatron-DeepSpeed has no --tp-comm-overlap, and DeepSpeed's ZeRO-1/2 gather the updated
  // parameters inside the optimizer step, not beside the next forward (ZeRO-3 prefetches anyway).
  std::string off;
  for (auto [flag, name] : {std::pair{&s.overlap_tp_comm, "overlap_tp_comm"},
                            {&s.overlap_param_gather, "overlap_param_gather"}})
    if (*flag) *flag = false, off += std::string(off.empty() ? "" : " and ") + name;
  if (off.empty()) return "";
  return "DeepSpeed runs without the profile's software." + off + ": predicted without " +
         (off.find(" and ") == std::string::npos ? "it" : "them");
}

EmitRequest prepare(Framework f, const std::string& model_file, const ModelSpec& model,
                    const std::string& cluster_file, const ClusterProfile& cluster,
                    const Plan& plan, const EstimateOptions& o) {
  // Names and paths land in shell comments and directives: one line each, nothing to execute.
  for (const auto& [text, option] : {std::pair{&model_file, "--model"}, {&cluster_file, "--cluster"}})
    for (char ch : *text)
      if (static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f)
        throw InputError("", 0, option, "the path must not contain control characters");
  EmitRequest r;
  r.model_file = model_file;
  r.cluster_file = cluster_file;
  r.model = model;
  r.cluster = cluster;
  r.model_sha256 = file_sha256(model_file);
  r.cluster_sha256 = file_sha256(cluster_file);
  r.plan = plan;
  r.stack_note = adapt_stack(f, r.cluster.software);
  // The frameworks split the layers evenly: simulate that split, as the run will execute it.
  r.estimate = simulate_plan(r.model, r.cluster, plan, o);
  if (!r.estimate.ok()) throw InputError("", 0, "--plan", rejection_message(r.estimate));
  return r;
}

std::vector<std::string> write_files(const std::string& dir,
                                     const std::vector<EmittedFile>& files) {
  const fs::path root(dir);
  std::error_code ec;
  const bool existed = fs::exists(root, ec);
  if (!existed && !fs::create_directories(root, ec))
    throw InputError("", 0, "--out", "cannot create directory " + dir + ": " + ec.message());
  if (!fs::is_directory(root, ec)) throw InputError("", 0, "--out", dir + " is not a directory");
  std::vector<fs::path> temps;
  auto clean_up = [&] {
    for (const fs::path& t : temps) fs::remove(t, ec);
    if (!existed) fs::remove(root, ec);  // removes it only if still empty
  };
  try {
    for (const EmittedFile& f : files) {
      temps.push_back(root / (f.name + ".tmp"));
      write_one(temps.back(), f);
    }
  } catch (...) {
    clean_up();
    throw;
  }
  std::vector<std::string> written;
  for (size_t i = 0; i < files.size(); ++i) {
    const fs::path target = root / files[i].name;
    fs::rename(temps[i], target, ec);
    if (ec) {
      const std::string why = ec.message();
      temps.erase(temps.begin(), temps.begin() + static_cast<long>(i));
      clean_up();
      throw InputError(target.string(), 0, "", "cannot rename into place: " + why);
    }
    written.push_back(target.string());
  }
  return written;
}

}  // namespace planner::emit

// `planner profile init`: a cluster profile from datasheet facts (io/profile_init.h).
#include <filesystem>
#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "planner/error.h"
#include "planner/io/cluster_io.h"
#include "planner/io/output.h"
#include "planner/io/profile_init.h"
#include "planner/limits.h"

namespace planner::cli {
namespace {

struct InitArgs {
  io::ProfileFacts facts;
  std::string like, out;
};

/// The base: --like, else the shipped profile nearest the facts.
std::pair<std::string, std::string> choose_base(const InitArgs& a) {
  if (!a.like.empty()) {
    const std::string file = resolve_input(a.like, "hw_profiles", "--like");
    return {file, std::filesystem::path(file).stem().string()};
  }
  std::vector<std::string> files, labels;
  std::vector<ClusterProfile> candidates;
  for (const std::string& name : shipped_names("hw_profiles")) {
    files.push_back(resolve_input(name, "hw_profiles", "--like"));
    labels.push_back(name);
    candidates.push_back(io::load_cluster(files.back()));
  }
  const std::optional<size_t> best = io::nearest_profile(a.facts, candidates);
  if (!best)
    throw InputError("", 0, "--like",
                     "give a base profile with --like, or a GPU fact to find the nearest known "
                     "GPU by (--bf16-tflops, --hbm-GBps, --sms, --nvlink-GBps, ...)");
  std::cerr << "planner: base profile " << labels[*best] << " (the known GPU nearest the facts; "
            << "choose another with --like)\n";
  return {files[*best], labels[*best]};
}

int run_init(const InitArgs& a) {
  const auto [base_file, base_label] = choose_base(a);
  const std::string out_label = a.out.empty() ? "profile init output" : a.out;
  const std::string text = io::init_profile(a.facts, base_file, base_label, out_label);
  if (a.out.empty()) {
    std::cout << text;
  } else {
    io::write_file_atomically(a.out, text);
    std::cout << a.out << "\n";
  }
  return 0;
}

}  // namespace

void add_profile(CLI::App& app, int* rc) {
  CLI::App* p = app.add_subcommand("profile", "cluster profiles: write one from datasheet facts");
  p->require_subcommand(1);
  auto a = std::make_shared<InitArgs>();
  io::ProfileFacts& f = a->facts;
  CLI::App* s = p->add_subcommand(
      "init",
      "write a complete, loadable profile from datasheet facts; every other constant is the "
      "nearest known GPU's (or --like's), marked so in provenance");
  s->add_option("--name", f.name, "the profile's name")->required();
  s->add_option("--like", a->like,
                "base profile (hw_profiles/ name or file) whose constants are carried; default: "
                "the shipped one nearest the facts");
  s->add_option("--source", f.source, "the datasheet the facts come from (written in provenance)");
  s->add_option("--gpu-name", f.gpu_name, "the GPU's name (default: the profile's)");
  const auto peak = number_in(limits::kPeakTflops.lo, limits::kPeakTflops.hi);
  for (size_t i = 0; i < io::kPeakNames.size(); ++i)
    s->add_option(std::string("--") + io::kPeakNames[i] + "-tflops", f.peak_tflops[i],
                  std::string("dense ") + io::kPeakNames[i] +
                      " tensor TFLOP/s per GPU (precisions not given scale with the base's)")
        ->check(peak);
  s->add_option("--sms", f.sms, "streaming multiprocessors per GPU")
      ->check(integer_in(1, limits::kSms));
  s->add_option("--hbm-GiB", f.hbm_GiB, "HBM per GPU, GiB (nvidia-smi's MiB / 1024)")
      ->check(number_in(limits::kHbmGiB.lo, limits::kHbmGiB.hi));
  s->add_option("--hbm-GBps", f.hbm_GBps, "HBM bandwidth per GPU, GB/s (datasheet)")
      ->check(number_in(limits::kHbmGBps.lo, limits::kHbmGBps.hi));
  s->add_option("--gpus-per-node", f.gpus_per_node, "GPUs per host")
      ->check(integer_in(1, limits::kGpusPerNode));
  s->add_option("--nvlink-domain", f.nvlink_domain,
                "GPUs on one NVLink fabric, whole hosts (8 for DGX, 72 for NVL72)")
      ->check(integer_in(1, limits::kNvlinkDomain));
  s->add_option("--nvlink-GBps", f.nvlink_GBps,
                "NVLink bandwidth per GPU per direction, GB/s (half the datasheet's total)")
      ->check(number_in(limits::kBusbwGBps.lo, limits::kBusbwGBps.hi));
  s->add_option("--nics-per-node", f.nics_per_node, "inter-domain NICs per host")
      ->check(integer_in(1, limits::kNics));
  s->add_option("--nic-gbps", f.nic_gbps, "each NIC's line rate, Gb/s")
      ->check(number_in(limits::kNicGbps.lo, limits::kNicGbps.hi));
  s->add_option("--nodes", f.nodes, "default job size in hosts (optional; never a cap)")
      ->check(integer_in(1, limits::kClusterGpus));
  s->add_option("--gpu-hour-usd", f.gpu_hour_usd, "price per GPU-hour (for --objective cost)")
      ->check(number_in(limits::kGpuHourUsd.lo, limits::kGpuHourUsd.hi));
  s->add_option("-o,--out", a->out, "file to write (default: standard output)");
  s->callback([a, rc] { *rc = run_init(*a); });
}

}  // namespace planner::cli

// planner-calibrate: measures GEMMs (cuBLASLt), memory bandwidth and NCCL collectives on this
// machine (and, under mpirun, across nodes), saves the raw samples as JSON and fits a cluster
// profile for the planner. `--fit-only SAMPLES.json` refits saved samples without a GPU.
#include <cuda_runtime.h>
#include <fmt/core.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <sstream>

#include "calibrate/context.h"
#include "calibrate/fit_command.h"
#include "calibrate/measurements.h"
#include "calibrate/watchdog.h"
#include "planner/error.h"
#include "planner/format.h"
#include "planner/io/cluster_io.h"
#include "planner/io/output.h"

using namespace planner;
using namespace planner::calibrate;

namespace {

struct Options {
  FitCommand fit;
  std::string samples_out;
  bool quick = false, full = false, dry_run = false;
  std::string dtypes, skip;
  std::string min_bytes = "8", max_bytes = "1G";
  int gpus = 0;
  double timeout_s = 120;
  int max_repeats = 15;
  double noise = 0.02;
  unsigned long long seed = 42;
  std::string command_line;

  SweepSize size() const {
    return quick ? SweepSize::quick : full ? SweepSize::full : SweepSize::standard;
  }
  bool skipped(const std::string& part) const {
    return ("," + skip + ",").find("," + part + ",") != std::string::npos;
  }
};

void add_options(CLI::App& app, Options& o) {
  app.add_option("--out", o.fit.out_file,
                 "profile YAML to write (atomically), e.g. hw_profiles/mine.yaml");
  app.add_option(
      "--base", o.fit.base_file,
      "profile for what is not measured: datasheet peaks, "
      "attention-kernel rates, unmeasured tiers (default: hw_profiles/ by the GPU's name)");
  app.add_option("--name", o.fit.name, "profile name (default: --out's file name)");
  app.add_option("--nodes", o.fit.nodes, "nodes of the cluster to plan for (default: the base's)");
  app.add_option("--samples", o.samples_out,
                 "raw samples JSON (default: --out with .samples.json)");
  app.add_option("--fit-only", o.fit.samples_file,
                 "fit saved samples; measure nothing (no GPU needed)");
  auto* quick =
      app.add_flag("--quick", o.quick, "smoke test: a few bf16 GEMMs, 3 memory sizes (seconds)");
  app.add_flag("--full", o.full, "every shape in every dtype, 1k..32k tokens (tens of minutes)")
      ->excludes(quick);
  app.add_option("--dtypes", o.dtypes,
                 "GEMM dtypes, first = fitted (default bf16,fp16,tf32,fp8; --quick: bf16)");
  app.add_option("--skip", o.skip, "parts to skip: gemm, memory, nccl (comma-separated)");
  app.add_option("--gpus", o.gpus, "local GPUs for the single-process NCCL sweep (default: all)");
  app.add_option("-b,--min-bytes", o.min_bytes,
                 "smallest collective size (nccl-tests -b), default 8");
  app.add_option("-e,--max-bytes", o.max_bytes,
                 "largest collective size (nccl-tests -e), default 1G");
  app.add_option("--timeout-s", o.timeout_s,
                 "watchdog: longest one NCCL step may take (default 120)");
  app.add_option("--max-repeats", o.max_repeats, "timed batches per point at most (default 15)");
  app.add_option("--noise", o.noise,
                 "stop once IQR / median of the batches is below (default 0.02)");
  app.add_option("--seed", o.seed, "seed of the random inputs");
  app.add_flag("--dry-run", o.dry_run,
               "print what would be measured and the expected GEMM time (needs --base)");
}

std::vector<Dtype> parse_dtypes(const Options& o) {
  if (o.dtypes.empty())
    return o.quick ? std::vector<Dtype>{Dtype::bf16}
                   : std::vector<Dtype>{Dtype::bf16, Dtype::fp16, Dtype::tf32, Dtype::fp8};
  std::vector<Dtype> out;
  std::stringstream ss(o.dtypes);
  for (std::string item; std::getline(ss, item, ',');) {
    bool known = false;
    for (Dtype d : {Dtype::bf16, Dtype::fp16, Dtype::tf32, Dtype::fp8})
      if (item == to_string(d)) out.push_back(d), known = true;
    if (!known)
      throw InputError("", 0, "--dtypes",
                       "unknown dtype '" + item + "', expected bf16, fp16, tf32 or fp8");
  }
  return out;
}

RepeatPolicy policy(const Options& o) {
  RepeatPolicy p;
  p.max_repeats = std::max(p.min_repeats, o.max_repeats);
  p.target_spread = o.noise;
  return p;
}

/// What the run will measure, as `#` lines (also the whole output of --dry-run).
std::vector<std::string> plan_lines(const Options& o, const std::vector<GemmCase>& cases,
                                    const Gpu& gpu, const NcclRun& nccl) {
  std::string dtypes;
  for (Dtype d : parse_dtypes(o)) dtypes += (dtypes.empty() ? "" : ",") + std::string(to_string(d));
  const RepeatPolicy p = policy(o);
  return {planner::fmt(
              "# sweep: {}: {} GEMMs ({}; the fit uses the first), {} memory sizes, collectives "
              "{:.0f}..{:.0f} bytes by 2; GEMMs take about {:.0f} s on a GPU like the base's",
              to_string(o.size()), cases.size(), dtypes, hbm_sizes(o.size()).size(),
              nccl.sizes.empty() ? 0.0 : nccl.sizes.front(),
              nccl.sizes.empty() ? 0.0 : nccl.sizes.back(),
              o.skipped("gemm") ? 0.0 : estimate_gemm_sweep_s(cases, gpu, p)),
          planner::fmt(
              "# timing: CUDA events; warm-up {:.0f} ms; batches of >= {:.0f} ms; median of {}..{} "
              "batches, stopping once IQR/median <= {:.0f}%; watchdog {:.0f} s per NCCL step",
              p.warmup_s * 1e3, p.min_batch_s * 1e3, p.min_repeats, p.max_repeats,
              100 * p.target_spread, o.timeout_s)};
}

void save_samples(const Samples& s, const std::string& path) {
  io::write_file_atomically(path, samples_json(s));
  fmt::print("# wrote {} ({} GEMM, {} memory, {} collective samples)\n", path, s.gemm.size(),
             s.hbm.size(), s.collectives.size());
}

/// Everything after the world is up; rank 0 prints, saves and fits.
void calibrate_here(const Options& o, const World& w, Samples& samples,
                    const std::string& samples_path) {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count == 0)
    throw DeviceError(std::string("no CUDA device (") +
                      (e != cudaSuccess ? cudaGetErrorString(e) : "none visible") +
                      "); to refit saved samples without a GPU use --fit-only");
  const bool multi = w.mpi && w.size > 1;
  const int device = multi ? w.local_rank % count : 0;
  const auto start = std::chrono::steady_clock::now();
  CAL_CUDA(cudaSetDevice(device));
  const int gpn = multi ? w.local_size : (o.gpus > 0 ? std::min(o.gpus, count) : count);
  samples.context =
      gather_context(device, w.hosts, gpn, w.nodes, o.command_line, to_string(o.size()));
  const std::string base_file =
      resolve_base_profile(o.fit.base_file, samples.context.gpu, samples.context.hbm_bytes);
  const ClusterProfile base = io::load_cluster(base_file);
  const std::vector<GemmCase> cases =
      o.skipped("gemm") ? std::vector<GemmCase>{} : gemm_sweep(o.size(), parse_dtypes(o));
  const RepeatPolicy p = policy(o);
  NcclRun nccl{p, o.seed,
               message_sizes(parse_bytes(o.min_bytes, "--min-bytes"),
                             parse_bytes(o.max_bytes, "--max-bytes")),
               o.timeout_s, o.gpus};
  HbmRun hbm{device, p, o.seed, hbm_sizes(o.size()), pcie_sizes(o.size())};
  const int steps =
      int(cases.size()) +
      (o.skipped("memory") ? 0 : 2 * int(hbm.hbm_sizes.size() + hbm.pcie_sizes.size())) +
      (o.skipped("nccl") ? 0 : nccl_steps(nccl, w));
  Output out(w.rank == 0, steps);
  for (const std::string& line : context_lines(samples.context)) out.line(line);
  if (multi)
    for (const std::string& line : world_gather(
             w, planner::fmt("#   rank {}: host {}, device {}", w.rank, w.hosts[w.node], device)))
      out.line(line);
  out.line("# base profile: " + base_file +
           " (datasheet peaks, attention-kernel rates, what is not measured)");
  for (const std::string& line : plan_lines(o, cases, base.gpu, nccl)) out.line(line);
  if (w.rank == 0 && !cases.empty())
    run_gemm_sweep(cases, {device, p, o.seed, base.gpu.peak_flops}, out, samples);
  if (w.rank == 0 && !o.skipped("memory")) run_hbm_sweep(hbm, out, samples);
  world_barrier(w);
  if (!o.skipped("nccl")) run_nccl_sweeps(nccl, w, out, samples);
  out.finish();
  if (w.rank != 0) return;
  out.line("");
  save_samples(samples, samples_path);
  FitCommand fit = o.fit;
  fit.base_file = base_file, fit.samples_file = samples_path;
  fit_and_write(samples, fit, stdout);
  fmt::print("# calibration took {:.1f} s (measuring, saving and fitting)\n",
             std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
}

/// The folders of the files written at the very end, created (or found unwritable) before any
/// device time is spent.
void prepare_output_folder(const std::string& file, const char* option) {
  const std::filesystem::path dir = std::filesystem::path(file).parent_path();
  std::error_code ec;
  if (!dir.empty()) std::filesystem::create_directories(dir, ec);
  const std::string d = dir.empty() ? "." : dir.string();
  if (ec || access(d.c_str(), W_OK) != 0)
    throw InputError("", 0, option, "cannot write into folder '" + d + "'");
}

int measure_and_fit(const Options& o, int argc, char** argv) {
  World w;
  Samples samples;
  const std::string path =
      o.samples_out.empty() ? default_samples_path(o.fit.out_file) : o.samples_out;
  try {
    w = init_world(&argc, &argv);
    if (w.rank == 0) {  // the only writer; an error here ends every rank (abort_world)
      prepare_output_folder(o.fit.out_file, "--out");
      prepare_output_folder(path, "--samples");
    }
    calibrate_here(o, w, samples, path);
    world_barrier(w);
    finalize_world(w);
    return 0;
  } catch (const CollectiveTimeout& e) {
    fmt::print(stderr, "\nplanner-calibrate: watchdog: {}\n", e.what());
    if (w.rank == 0 && !samples.gemm.empty()) save_samples(samples, path);  // what was measured
    abort_world(w, 3);
  } catch (const InputError& e) {
    fmt::print(stderr, "planner-calibrate: error: {}\n", e.what());
    abort_world(w, 2);
  } catch (const std::exception& e) {  // DeviceError and set-up failures
    fmt::print(stderr, "\nplanner-calibrate: error (rank {}): {}\n", w.rank, e.what());
    if (w.rank == 0 && (!samples.gemm.empty() || !samples.hbm.empty())) {
      try {  // keep what was measured: --fit-only can refit it
        save_samples(samples, path);
      } catch (const std::exception& s) {
        fmt::print(stderr, "planner-calibrate: could not save the samples: {}\n", s.what());
      }
    }
    abort_world(w, 1);
  }
}

int dry_run(const Options& o) {
  if (o.fit.base_file.empty())
    throw InputError("", 0, "--base", "--dry-run queries no GPU: name the base profile");
  const ClusterProfile base = io::load_cluster(o.fit.base_file);
  const std::vector<GemmCase> cases =
      o.skipped("gemm") ? std::vector<GemmCase>{} : gemm_sweep(o.size(), parse_dtypes(o));
  NcclRun nccl;
  nccl.sizes = message_sizes(parse_bytes(o.min_bytes, "--min-bytes"),
                             parse_bytes(o.max_bytes, "--max-bytes"));
  fmt::print("# planner-calibrate {} --dry-run: {}\n", PLANNER_VERSION, o.command_line);
  for (const std::string& line : plan_lines(o, cases, base.gpu, nccl)) fmt::print("{}\n", line);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "planner-calibrate: measure GEMMs, memory and NCCL collectives; fit a cluster profile"};
  app.set_version_flag("--version", std::string("planner-calibrate ") + PLANNER_VERSION);
  Options o;
  add_options(app, o);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  o.command_line = shell_command_line(argc, argv);
  try {
    if (!o.fit.samples_file.empty()) return run_fit_only(o.fit, stdout), 0;
    parse_dtypes(o);  // option errors before any device work
    if (o.dry_run) return dry_run(o);
    if (o.fit.out_file.empty())
      throw InputError("", 0, "--out", "is required (the profile to write)");
  } catch (const InputError& e) {
    std::cerr << "planner-calibrate: error: " << e.what() << "\n";
    return 2;
  }
  return measure_and_fit(o, argc, argv);
}

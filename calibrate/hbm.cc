// Memory bandwidth: device-to-device copy (what the planner's element-wise kernels do: read and
// write), a read-dominated kernel, and host <-> device copies from pinned memory.
#include <algorithm>

#include "calibrate/device.h"
#include "calibrate/measurements.h"
#include "planner/format.h"
#include "planner/units.h"

namespace planner::calibrate {
namespace {

const std::vector<int> kWidths = {14, 14, 14, 11, 10, 5, 8};

void header(Output& out, const std::string& title) {
  out.line("");
  out.line(title);
  out.line(table_row(
      kWidths, {"kind", "size_bytes", "moved_bytes", "time_us", "GB/s", "reps", "spread%"}, true));
}

/// Times `enqueue_one` as one operation moving `moved` bytes; appends and prints the sample.
void point(HbmKind kind, double bytes, double moved, const std::function<void()>& enqueue_one,
           const HbmRun& run, cudaStream_t stream, Output& out, Samples& samples) {
  TimedOp op;
  op.streams = {{run.device, stream}};
  op.hide_launch_gaps = true;
  op.enqueue = [&](int iters) {
    for (int i = 0; i < iters; ++i) enqueue_one();
  };
  const RepeatStats st = measure(op, run.policy);
  const HbmSample s{kind, bytes, moved, st.median_s, st.repeats, st.spread};
  samples.hbm.push_back(s);
  out.line(
      table_row(kWidths, {to_string(kind), fmt("{:.0f}", bytes), fmt("{:.0f}", moved),
                          fmt("{:.2f}", s.time_s * 1e6), fmt("{:.1f}", s.bandwidth_Bps() / kGB),
                          fmt("{}", s.repeats), fmt("{:.1f}", 100 * s.spread)}));
  out.step(fmt("memory {} {:.0f} MiB", to_string(kind), bytes / kMiB));
}

/// The sizes whose two buffers fit in free memory (with 10% to spare).
std::vector<double> fitting(const std::vector<double>& sizes, double buffers, Output& out) {
  size_t free_b = 0, total_b = 0;
  CAL_CUDA(cudaMemGetInfo(&free_b, &total_b));
  std::vector<double> kept;
  for (double s : sizes) {
    if (buffers * s <= 0.9 * double(free_b))
      kept.push_back(s);
    else
      out.line(fmt("#   {:.0f} MiB skipped: {:.0f} buffers of it do not fit in {:.1f} GiB free",
                   s / kMiB, buffers, free_b / kGiB));
  }
  return kept;
}

void device_sweep(const HbmRun& run, cudaStream_t stream, Output& out, Samples& samples) {
  header(out,
         "# memory: device-to-device copy (cudaMemcpyAsync; moved = read + write) and a "
         "read kernel (16-byte loads, grid = resident blocks); random data");
  const std::vector<double> sizes = fitting(run.hbm_sizes, 2, out);
  const int skipped = int(run.hbm_sizes.size() - sizes.size());
  for (int i = 0; i < 2 * skipped; ++i) out.step("memory skipped");
  if (sizes.empty()) return;
  const size_t max_bytes = size_t(*std::max_element(sizes.begin(), sizes.end()));
  DeviceBuffer src(max_bytes), dst(max_bytes), sink(sizeof(float));
  fill_uniform(src.get(), max_bytes / 4, ElementType::f32, run.seed, stream);
  const int threads = 512, blocks = read_kernel_grid(run.device, threads);
  for (double s : sizes) {
    point(
        HbmKind::d2d_copy, s, 2 * s,
        [&] {
          CAL_CUDA(
              cudaMemcpyAsync(dst.get(), src.get(), size_t(s), cudaMemcpyDeviceToDevice, stream));
        },
        run, stream, out, samples);
  }
  for (double s : sizes) {
    point(
        HbmKind::read, s, s,
        [&] {
          enqueue_read(src.get(), size_t(s), static_cast<float*>(sink.get()), blocks, threads,
                       stream);
        },
        run, stream, out, samples);
  }
}

void host_sweep(const HbmRun& run, cudaStream_t stream, Output& out, Samples& samples) {
  if (run.pcie_sizes.empty()) return;
  header(out, "# host <-> device: cudaMemcpyAsync from and to pinned host memory");
  const size_t max_bytes = size_t(*std::max_element(run.pcie_sizes.begin(), run.pcie_sizes.end()));
  PinnedBuffer host(max_bytes);
  DeviceBuffer dev(max_bytes);
  fill_uniform(dev.get(), max_bytes / 4, ElementType::f32, run.seed, stream);
  for (HbmKind kind : {HbmKind::h2d, HbmKind::d2h})
    for (double s : run.pcie_sizes) {
      const bool h2d = kind == HbmKind::h2d;
      point(
          kind, s, s,
          [&] {
            CAL_CUDA(cudaMemcpyAsync(
                h2d ? dev.get() : host.get(), h2d ? host.get() : dev.get(), size_t(s),
                h2d ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost, stream));
          },
          run, stream, out, samples);
    }
}

}  // namespace

void run_hbm_sweep(const HbmRun& run, Output& out, Samples& samples) {
  CAL_CUDA(cudaSetDevice(run.device));
  cudaStream_t stream = nullptr;
  CAL_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  device_sweep(run, stream, out, samples);
  host_sweep(run, stream, out, samples);
  CAL_CUDA(cudaStreamSynchronize(stream));
  cudaStreamDestroy(stream);
}

}  // namespace planner::calibrate

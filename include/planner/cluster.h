#pragma once
#include <array>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace planner {

/// fp8 is Hopper-style FP8 (per-tensor scales: delayed or current scaling), mxfp8 Blackwell's
/// block-scaled FP8 (an E8M0 scale per 32 elements, Transformer Engine's MXFP8BlockScaling).
enum class Dtype { fp16, bf16, fp8, tf32, mxfp8 };
inline constexpr int kNumDtypes = 5;
const char* to_string(Dtype d);
/// Either FP8 recipe: the linear layers' GEMMs in FP8 under Transformer Engine, the rest bf16.
inline bool is_fp8(Dtype d) { return d == Dtype::fp8 || d == Dtype::mxfp8; }
/// MXFP8's E8M0 scale: one byte per block of 32 elements along a row or a column (Transformer
/// Engine docs, low_precision_training/mxfp8: 1-D blocks of 32, E8M0 scales, E4M3 data in both
/// passes).
inline constexpr double kMxfp8ScaleBytesPerElement = 1.0 / 32;

/// One thread-block tile shape the GEMM model may choose, with its efficiency relative to the
/// largest tile (smaller tiles reuse less data per load).
struct GemmTile {
  int m = 128;
  int n = 128;
  double relative_efficiency = 1.0;
};

/// A GEMM shape whose efficiency was measured (planner validate --update-profile): it replaces
/// the model's figure for exactly that shape and precision.
struct MeasuredGemm {
  double m = 0, n = 0, k = 0, batch = 1;
  Dtype dtype = Dtype::bf16;
  double efficiency = 0;  ///< achieved FLOP/s / dense peak, in the microbenchmark
};

/// Parameters of the GEMM efficiency model (cost/compute.h). Defaults in the profiles come from
/// published measurements (shared/data/hardware-reference.md section 4); calibrate/ refits them.
struct GemmModel {
  double max_efficiency = 0.8;     ///< best achieved / dense peak on large aligned shapes
  double k_half = 64;              ///< K at which the main loop reaches half its efficiency
  double misaligned_factor = 0.7;  ///< a dimension not a multiple of `alignment` elements
  int alignment = 8;               ///< elements (16 bytes in fp16/bf16)
  double launch_s = 4e-6;          ///< per-kernel fixed cost
  std::vector<GemmTile> tiles;     ///< candidates; the model takes the fastest
  std::vector<MeasuredGemm> measured;
};

/// Attention kernels the stack runs: flash-style fused (no s^2 tensor in memory) or batched GEMMs
/// with a fused scale-mask-softmax and a dropout kernel (Megatron-LM 2021).
enum class AttentionKernel { flash, unfused };

/// Flash attention's backward over its forward FLOP rate, for profiles that give only the forward:
/// cuDNN fused attention on the H200, three training shapes (bench/validation-h200.md).
inline constexpr double kFlashBackwardOverForward = 0.76;
/// Compute slowdown beside an overlapped collective, for profiles that do not state it: 18.9% on
/// average over A100, H100, MI250 and MI210 (Lee et al. 2025, arXiv 2507.03114).
inline constexpr double kOverlapComputeSlowdown = 0.189;

/// How the language-model loss holds the logits (cost/memory.cc logits_bytes).
/// `vocab_parallel_in_place`: Megatron-Core's vocab-parallel cross entropy (and
/// Megatron-DeepSpeed's copy of it), which casts the 16-bit logits to fp32 once, exponentiates in
/// place, saves that and turns it into the gradient in place (core/tensor_parallel/cross_entropy.py
/// at d98e8a64). `pytorch_fp32`: torchtitan's loss as its 2024 commits ran it (train.py loss_fn
/// at 9dec370; cross_entropy_loss in components/loss.py at b5bcd76c), PyTorch's cross entropy on
/// an fp32 copy of all the logits (pred.float()): the saved fp32 log-probabilities, their gradient
/// and the input's gradient live together in the backward; with TP the vocab-parallel loss saves
/// the log-probabilities and builds the gradient from a zeros tensor and exp(log_probs).
/// `chunked_fp32`: the same a chunk at a time, as torchtitan's Llama 3 recipes run it at b5bcd76c
/// (ChunkedLossWrapper, num_chunks 8: each chunk's output GEMM, loss and backward in turn), plus
/// an fp32 gradient accumulator of the hidden states and their chunk copies, TP-replicated.
/// `fused_native`: Megatron-Core's vocab-parallel cross entropy in fused functions
/// (--cross-entropy-loss-fusion --cross-entropy-fusion-impl native; core/fusions/
/// fused_cross_entropy.py at d98e8a64): the same tensors, fewer passes. `te_triton`: Transformer
/// Engine's Triton kernels (--cross-entropy-fusion-impl te; pytorch/triton/cross_entropy.py
/// before 01bbe3eea, 2026-07-09, the versions the 2025-26 containers pin): an online-softmax
/// pass, then the loss and the gradient written over the 16-bit logits in place; no fp32 copy.
/// A plan picks the last two with its loss_fusion knob (loss_kernel in cost/memory.h).
enum class LossKernel {
  vocab_parallel_in_place,
  pytorch_fp32,
  chunked_fp32,
  fused_native,
  te_triton
};

/// The execution choices a training stack makes: they belong to the framework (framework.h gives
/// each version's defaults) and to the plan's execution knobs, not to the hardware.
struct SoftwareStack {
  AttentionKernel attention = AttentionKernel::flash;
  bool overlap_grad_reduce = true;   ///< DP reduce-scatter/allreduce overlapped with backward
  bool overlap_param_gather = true;  ///< ZeRO parameter allgather overlapped with forward
  /// TP allgathers and reduce-scatters pipelined with the GEMMs beside them (Transformer Engine
  /// userbuffers, Megatron --tp-comm-overlap; with sequence parallelism only).
  bool overlap_tp_comm = false;
  bool causal_attention_skip = true;  ///< fused kernels skip the masked half of s^2
  /// NICs per node that ZeRO-3 parameter gathers and gradient scatters effectively use; NCCL's
  /// own hierarchical collectives use all of them (gpus_per_node).
  int zero3_collective_nics = 8;
  LossKernel loss = LossKernel::vocab_parallel_in_place;
  /// The interleaved schedule runs every forward first when the micro-batches equal the stages
  /// (Megatron-LM's schedules.py from 2021 through 307dcf37; 4295be1a6c dropped the case, so at
  /// d98e8a64, and in PyTorch's Interleaved1F1B, the later stages warm up with fewer).
  bool interleaved_all_warmup = false;
  /// With pp > 1, DeepSpeed's PipelineEngine (deepspeed/runtime/pipe/engine.py, p2p.py at
  /// edaa72212): its send and receive are blocking (p2p.send and p2p.recv are dist.send and
  /// dist.recv; the schedule's instructions run one after another), so a transfer holds both
  /// stages; the DP reduction is its ReduceGrads instruction after the last micro-batch's backward
  /// ("We schedule the all-reduces, so disable it in super().backward()"), exposed, and under bf16
  /// its BF16_Optimizer all-reduces the whole gradient (buffered_allreduce_fallback) in the
  /// communication dtype, the model's 16 bits by default (engine.py communication_data_type).
  bool deepspeed_pipeline_engine = false;
  /// Transformer Engine keeps each FP8 linear's quantized weight between micro-batches (its
  /// weight workspace, cost/memory.h kFp8WeightCacheBytesPerParam): Megatron-Core passes
  /// is_first_microbatch to TE's modules unless disable_parameter_transpose_cache is set.
  bool fp8_weight_cache = false;
  /// Its linears are Transformer Engine's: LayerNormLinear holds the norm before QKV and a dense
  /// MLP's fc1 (Module::norm_fused; selective_moe's layernorm checkpoint does not reach it),
  /// GroupedLinear runs the experts' GEMMs in rounds over its streams and quantizes them expert
  /// by expert under current scaling, and under FP8 a fused norm writes the FP8 input (delayed
  /// scaling) or computes its amax (current scaling), the plan's fp8_recipe picking between
  /// them. false: torchao's float8 linears under torch.compile (torchtitan), dynamic per-tensor
  /// scaling with the norm apart: every input read for its amax, then cast
  /// (fp8_current_scaling), with TE's byte counts.
  bool transformer_engine = false;
  /// Host time of one layer with routed experts, forward and backward of one micro-batch, run
  /// eagerly (no CUDA graphs): the GPU cannot run such a layer faster than its host launches it
  /// (0: not modelled). kEagerMoeLayerHostS on Megatron-Core; a plan's cuda_graphs=1 lifts it.
  double moe_layer_host_s = 0;
  bool operator==(const SoftwareStack& o) const {  // spelled out: nvcc's C++17 has no = default
    return attention == o.attention && overlap_grad_reduce == o.overlap_grad_reduce &&
           overlap_param_gather == o.overlap_param_gather && overlap_tp_comm == o.overlap_tp_comm &&
           causal_attention_skip == o.causal_attention_skip &&
           zero3_collective_nics == o.zero3_collective_nics && loss == o.loss &&
           interleaved_all_warmup == o.interleaved_all_warmup &&
           deepspeed_pipeline_engine == o.deepspeed_pipeline_engine &&
           fp8_weight_cache == o.fp8_weight_cache && transformer_engine == o.transformer_engine &&
           moe_layer_host_s == o.moe_layer_host_s;
  }
};

struct Gpu {
  std::string name;
  int sms = 0;
  std::array<double, kNumDtypes> peak_flops{};  ///< dense tensor-core FLOP/s; 0 = unsupported
  /// Blackwell's NVFP4 (16-element blocks, E4M3 scales), dense FLOP/s from the datasheet (0:
  /// none): recorded and reported, not a plan precision. MXFP8 is peak_flops[mxfp8].
  double nvfp4_flops = 0;
  double hbm_bytes = 0;
  double hbm_Bps = 0;            ///< datasheet
  double hbm_efficiency = 0.85;  ///< achieved stream bandwidth / datasheet
  /// Kernel speed sustained in training relative to the microbenchmarks the other constants come
  /// from (clocks under long power and thermal load, gaps between kernels). A global per-GPU fit.
  double sustained_efficiency = 1.0;
  GemmModel gemm;
  double flash_efficiency = 0.6;  ///< flash attention forward FLOP/s / dense peak
  /// Its backward (2.5x the forward's FLOPs) likewise.
  double flash_backward_efficiency = flash_efficiency * kFlashBackwardOverForward;
  /// Fraction by which compute slows while a collective runs beside it (NCCL's kernels take SMs
  /// and HBM bandwidth): a GEMM that takes t alone takes t x (1 + this) during the overlap.
  double overlap_compute_slowdown = kOverlapComputeSlowdown;
  double hbm_achieved_Bps() const { return hbm_Bps * hbm_efficiency; }
  /// FP8 GEMMs in any operand layout, so per-tensor FP8 needs no transposed copies: Transformer
  /// Engine's nvte_is_non_tn_fp8_gemm_supported (compute capability 10.x or >= 13; Hopper takes
  /// only TN). Among the profiles, the GPUs with block-scaled MXFP8 tensor cores (B200, B300,
  /// GB200, GB300: SM100/SM103); an SM120 profile would have MXFP8 without it.
  bool fp8_any_layout() const { return peak_flops[static_cast<int>(Dtype::mxfp8)] > 0; }
};

enum class Collective { allreduce, allgather, reduce_scatter, alltoall, sendrecv };
inline constexpr int kNumCollectives = 5;
const char* to_string(Collective c);

/// Achieved cost of one collective on one tier: nccl-tests bus bandwidth, optionally as a curve
/// over message size (log-linear interpolation), and the small-message latency.
struct CollectiveCost {
  double busbw_Bps = 0;  ///< asymptotic (large-message) bus bandwidth
  double latency_s = 0;  ///< time of a tiny message on `reference_ranks` ranks
  std::vector<std::pair<double, double>> curve;  ///< (bytes, busbw_Bps), ascending bytes
};

/// A level of the network. Tier 0 is inside an NVLink domain (NVLink/NVSwitch); tier 1 spans
/// domains (InfiniBand or RoCE), where busbw is per rank with a NIC of its own (one NIC per GPU,
/// as nccl-tests measures DGX nodes).
struct NetworkTier {
  std::string name;
  int reference_ranks = 8;   ///< group size the latencies were measured on
  double hop_latency_s = 0;  ///< added per extra ring/tree step beyond reference
  /// Tier 1: line rate of the NIC its figures were measured with (0: not stated, taken to be
  /// the cluster's own NICs).
  double nic_Bps = 0;
  /// Tier 0: the datasheet's NVLink bandwidth per GPU per direction (0: not stated). Not used by
  /// the cost model, which reads the measured figures below; profile init scales them by it.
  double link_Bps = 0;
  std::array<CollectiveCost, kNumCollectives> cost;
};

/// Achieved host-link bandwidth over the datasheet's, for profiles that give only the link: H2D
/// copies measured with nvbandwidth reach 26 of 32 GB/s on A100 (PCIe Gen4 x16) and 51 of 64 on
/// H100 (Gen5 x16) (Azure AI benchmarking guide, shared/data/hardware-reference.md s.4), 0.81 and
/// 0.80; the H200 calibration measured 55.4 of 64 (bench/calibration-h200/calibrate.log).
inline constexpr double kHostLinkEfficiency = 0.80;

/// The host side of a node, for offload (cost/offload.h): what a plan may move off the GPUs and
/// how fast. A profile without a `host:` block plans no offload.
struct Host {
  double memory_bytes = 0;  ///< system memory per node (0: not stated, offload refused)
  /// Peak DRAM bandwidth per node (sockets x channels x transfer rate): the CPU optimizer step
  /// streams its states through it.
  double memory_Bps = 0;
  double link_Bps = 0;      ///< host link per GPU per direction, datasheet (PCIe Gen4 x16: 32)
  double measured_Bps = 0;  ///< host link per GPU per direction, measured (0: link x efficiency)
  double nvme_Bps = 0;      ///< NVMe read/write bandwidth per node (0: not stated, no NVMe offload)
  bool present() const { return memory_bytes > 0 && memory_Bps > 0 && link_Bps > 0; }
  /// Achieved bandwidth of one GPU's host link, each direction.
  double achieved_link_Bps() const {
    return measured_Bps > 0 ? measured_Bps : link_Bps * kHostLinkEfficiency;
  }
  bool operator==(const Host& o) const {
    return memory_bytes == o.memory_bytes && memory_Bps == o.memory_Bps && link_Bps == o.link_Bps &&
           measured_Bps == o.measured_Bps && nvme_Bps == o.nvme_Bps;
  }
};

/// A kind of node and its network. The job's size is the user's (--gpus, --nodes): `nodes` is
/// only the default.
struct ClusterProfile {
  std::string name;
  std::string file;
  Gpu gpu;
  int gpus_per_node = 8;  ///< GPUs per host (torchrun --nproc-per-node, sbatch tasks per node)
  /// GPUs that share one NVLink fabric: the host's in a DGX, 72 in a GB200/GB300 NVL72 rack of 18
  /// hosts. A whole number of hosts; a communicator inside it runs on tier 0 across hosts.
  int nvlink_domain = 8;
  int nics_per_node = 8;  ///< inter-domain NICs per host (default one per GPU)
  double nic_Bps = 0;     ///< each NIC's line rate (0: the inter tier's measured NIC)
  int nodes = 0;          ///< default job size in hosts; 0: one NVLink domain
  NetworkTier intra;      ///< NVLink / NVSwitch, inside the NVLink domain
  NetworkTier inter;      ///< between domains, per rank with a NIC of its own
  /// The execution stack the job runs: the framework's (cluster_for / execution_stack in
  /// framework.h); until a framework is chosen, the loader's default (Megatron-LM's, or the
  /// profile's legacy software block).
  SoftwareStack software;
  /// A profile written before the hardware/software split may still carry a `software:` block:
  /// it then gives the default execution choices in place of the framework's.
  std::optional<SoftwareStack> legacy_software;
  Host host;                ///< system memory, host link and NVMe (offload)
  double gpu_hour_usd = 0;  ///< optional price, for --objective cost reports
  std::map<std::string, std::string> provenance;
  /// The job size when none is given: the profile's nodes, else one NVLink domain.
  int default_gpus() const { return nodes > 0 ? gpus_per_node * nodes : nvlink_domain; }
  /// Each GPU's share of its host's NIC bandwidth, relative to the inter tier's one NIC per
  /// rank: (NICs x line rate) / (GPUs x measured NIC's rate). Training runs every GPU's
  /// collectives at once, so the host's NICs are shared by all of its GPUs.
  double inter_share() const {
    const double speed = nic_Bps > 0 && inter.nic_Bps > 0 ? nic_Bps / inter.nic_Bps : 1.0;
    return double(nics_per_node) / gpus_per_node * speed;
  }
  /// Whether a job of `gpus` GPUs can be placed: any count inside one NVLink domain, whole hosts
  /// beyond it.
  bool job_size_ok(long long gpus) const {
    return gpus >= 1 && (gpus <= nvlink_domain || gpus % gpus_per_node == 0);
  }
};

/// ", NVLink domain of 72 GPUs, 4 NICs/node" where the profile differs from one host of one NIC
/// per GPU; empty for a DGX. The reports' cluster line appends it.
std::string topology_note(const ClusterProfile& c);

}  // namespace planner

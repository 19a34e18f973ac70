#!/usr/bin/env bash
# The H200 calibration and validation as one prepared step (../shared/DEVICE.md: build here, carry
# the build and the shared libraries the device lacks, run one script, keep it well under the
# time budget).
#
#   calibrate/device_run.sh prepare     # on the development machine: build-device/
#   run tool: command "calibrate/device_run.sh run", carry ["build-device"], timeout_s 570
#   (or "calibrate/device_run.sh validate", timeout_s 360: the validations alone;
#    or "calibrate/device_run.sh moe", timeout_s 150: issue 18's mixture-of-experts layer alone)
#
# `run` writes under $OUT: nvidia-smi.txt, calibrate.log, h200-calibrated.yaml and its
# .samples.json, estimate.txt (planner estimate of a few layer shapes on the new profile, to set
# next to the measured GEMM sums in calibrate.log); then what `validate` writes. Bounds: 200 s
# for the calibration, 70 + 40 s per validation (runner, then the SDPA reference): 530 s. On the
# H200 (2026-11-30) the whole `run` took 79 s.
#
# `validate` runs issue 7's three validations on the calibrated profile when $OUT has one (else
# hw_profiles/dgx-h200.yaml), each the top plan of `planner suggest` on dgx-h200.yaml at a small
# GPU count, the runner executing one rank's shard of one layer:
#   megatron-1.7b  --gpus 8  (tp=1, the overall top plan)
#   megatron-18.4b --gpus 8  --tp 8
#   gpt3-175b      --gpus 64 --tp 8
# Per model, under $OUT: validation-h200-<model>.txt and .json (planner validate's report),
# .workload.json, .measured.json (the runner's times, plus the attention reference that
# calibrate/sdpa_reference.py adds: PyTorch's fused attention at the same shapes), .runner.log
# (its checks and table) and .sdpa.log.
#
# `moe` runs issue 18's check: one Qwen3-30B-A3B layer at ep 1 (all 128 experts on the GPU: the
# router, the grouped expert GEMMs in TE's rounds of 4, the routing kernels and the sort by local
# expert), planned on 8 GPUs as tp 1 x pp 8 (6 layers a stage, so the estimate fits) and run as
# one rank's layer: validation-h200-qwen3-30b-a3b.* under $OUT, as above (70 + 40 s at most).
set -euo pipefail
cd "$(dirname "$0")/.."

top_plan() {  # model, --gpus, --global-batch, extra suggest options: the top plan's --plan string
  build-device/planner suggest --model "configs/models/$1.yaml" --cluster hw_profiles/dgx-h200.yaml \
      --gpus "$2" --global-batch "$3" "${@:4}" --top 1 |
    awk '!done && match($0, /--plan "[^"]*"/) { print substr($0, RSTART + 8, RLENGTH - 9); done = 1 }'
}

validate_one() {  # model, --gpus, plan, output folder, profile
  local model=$1 gpus=$2 plan=$3 out=$4 profile=$5
  local base="$out/validation-h200-$model"
  [ -n "$plan" ] || { echo "# validation: $model: planner suggest gave no plan"; return 1; }
  local file="configs/models/$model.yaml"
  [ -f "$file" ] || file="configs/models/$model.json"  # Hugging Face configs (the MoE models)
  local args=(--model "$file" --cluster "$profile" --gpus "$gpus" --plan "$plan")
  echo "# validation: $model on $profile, --plan \"$plan\""
  build-device/planner validate "${args[@]}" --workload-out "$base.workload.json" || return 1
  if ! timeout 70 build-device/calibrate/planner-validate --workload "$base.workload.json" \
        --out "$base.measured.json" --iters 20 > "$base.runner.log" 2>&1; then
    tail -30 "$base.runner.log"
    return 1
  fi
  grep -E "^#   |relative|TFLOP|GB/s" "$base.runner.log" | head -60 || true
  # Production fused attention at the same shapes (PyTorch SDPA), beside the runner's own kernels.
  timeout 40 python3 calibrate/sdpa_reference.py --workload "$base.workload.json" \
      --measured "$base.measured.json" 2>&1 | tee "$base.sdpa.log" || true
  build-device/planner validate "${args[@]}" --measured "$base.measured.json" > "$base.txt" || return 1
  cat "$base.txt"
  build-device/planner validate "${args[@]}" --measured "$base.measured.json" --format json > "$base.json"
}

validate_all() {
  local out=$1 status=0 plan
  local profile=hw_profiles/dgx-h200.yaml
  [ -s "$out/h200-calibrated.yaml" ] && profile="$out/h200-calibrated.yaml"
  # The top plan of `planner suggest` on the datasheet H200 profile at a small GPU count; the
  # runner executes one rank's shard of one layer.
  plan=$(top_plan megatron-1.7b 8 512) || plan=""
  validate_one megatron-1.7b 8 "$plan" "$out" "$profile" || status=1
  plan=$(top_plan megatron-18.4b 8 1024 --tp 8) || plan=""
  validate_one megatron-18.4b 8 "$plan" "$out" "$profile" || status=1
  plan=$(top_plan gpt3-175b 64 1536 --tp 8) || plan=""
  validate_one gpt3-175b 64 "$plan" "$out" "$profile" || status=1
  return $status
}

device_env() {
  export LD_LIBRARY_PATH="$PWD/build-device/libs:/usr/local/cuda/lib64:/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  out="${OUT:-/tmp/calibrate-out}"
  mkdir -p "$out"
}

case "${1:-}" in
  prepare)
    cmake -S . -B build-device -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 \
          -DPLANNER_CALIBRATE_MPI=OFF
    cmake --build build-device --target planner-calibrate planner-validate planner
    mkdir -p build-device/libs
    cp -L /lib/x86_64-linux-gnu/libyaml-cpp.so.0.7 /lib/x86_64-linux-gnu/libfmt.so.9 \
          /lib/x86_64-linux-gnu/libspdlog.so.1.10 build-device/libs/
    ;;
  run)
    device_env
    nvidia-smi > "$out/nvidia-smi.txt" 2>&1 || true
    cal=build-device/calibrate/planner-calibrate
    status=0
    if timeout 200 "$cal" --base hw_profiles/dgx-h200.yaml --name h200-calibrated \
         --out "$out/h200-calibrated.yaml" > "$out/calibrate.log" 2>&1; then
      grep -E "^#   |# wrote" "$out/calibrate.log" || true
      for shape in "2048 1" "2048 8" "8192 1" "8192 8"; do
        set -- $shape
        printf 'name: h%s\nlayers: 1\nhidden: %s\nheads: %s\nkv_heads: %s\nffn: %s\nswiglu: false\nvocab: 50304\nseq_len: 4096\ntied_embeddings: true\n' \
            "$1" "$1" $(($1 / 128)) $(($1 / 128)) $((4 * $1)) > "$out/h$1.yaml"
        echo "# hidden $1, tp $2, 4096 tokens" >> "$out/estimate.txt"
        build-device/planner estimate --model "$out/h$1.yaml" --cluster "$out/h200-calibrated.yaml" \
            --plan "tp=$2,pp=1,mbs=1,gbs=64" --gpus 8 2>&1 | grep -E "forward  =|backward =" >> "$out/estimate.txt" || true
      done
      cat "$out/estimate.txt"
    else
      tail -30 "$out/calibrate.log" 2>/dev/null || true
      rm -f "$out/h200-calibrated.yaml"  # validate on the datasheet profile instead
      status=1
    fi
    validate_all "$out" || status=1
    exit $status
    ;;
  validate)
    device_env
    nvidia-smi > "$out/nvidia-smi.txt" 2>&1 || true
    validate_all "$out"
    ;;
  moe)
    device_env
    nvidia-smi > "$out/nvidia-smi.txt" 2>&1 || true
    validate_one qwen3-30b-a3b 8 "tp=1,pp=8,dp=1,ep=1,mbs=1,gbs=64,zero=0,recompute=none" "$out" \
        hw_profiles/dgx-h200.yaml
    ;;
  *)
    echo "usage: $0 prepare|run|validate|moe" >&2
    exit 2
    ;;
esac

#!/usr/bin/env bash
# The H200 calibration as one prepared step (../shared/DEVICE.md: build here, carry the build and
# the shared libraries the device lacks, run one script, keep it well under the time budget).
#
#   calibrate/device_run.sh prepare     # on the development machine: build-device/ (about 25 MB)
#   run tool: command "calibrate/device_run.sh run", carry ["build-device"], timeout_s 420
#
# `run` writes under $OUT: nvidia-smi.txt, quick.log (a 1-minute smoke test first), calibrate.log,
# h200-calibrated.yaml and its .samples.json, and estimate.txt (planner estimate of a few layer
# shapes on the new profile, to set next to the measured GEMM sums in calibrate.log).
set -euo pipefail
cd "$(dirname "$0")/.."
case "${1:-}" in
  prepare)
    cmake -S . -B build-device -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90 \
          -DPLANNER_CALIBRATE_MPI=OFF
    cmake --build build-device --target planner-calibrate planner
    mkdir -p build-device/libs
    cp -L /lib/x86_64-linux-gnu/libyaml-cpp.so.0.7 /lib/x86_64-linux-gnu/libfmt.so.9 \
          /lib/x86_64-linux-gnu/libspdlog.so.1.10 build-device/libs/
    ;;
  run)
    export LD_LIBRARY_PATH="$PWD/build-device/libs:/usr/local/cuda/lib64:/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    out="${OUT:-/tmp/calibrate-out}"
    mkdir -p "$out"
    nvidia-smi > "$out/nvidia-smi.txt" 2>&1 || true
    cal=build-device/calibrate/planner-calibrate
    timeout 60 "$cal" --quick --skip nccl --base hw_profiles/dgx-h200.yaml \
        --out "$out/quick.yaml" > "$out/quick.log" 2>&1 || { tail -20 "$out/quick.log"; exit 1; }
    timeout 300 "$cal" --base hw_profiles/dgx-h200.yaml --name h200-calibrated \
        --out "$out/h200-calibrated.yaml" > "$out/calibrate.log" 2>&1 || { tail -40 "$out/calibrate.log"; exit 1; }
    grep -E "^#   |# wrote" "$out/calibrate.log"
    for shape in "2048 1" "2048 8" "8192 1" "8192 8"; do
      set -- $shape
      printf 'name: h%s\nlayers: 1\nhidden: %s\nheads: %s\nkv_heads: %s\nffn: %s\nswiglu: false\nvocab: 50304\nseq_len: 4096\ntied_embeddings: true\n' \
          "$1" "$1" $(($1 / 128)) $(($1 / 128)) $((4 * $1)) > "$out/h$1.yaml"
      echo "# hidden $1, tp $2, 4096 tokens" >> "$out/estimate.txt"
      build-device/planner estimate --model "$out/h$1.yaml" --cluster "$out/h200-calibrated.yaml" \
          --plan "tp=$2,pp=1,mbs=1,gbs=64" --gpus 8 2>&1 | grep -E "forward  =|backward =" >> "$out/estimate.txt" || true
    done
    cat "$out/estimate.txt"
    ;;
  *)
    echo "usage: $0 prepare|run" >&2
    exit 2
    ;;
esac

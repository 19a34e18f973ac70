#!/usr/bin/env bash
# The layers the build enforces (README, "Design"): each library's sources include only the
# libraries below it. The system include folder holds every Debian header, so the compiler alone
# would not notice a cost file including <nlohmann/json.hpp>; this check does. Exit 1 on a breach.
set -euo pipefail
cd "$(dirname "$0")/.."
fail=0
# check NAME "FILES" "FORBIDDEN (extended regex of include targets)"
check() {
  local name=$1 files=$2 forbidden=$3
  # shellcheck disable=SC2086
  local hits
  hits=$(grep -HnE "^#include [<\"]($forbidden)" $files || true)
  if [[ -n $hits ]]; then
    echo "layer $name includes what it must not:"
    echo "$hits"
    fail=1
  fi
}
base="src/error.cc src/limits.cc src/model.cc src/cluster.cc src/plan.cc
  src/knob_table.cc src/framework.cc include/planner/error.h include/planner/limits.h
  include/planner/format.h include/planner/model.h include/planner/cluster.h
  include/planner/plan.h include/planner/knob_table.h include/planner/framework.h
  include/planner/names.h include/planner/units.h"
# {fmt} is allowed everywhere: planner/format.h (text formatting, in the base) is built on it.
third_party="nlohmann/|yaml-cpp/|spdlog/|CLI/"
check base "$base" "$third_party|planner/(cost|io|report|emit)/|planner/(estimate|search|regress|validate|emit)\.h"
cost="src/cost/*.cc include/planner/cost/*.h src/estimate.cc src/check_plan.cc include/planner/estimate.h"
check cost "$cost" "$third_party|planner/(io|report|emit)/|planner/(search|regress|validate|emit)\.h"
search="src/search.cc src/plot_sample.cc include/planner/search.h include/planner/plot_sample.h"
check search "$search" "$third_party|planner/(io|report|emit)/|planner/(regress|validate|emit)\.h"
io="src/io/file.cc src/io/json.cc src/io/output.cc src/io/yaml_util.cc src/io/model_io.cc
  src/io/hf_config.cc src/io/cluster_io.cc src/io/knobs.cc include/planner/io/*.h"
check io "$io" "planner/(report|emit|cost)/|planner/(search|regress|validate|emit|estimate)\.h"
exit $fail

#!/usr/bin/env bash
# The whole test suite, as CI runs it (.ci/run; the README's second command):
#   0. every C++ and CUDA source formatted as .clang-format says (clang-format --dry-run);
#   1. the plain build (GCC, with the CUDA programs where nvcc is found) and its tests;
#   2. the sanitizer build (clang, -fsanitize=address,undefined, libstdc++ assertions; every
#      report fatal) and the same tests in it, plus each fuzzer over its committed corpus;
#   3. each libFuzzer harness for FUZZ_SECONDS (default 60) from its seeds (fuzz/run.sh).
# Build folders: build/ and build-sanitize/. Set FUZZ_SECONDS=0 to skip step 3.
set -euo pipefail
cd "$(dirname "$0")/.."
stage() { printf '\n==== %s\n' "$*"; }

stage "format check (.clang-format)"
sources=()
while IFS= read -r f; do sources+=("$f"); done < <(git ls-files '*.cc' '*.h' '*.cu' '*.cuh' 2>/dev/null ||
  find src include calibrate tests fuzz bench -name '*.cc' -o -name '*.h' -o -name '*.cu' -o -name '*.cuh')
clang-format --dry-run --Werror "${sources[@]}"
echo "${#sources[@]} files formatted"

stage "plain build and tests"
cmake -S . -B build -G Ninja
cmake --build build
ctest --test-dir build --output-on-failure

stage "sanitizer build (ASan + UBSan, clang) and tests"
CC=clang CXX=clang++ cmake -S . -B build-sanitize -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DPLANNER_SANITIZE=ON -DPLANNER_FUZZ=ON -DPLANNER_CUDA=OFF
cmake --build build-sanitize
ASAN_OPTIONS=detect_leaks=1:halt_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
  ctest --test-dir build-sanitize --output-on-failure

seconds=${FUZZ_SECONDS:-60}
if [ "$seconds" -gt 0 ]; then
  stage "fuzzing: each harness for $seconds s"
  fuzz/run.sh build-sanitize "$seconds"
fi

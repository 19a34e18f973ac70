#!/usr/bin/env bash
# Runs each libFuzzer harness of a -DPLANNER_FUZZ=ON build for a bounded time, from the committed
# seeds (fuzz/corpus/NAME) with its dictionary, and fails on any crash, leak, sanitizer report,
# input slower than 10 s or run over 2 GiB. Prints one line per harness: executions, coverage
# (edges), corpus size and the result. Findings stay in the printed folder.
#
#   fuzz/run.sh BUILD_DIR SECONDS [NAME...]      (default: every harness; PARALLEL=N at once;
#                                                 RUNS=N stops each after N executions)
set -uo pipefail
cd "$(dirname "$0")/.."
if [ $# -lt 2 ]; then
  echo "usage: fuzz/run.sh BUILD_DIR SECONDS [NAME...]" >&2
  exit 2
fi
build=$1 seconds=$2
shift 2
names=("$@")
if [ ${#names[@]} -eq 0 ]; then
  for d in fuzz/corpus/*/; do names+=("$(basename "$d")"); done
fi
parallel=${PARALLEL:-$(nproc)}
out=$(mktemp -d "${TMPDIR:-/tmp}/planner-fuzz.XXXXXX")
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}

one() {
  local n=$1 dir=$out/$1
  mkdir -p "$dir/corpus" "$dir/tmp"
  TMPDIR=$dir/tmp "$build/fuzz/fuzz_$n" -max_total_time="$seconds" ${RUNS:+-runs=$RUNS} -timeout=10 -rss_limit_mb=2048 \
    -malloc_limit_mb=2048 -print_final_stats=1 -dict="fuzz/dict/$n.dict" \
    -artifact_prefix="$dir/" "$dir/corpus" "fuzz/corpus/$n" > "$dir/log" 2>&1
  echo $? > "$dir/rc"
}

running=0
for n in "${names[@]}"; do
  if [ ! -x "$build/fuzz/fuzz_$n" ]; then
    echo "fuzz/run.sh: no harness $build/fuzz/fuzz_$n (configure with -DPLANNER_FUZZ=ON)" >&2
    exit 2
  fi
  one "$n" &
  running=$((running + 1))
  if [ "$running" -ge "$parallel" ]; then wait -n; running=$((running - 1)); fi
done
wait

failed=0
printf "# fuzz/run.sh: %s s per harness%s, %s at once; logs in %s\n" "$seconds" \
  "${RUNS:+ or $RUNS executions}" "$parallel" "$out"
printf "%-20s %12s %9s %7s %7s %9s  %s\n" harness executions "exec/s" edges corpus "peak MB" result
for n in "${names[@]}"; do
  dir=$out/$n log=$out/$n/log
  rc=$(cat "$dir/rc")
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  speed=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  edges=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
  corpus=$(grep -o 'corp: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
  rss=$(sed -n 's/^stat::peak_rss_mb: *//p' "$log" | tail -1)
  result=ok
  if [ "$rc" != 0 ]; then
    result="FAILED (exit $rc): $(grep -m1 -E '^==[0-9]+==ERROR|SUMMARY|ALARM|out-of-memory|deadly signal|runtime error' "$log")"
    failed=1
  fi
  printf "%-20s %12s %9s %7s %7s %9s  %s\n" "$n" "${execs:-?}" "${speed:-?}" "${edges:-?}" "${corpus:-?}" \
    "${rss:-?}" "$result"
done
if [ "$failed" != 0 ]; then
  for n in "${names[@]}"; do
    [ "$(cat "$out/$n/rc")" = 0 ] && continue
    echo "---- $n: the end of its log ($out/$n/log); the input: $(ls "$out/$n" | grep -E '^(crash|leak|timeout|oom|slow-unit)-' | head -1)"
    tail -n 40 "$out/$n/log"
  done
fi
exit "$failed"

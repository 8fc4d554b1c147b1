#!/usr/bin/env bash
# The interpreter's devices on 1 and on 2 threads (issue 17 item 6): wall and
# CPU time of `hilo-run` on the generated TP x FSDP module (32 devices), the
# best of ROUNDS runs each, and the check that both give the same outputs.
# Usage: bench/eval_threads_bench.sh [BUILD_DIR] [ROUNDS]
set -euo pipefail
build=${1:-build}
rounds=${2:-3}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$build/bin/hilo-gen" -L 4 --tp 8 --fsdp 4 --seq 256 --hidden 256 --heads 16 --head-dim 16 -o "$dir/m.hlo"
for threads in 1 2; do
  best_wall="" best_cpu=""
  for ((r = 0; r < rounds; ++r)); do
    HILO_EVAL_THREADS=$threads /usr/bin/time -f "%e %U %S" -o "$dir/t" \
      "$build/bin/hilo-run" "$dir/m.hlo" -o "$dir/out.$threads" > /dev/null
    read -r wall user sys < "$dir/t"
    cpu=$(awk -v u="$user" -v s="$sys" 'BEGIN { printf "%.2f", u + s }')  # awk: part of every Debian, bc is not
    if [[ -z $best_wall ]] || awk -v a="$wall" -v b="$best_wall" 'BEGIN { exit !(a < b) }'; then best_wall=$wall best_cpu=$cpu; fi
  done
  echo "threads=$threads wall=${best_wall}s cpu=${best_cpu}s"
done
cmp -s "$dir/out.1" "$dir/out.2" && echo "outputs identical" || { echo "outputs DIFFER"; exit 1; }

#!/usr/bin/env bash
# Whole-process benchmark of hilo-opt (docs/performance.md).
#
# For generated tensor-parallel x FSDP modules of 170, 1,700 and 17,000
# layers (4k, 37k and 374k instructions; tools/hilo-gen) and for the largest
# modules of ../shared/corpus/valid, it times, with /usr/bin/time -v:
#   wc -w FILE                                        (the reference: the faster
#                                                      of LC_ALL=C and C.UTF-8)
#   hilo-opt FILE -o /dev/null                        (parse + verify + print)
#   hilo-opt FILE --passes=neuron-collective-pipeline (+ the passes, verified at the end)
# Each is run HILO_BENCH_REPS times (default 3); the table shows the fastest
# run (the machine is shared; the minimum is the least disturbed run) and
# the largest peak RSS. Ratios are hilo-opt / wc -w on the same file, for
# wall time and for CPU time (user + sys), and peak RSS / file size. It also
# checks that each generated module round-trips byte for byte.
#
# Usage: scripts/bench.sh [--quick]    (--quick: no 17,000-layer module, 1 rep)
# Environment: HILO_BENCH_BUILD_DIR (default build-bench), HILO_BENCH_REPS,
#              HILO_BENCH_CORPUS_FILES (how many corpus files, default 3).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SHARED=${HILO_SHARED_DIR:-$ROOT/../shared}
BUILD=${HILO_BENCH_BUILD_DIR:-$ROOT/build-bench}
REPS=${HILO_BENCH_REPS:-3}
NCORPUS=${HILO_BENCH_CORPUS_FILES:-3}
LAYERS=(170 1700 17000)
if [[ "${1:-}" == "--quick" ]]; then
  LAYERS=(170 1700)
  REPS=1
fi

[[ -x /usr/bin/time ]] || { echo "bench: /usr/bin/time not found (apt-get install time)" >&2; exit 1; }
cmake -S "$ROOT" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DHILO_BENCH=ON >"$BUILD.configure.log" 2>&1 \
  || { cat "$BUILD.configure.log" >&2; exit 1; }
ninja -C "$BUILD" hilo-opt hilo-gen >/dev/null
OPT="$BUILD/bin/hilo-opt"
GEN="$BUILD/bin/hilo-gen"
BUILD_TYPE=$(grep -m1 '^CMAKE_BUILD_TYPE' "$BUILD/CMakeCache.txt" | cut -d= -f2)

WORK=$(mktemp -d "${TMPDIR:-/tmp}/hilo-bench.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

files=()
for l in "${LAYERS[@]}"; do
  f="$WORK/generated_L$l.hlo"
  "$GEN" --layers "$l" -o "$f" 2>/dev/null
  files+=("$f")
done
if [[ -f "$SHARED/corpus/valid/MANIFEST.tsv" ]]; then
  while IFS= read -r rel; do
    files+=("$SHARED/corpus/valid/$rel")
  done < <(tail -n +2 "$SHARED/corpus/valid/MANIFEST.tsv" | sort -t$'\t' -k5,5nr | head -n "$NCORPUS" | cut -f1)
else
  echo "bench: $SHARED/corpus/valid/MANIFEST.tsv not found: generated modules only" \
       "(set HILO_SHARED_DIR=<folder> for the corpus files)" >&2
fi

# measure LABEL FILE CMD...: runs CMD REPS times; prints "wall cpu maxrss_kb"
# (min wall, min cpu, max rss). Fails if CMD fails.
measure() {
  local best_wall="" best_cpu="" max_rss=0 out="$WORK/time.txt"
  for ((i = 0; i < REPS; i++)); do
    local t0 t1
    t0=$(date +%s%N)
    if ! /usr/bin/time -v -o "$out" "$@" >/dev/null 2>"$WORK/stderr.txt"; then
      echo "bench: failed: $*" >&2
      cat "$WORK/stderr.txt" "$out" >&2
      return 1
    fi
    t1=$(date +%s%N)
    # Wall time from the nanosecond clock (time -v rounds to 10 ms); CPU
    # time and peak RSS from time -v.
    wall=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", (b - a) / 1e9 }')
    user=$(awk -F': ' '/User time/ { print $2 }' "$out")
    sys=$(awk -F': ' '/System time/ { print $2 }' "$out")
    rss=$(awk -F': ' '/Maximum resident set size/ { print $2 }' "$out")
    cpu=$(awk -v u="$user" -v s="$sys" 'BEGIN { printf "%.2f", u + s }')
    best_wall=$(awk -v a="$best_wall" -v b="$wall" 'BEGIN { print (a == "" || b < a) ? b : a }')
    best_cpu=$(awk -v a="$best_cpu" -v b="$cpu" 'BEGIN { print (a == "" || b < a) ? b : a }')
    ((rss > max_rss)) && max_rss=$rss
  done
  echo "$best_wall $best_cpu $max_rss"
}

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b <= 0) b = 0.01; printf "%.1f", a / b }'; }
smaller() { awk -v a="$1" -v b="$2" 'BEGIN { print (b < a) ? b : a }'; }

echo "hilo-opt benchmark: $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, build type $BUILD_TYPE," \
     "best of $REPS, $(wc --version | head -n 1) (the faster of LC_ALL=C and C.UTF-8)"
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
printf '\n%-44s %8s %7s | %6s %6s | %6s %6s %5s %5s %6s %4s | %6s %6s %5s\n' \
  file instrs MB "wc s" "wc cpu" "rt s" "rt cpu" "x wc" "xcpu" "RSS MB" "xin" "pipe s" "p cpu" "x wc"
TSV="$BUILD/bench-results.tsv"
printf 'file\tinstructions\tbytes\twc_wall\twc_cpu\trt_wall\trt_cpu\trt_rss_kb\tpipe_wall\tpipe_cpu\tpipe_rss_kb\n' >"$TSV"
declare -A RT_WALL RT_CPU
status=0
for f in "${files[@]}"; do
  name=$(basename "$f" .hlo)
  short=$name
  ((${#short} > 44)) && short=${short: -44}
  bytes=$(stat -c %s "$f")
  instrs=$(grep -c ' = ' "$f" || true)
  # The reference is the faster `wc -w` of two locales: GNU wc -w is about
  # twice as fast in C.UTF-8 as in C (docs/performance.md, sixth session).
  read -r wc_c_wall wc_c_cpu _ < <(LC_ALL=C measure wc -w "$f")
  read -r wc_u_wall wc_u_cpu _ < <(LC_ALL=C.UTF-8 measure wc -w "$f")
  wc_wall=$(smaller "$wc_c_wall" "$wc_u_wall")
  wc_cpu=$(smaller "$wc_c_cpu" "$wc_u_cpu")
  read -r rt_wall rt_cpu rt_rss < <(measure "$OPT" "$f" -o /dev/null) || { status=1; continue; }
  read -r p_wall p_cpu p_rss < <(measure "$OPT" "$f" --passes=neuron-collective-pipeline -o /dev/null) \
    || { status=1; p_wall=NA; p_cpu=NA; p_rss=0; }
  RT_WALL[$name]=$rt_wall
  RT_CPU[$name]=$rt_cpu
  mb=$(awk -v b="$bytes" 'BEGIN { printf "%.1f", b / 1e6 }')
  printf '%-44s %8d %7s | %6s %6s | %6s %6s %5s %5s %6d %4s | %6s %6s %5s\n' \
    "$short" "$instrs" "$mb" "$wc_wall" "$wc_cpu" "$rt_wall" "$rt_cpu" "$(ratio "$rt_wall" "$wc_wall")" \
    "$(ratio "$rt_cpu" "$wc_cpu")" "$((rt_rss / 1024))" "$(ratio "$((rt_rss * 1024))" "$bytes")" \
    "$p_wall" "$p_cpu" "$(ratio "$p_wall" "$wc_wall")"
  printf '%s\t%d\t%d\t%s\t%s\t%s\t%s\t%d\t%s\t%s\t%d\n' "$name" "$instrs" "$bytes" "$wc_wall" \
    "$wc_cpu" "$rt_wall" "$rt_cpu" "$rt_rss" "$p_wall" "$p_cpu" "$p_rss" >>"$TSV"
  if [[ "$name" == generated_* ]]; then
    "$OPT" "$f" -o "$WORK/printed.hlo"
    if ! cmp -s "$f" "$WORK/printed.hlo"; then
      echo "bench: $name does not round-trip byte for byte" >&2
      status=1
    fi
  fi
done

echo
for ((i = 1; i < ${#LAYERS[@]}; i++)); do
  a="generated_L${LAYERS[i - 1]}"
  b="generated_L${LAYERS[i]}"
  [[ -n "${RT_WALL[$a]:-}" && -n "${RT_WALL[$b]:-}" ]] || continue
  echo "scaling ${LAYERS[i - 1]} -> ${LAYERS[i]} layers ($((LAYERS[i] / LAYERS[i - 1]))x):" \
       "wall $(ratio "${RT_WALL[$b]}" "${RT_WALL[$a]}")x, cpu $(ratio "${RT_CPU[$b]}" "${RT_CPU[$a]}")x"
done
echo "results: $TSV"
exit $status

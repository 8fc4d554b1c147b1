#!/usr/bin/env bash
# Whole-process comparison of the binary proto and the text round trip
# (docs/performance.md, "Proto formats"): hilo-gen -n 300000 written as HLO
# text and as a binary HloModuleProto, then, interleaved so that both see the
# same load, HILO_BENCH_REPS times (default 7):
#   hilo-opt M.hlo -o OUT.hlo      (parse + verify + print)
#   hilo-opt M.pb  -o OUT.pb       (decode + verify + encode)
# (to files: a binary proto to a file is streamed, to /dev/null it is held
# whole first; docs/performance.md "Proto formats")
#   the same with HILO_PROTO_GENERATED=1 (every instruction through
#     protobuf's generated message, before the hand-written reader and writer)
#   the same with HILO_PROTO_WHOLE_MESSAGE=1 (the reader before streaming)
# under /usr/bin/time -v. Prints the minimum wall and CPU time and the largest
# peak RSS of each, their ratios, and the load average before and after.
# Environment: HILO_BENCH_BUILD_DIR (default build), HILO_BENCH_REPS,
# HILO_BENCH_INSTRUCTIONS (default 300000).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${HILO_BENCH_BUILD_DIR:-$ROOT/build}
REPS=${HILO_BENCH_REPS:-7}
N=${HILO_BENCH_INSTRUCTIONS:-300000}
[[ -x /usr/bin/time ]] || { echo "bench-proto: /usr/bin/time not found" >&2; exit 1; }
ninja -C "$BUILD" hilo-opt hilo-gen >/dev/null
OPT="$BUILD/bin/hilo-opt"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/hilo-bench-proto.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

"$BUILD/bin/hilo-gen" -n "$N" -o "$WORK/m.hlo" 2>/dev/null
"$OPT" "$WORK/m.hlo" -o "$WORK/m.pb"
# Both forms give the same module.
"$OPT" "$WORK/m.pb" --emit=hlo | cmp -s - <("$OPT" "$WORK/m.hlo") \
  || { echo "bench-proto: the proto does not give the text's module back" >&2; exit 1; }
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "sizes: text $(stat -c %s "$WORK/m.hlo") bytes, binary proto $(stat -c %s "$WORK/m.pb") bytes"

declare -A wall cpu rss
run() {  # run NAME FILE [ENV=VALUE]
  env ${3:-} /usr/bin/time -v "$OPT" "$2" -o "$WORK/out.${2##*.}" 2>"$WORK/t.txt" >/dev/null
  local w c r
  w=$(grep 'Elapsed (wall clock)' "$WORK/t.txt" | awk '{print $NF}' | awk -F: '{ if (NF == 3) print $1*3600 + $2*60 + $3; else print $1*60 + $2 }')
  c=$(awk '/User time/ {u=$NF} /System time/ {s=$NF} END {print u + s}' "$WORK/t.txt")
  r=$(grep 'Maximum resident' "$WORK/t.txt" | awk '{print $NF}')
  if [[ -z "${wall[$1]:-}" ]] || awk "BEGIN {exit !($w < ${wall[$1]})}"; then wall[$1]=$w; fi
  if [[ -z "${cpu[$1]:-}" ]] || awk "BEGIN {exit !($c < ${cpu[$1]})}"; then cpu[$1]=$c; fi
  if [[ -z "${rss[$1]:-}" ]] || (( r > ${rss[$1]} )); then rss[$1]=$r; fi
}
for ((i = 0; i < REPS; i++)); do
  run text "$WORK/m.hlo"
  run proto "$WORK/m.pb"
  run generated "$WORK/m.pb" HILO_PROTO_GENERATED=1
  run whole "$WORK/m.pb" HILO_PROTO_WHOLE_MESSAGE=1
done
printf '%-9s %10s %10s %14s\n' form "wall s" "cpu s" "peak RSS KiB"
for f in text proto generated whole; do
  printf '%-9s %10s %10s %14s\n' "$f" "${wall[$f]}" "${cpu[$f]}" "${rss[$f]}"
done
awk -v tw="${wall[text]}" -v pw="${wall[proto]}" -v tc="${cpu[text]}" -v pc="${cpu[proto]}" \
    -v tr="${rss[text]}" -v pr="${rss[proto]}" \
    -v wc="${cpu[whole]}" -v wr="${rss[whole]}" -v gc="${cpu[generated]}" -v gr="${rss[generated]}" \
    'BEGIN {printf "proto / text: wall %.2fx, cpu %.2fx, peak RSS %.2fx\n", pw / tw, pc / tc, pr / tr;
           printf "generated messages / text: cpu %.2fx, peak RSS %.2fx\n", gc / tc, gr / tr;
           printf "whole-message reader / text: cpu %.2fx, peak RSS %.2fx\n", wc / tc, wr / tr}'
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"

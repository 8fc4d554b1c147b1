#!/bin/sh
# Peak RSS (KiB, /usr/bin/time -f %M) of `BINARY FILE -o /dev/null`, 3 runs each, for the
# modules of issue 18 goal 2 (docs/performance.md). The ratio is bytes over bytes (KiB x 1024
# over the file size; until the twenty-eighth session it was KiB over kB, 2.4% lower).
# Inputs from scripts/perf-inputs.sh. Usage: scripts/peak-rss.sh BINARY [DIR]
set -eu
bin=$1
dir=${2:-/tmp}
corpus=${HILO_SHARED_DIR:-$(dirname "$0")/../../shared}/corpus/valid/openxla-xla
for f in "$dir/tiny.hlo" "$corpus/xla__tools__benchmarks__hlo__hlo_mixtral_8x7b_bf16_1x8.hlo" \
    "$corpus/xla__tools__benchmarks__hlo__hlo_llama31_8b_bf16_1x8.hlo" "$dir/L300.hlo" "$dir/L600.hlo" \
    "$dir/L1700.hlo" "$dir/L20000.hlo" "$dir/many.hlo"; do
  size=$(stat -c %s "$f")
  runs=""
  for i in 1 2 3; do
    kib=$(/usr/bin/time -f %M "$bin" "$f" -o /dev/null 2>&1 >/dev/null | tail -1)
    runs="$runs $kib"
  done
  min=$(echo $runs | tr ' ' '\n' | sort -n | head -1)
  printf '%-24s %12s bytes  KiB:%s  %sx\n' "$(basename "$f" | sed 's/xla__tools__benchmarks__hlo__hlo_//')" \
    "$size" "$runs" "$(python3 -c "print(f'{$min*1024/$size:.2f}' if $size > 1000 else '-')")"
done

#!/bin/sh
# Issue 18 goal 1 in instructions: callgrind's whole-process count of hilo-opt's round
# trip, the pipeline + dce, and each pass alone, on one module. Instruction counts repeat
# exactly for the same binary, input and environment, whatever else the machine is doing,
# so they can be compared across sessions where wall time cannot.
# Usage: scripts/callgrind-passes.sh BIN OUTDIR [MODULE]   (MODULE: /tmp/L17000.hlo;
#        scripts/perf-inputs.sh writes it). Extra environment passes through, e.g.
#        HILO_VERIFY_THREAD=0 scripts/callgrind-passes.sh ...
# Prints one line per command: name, instructions, extra over the round trip in percent.
# Keeps each profile as OUTDIR/NAME.cg for callgrind_annotate.
set -eu
bin=$1 out=$2 module=${3:-/tmp/L17000.hlo}
mkdir -p "$out"
rt=
for p in rt neuron-collective-pipeline,dce neuron_looped_einsum_replacer \
    aws_neuron_collective_stream_id_injector neuron_unique_channel_id_enforcer \
    neuron_looped_einsum_token_replacer collective-stream-id-checker dce; do
  flag=--passes=$p; [ "$p" = rt ] && flag=
  name=$(echo "$p" | tr -c 'a-z_\n' _)
  n=$(HILO_MALLOC_TUNABLES=${HILO_MALLOC_TUNABLES:-0} valgrind --tool=callgrind \
        --callgrind-out-file="$out/$name.cg" "$bin" "$module" $flag -o /dev/null 2>&1 |
      sed -n 's/.*Collected : //p')
  [ -n "$n" ] || { echo "callgrind-passes: no count for $p" >&2; exit 1; }
  if [ -z "$rt" ]; then rt=$n; echo "$name $n"; else
    awk -v n="$n" -v r="$rt" -v p="$name" 'BEGIN { printf "%s %s %+.2f%%\n", p, n, (n / r - 1) * 100 }'
  fi
done

#!/usr/bin/env bash
# Runs hilo on the graphs Neuron's persistent compile cache holds.
#
# torch-neuronx and optimum-neuron keep each compiled graph as
#   /var/tmp/neuron-compile-cache/<compiler version>/MODULE_<hash>/model.hlo_module.pb
# (older releases: model.hlo.pb), a binary xla.HloModuleProto. hilo-opt reads
# it as it reads HLO text; see docs/proto-format.md.
#
#   examples/neuron_compile_cache.sh [CACHE_DIR] [--num-partitions=N ...]
#
# For every module: print it as HLO text (MODULE_x.hlo), run the Neuron
# collective pipeline and write the result as a proto again (MODULE_x.out.pb),
# into ./neuron-cache-out/. The proto does not say how many replicas or
# partitions the graph ran on (XLA keeps that in its module config): give
# --replica-count / --num-partitions when the passes need them (the stream-id
# injector classifies replica groups by the partition count).
set -euo pipefail
CACHE=${1:-/var/tmp/neuron-compile-cache}
shift || true
BIN=${HILO_BIN:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/build/bin}
OUT=neuron-cache-out
mkdir -p "$OUT"
found=0
while IFS= read -r -d '' pb; do
  found=1
  name=$(basename "$(dirname "$pb")")
  "$BIN/hilo-opt" "$pb" --emit=hlo -o "$OUT/$name.hlo" "$@"
  "$BIN/hilo-opt" "$pb" --passes=neuron-collective-pipeline -o "$OUT/$name.out.pb" "$@"
  echo "$pb -> $OUT/$name.hlo, $OUT/$name.out.pb"
done < <(find "$CACHE" \( -name model.hlo_module.pb -o -name model.hlo.pb \) -print0 2>/dev/null)
[[ $found == 1 ]] || echo "no model.hlo_module.pb under $CACHE" >&2

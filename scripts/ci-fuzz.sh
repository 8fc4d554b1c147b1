#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/) with clang-14, ASan and UBSan in
# build-fuzz/, seeds them from ../shared/corpus (small files copied to a
# temporary directory; nothing is committed) and tests/fuzz-regressions/, and
# runs them for HILO_FUZZ_SECONDS in all (default 60): two thirds for the HLO
# text round trip, one third for the proto reader (its seeds: the corpus's
# text protos, and binary protos of small corpus modules when build/bin/
# has a hilo-opt to write them). Exits non-zero on any
# crash, sanitizer report, leak, timeout (>10 s on one input) or
# out-of-memory (>2 GB), and on any build failure. A crashing input is kept
# in build-fuzz/artifacts/; add it to tests/fuzz-regressions/ (see
# docs/robustness.md).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SHARED=${HILO_SHARED_DIR:-$ROOT/../shared}
BUILD=${HILO_FUZZ_BUILD_DIR:-$ROOT/build-fuzz}
SECONDS_TO_RUN=${HILO_FUZZ_SECONDS:-60}
MAX_SEED_BYTES=${HILO_FUZZ_MAX_SEED_BYTES:-16384}

for tool in clang++-14 cmake ninja; do
  command -v "$tool" >/dev/null || { echo "ci-fuzz: $tool not found (run scripts/setup.sh)" >&2; exit 1; }
done

# Whether a missing shared folder is an error, by the tests' rule
# (tests/unit/shared_dir.h); .ci/run sets HILO_REQUIRE_SHARED=1.
shared_required() {
  [[ -n ${HILO_SHARED_DIR:-} ]] && return 0
  if [[ -n ${HILO_REQUIRE_SHARED:-} ]]; then
    [[ $HILO_REQUIRE_SHARED != 0 ]]
    return
  fi
  [[ ${CI:-} == true ]]
}

if [[ ! -d "$SHARED/corpus" ]] && shared_required; then
  echo "ci-fuzz: $SHARED/corpus not found, and the shared folder is required here" \
       "(HILO_SHARED_DIR, HILO_REQUIRE_SHARED or CI=true is set)" >&2
  exit 1
fi

cmake -S "$ROOT" -B "$BUILD" -G Ninja \
  -DCMAKE_CXX_COMPILER=clang++-14 -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DHILO_FUZZ=ON -DHILO_SANITIZE=ON -DHILO_BENCH=OFF \
  -DHILO_WERROR="${HILO_WERROR:-ON}" >"$BUILD.configure.log" 2>&1 \
  || { cat "$BUILD.configure.log" >&2; echo "ci-fuzz: configure failed" >&2; exit 1; }
ninja -C "$BUILD" hlo_round_trip_fuzzer proto_reader_fuzzer

WORK=$(mktemp -d "${TMPDIR:-/tmp}/hilo-fuzz.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$WORK/seeds" "$WORK/new" "$WORK/proto-seeds" "$WORK/proto-new" "$BUILD/artifacts"

# Seeds: every corpus file up to MAX_SEED_BYTES (valid, legacy and invalid
# alike) and every regression input. Names are flattened; libFuzzer only
# reads the contents.
n=0
if [[ -d "$SHARED/corpus" ]]; then
  while IFS= read -r -d '' f; do
    cp "$f" "$WORK/seeds/$(printf '%05d' "$n").hlo"
    n=$((n + 1))
  done < <(find "$SHARED/corpus" -name '*.hlo' -size -"$((MAX_SEED_BYTES + 1))"c -print0 | sort -z)
else
  echo "ci-fuzz: warning: $SHARED/corpus not found, seeding from regressions only" \
       "(set HILO_SHARED_DIR=<folder> to seed from the corpus)" >&2
fi
for f in "$ROOT"/tests/fuzz-regressions/*; do
  [[ -f "$f" && "$(basename "$f")" != README.md ]] || continue
  cp "$f" "$WORK/seeds/regression-$(basename "$f")"
  n=$((n + 1))
done
echo "ci-fuzz: $n seed files, running for ${SECONDS_TO_RUN}s"

# Dictionary: every opcode name of hilo's opcode table (hlo_opcode.h, which
# hlo_opcode_test checks against the specification's) and the syntax words
# of the text format.
DICT="$WORK/hlo.dict"
{
  sed -n -e 's/^ *V(k[A-Za-z0-9]*, 0x[0-9a-f]*, \("[^"]*"\).*/\1/p' "$ROOT/src/hilo/ir/hlo_opcode.h"
  for w in HloModule ENTRY ROOT parameter constant tuple get-tuple-element index= \
           replica_groups= channel_id= dimensions= to_apply= metadata= sharding= \
           frontend_attributes= backend_config= control-predecessors= calls= body= condition= \
           lhs_contracting_dims= rhs_contracting_dims= lhs_batch_dims= rhs_batch_dims= \
           custom_call_target= api_version= source_target_pairs= use_global_device_ids=true \
           entry_computation_layout= is_scheduled=true replica_count= num_partitions= \
           collective_type= fsdp_all_gather tp_all_gather tp_reduce_scatter stream_id \
           pred s32 s64 u8 u32 f16 bf16 f32 f64 c64 token opaque '<=' '->' '/*index=' '{...}' \
           'T(1,0)' '{1,0}' '{maximal device=0}' '{replicated}' 'op_name=' 'source_line='; do
    printf '"%s"\n' "$w"
  done
} > "$DICT"

# Proto seeds: XLA's text protos, regressions, and up to 200 small corpus
# modules written as binary protos by an existing build's hilo-opt.
p=0
for f in "$SHARED"/corpus/proto/*.pbtxt "$ROOT"/tests/fuzz-regressions/proto-*; do
  [[ -f "$f" ]] || continue
  cp "$f" "$WORK/proto-seeds/$(printf '%05d' "$p")"
  p=$((p + 1))
done
if [[ -x "$ROOT/build/bin/hilo-opt" && -d "$SHARED/corpus/valid" ]]; then
  while IFS= read -r -d '' f; do
    "$ROOT/build/bin/hilo-opt" "$f" --no-verify -o "$WORK/proto-seeds/$(printf '%05d' "$p").pb" \
      2>/dev/null && p=$((p + 1))
    [[ $p -lt 200 ]] || break
  done < <(find "$SHARED/corpus/valid" -name '*.hlo' -size -4097c -print0 | sort -z)
fi
echo "ci-fuzz: $p proto seed files"

# run_fuzzer TARGET SECONDS NEW_DIR SEED_DIR [libFuzzer flags...]
run_fuzzer() {
  local target=$1 seconds=$2 new=$3 seeds=$4
  shift 4
  set +e
  ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1} \
  UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
    "$BUILD/bin/$target" \
    -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 \
    -max_len="$MAX_SEED_BYTES" -print_final_stats=1 \
    -artifact_prefix="$BUILD/artifacts/$target-" "$@" "$new" "$seeds" 2>&1 \
    | tee "$BUILD/$target.log" | tail -n 40
  local status=${PIPESTATUS[0]}
  set -e
  if [[ $status -ne 0 ]]; then
    echo "ci-fuzz: $target FAILED (libFuzzer exit status $status); full log in" \
         "$BUILD/$target.log; the input is in $BUILD/artifacts/" >&2
    exit 1
  fi
}
TEXT_SECONDS=$((SECONDS_TO_RUN * 2 / 3))
PROTO_SECONDS=$((SECONDS_TO_RUN - TEXT_SECONDS))
run_fuzzer hlo_round_trip_fuzzer "$TEXT_SECONDS" "$WORK/new" "$WORK/seeds" -dict="$DICT"
run_fuzzer proto_reader_fuzzer "$PROTO_SECONDS" "$WORK/proto-new" "$WORK/proto-seeds"
echo "ci-fuzz: OK (${SECONDS_TO_RUN}s, no crash)"

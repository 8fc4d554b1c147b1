// The interpreter's dot kernel (issue 17 item 6): DotGeneral on f32
// [n, n] x [n, n], counted as 2 n^3 floating-point operations per iteration
// (items/s = FLOP/s). Target: >= 20 GFLOP/s for n = 1024 on one core.
#include <benchmark/benchmark.h>

#include "hilo/eval/ops.h"
#include "hilo/eval/value.h"

namespace hilo {
namespace eval {
namespace {

void BM_DotF32(benchmark::State& state) {
  const int64_t n = state.range(0);
  Array a(PrimitiveType::F32, {n, n}), b(PrimitiveType::F32, {n, n});
  FillPseudoRandom(1, &a);
  FillPseudoRandom(2, &b);
  const int64_t lhs_c[] = {1}, rhs_c[] = {0};
  for (auto _ : state) {
    auto r = DotGeneral(a, b, {}, {}, lhs_c, rhs_c, PrimitiveType::F32);
    benchmark::DoNotOptimize(r);
  }
  state.SetItemsProcessed(state.iterations() * 2 * n * n * n);
}
BENCHMARK(BM_DotF32)->Arg(256)->Arg(1024)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace eval
}  // namespace hilo

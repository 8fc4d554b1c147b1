// The interpreter's convolution (issue 17 items 2 and 6): im2col blocks times
// the kernel matrix on Eigen's GEMM. Counted as 2 x output elements x
// (window elements x input features per group) FLOP per iteration (items/s =
// FLOP/s).
#include <benchmark/benchmark.h>

#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "hilo/eval/ops.h"
#include "hilo/eval/value.h"
#include "hilo/text/parser.h"

namespace hilo {
namespace eval {
namespace {

// A 3x3, pad 1 NHWC convolution of [n, hw, hw, c] with `groups` feature groups
// and c output features.
void RunConv(benchmark::State& state, int64_t n, int64_t hw, int64_t c, int64_t groups) {
  const std::string x = absl::StrCat("f32[", n, ",", hw, ",", hw, ",", c, "]");
  const std::string k = absl::StrCat("f32[3,3,", c / groups, ",", c, "]");
  const std::string text = absl::StrCat("HloModule m\nENTRY e {\n  x = ", x, " parameter(0)\n  k = ", k,
                                        " parameter(1)\n  ROOT c = ", x,
                                        " convolution(x, k), window={size=3x3 pad=1_1x1_1}, "
                                        "dim_labels=b01f_01io->b01f, feature_group_count=",
                                        groups, "\n}\n");
  auto module = ParseHloModule(text);
  if (!module.ok()) {
    state.SkipWithError(std::string(module.status().message()).c_str());
    return;
  }
  const HloInstruction* conv = (*module)->entry_computation()->root_instruction();
  Array a(PrimitiveType::F32, {n, hw, hw, c}), b(PrimitiveType::F32, {3, 3, c / groups, c});
  FillPseudoRandom(1, &a);
  FillPseudoRandom(2, &b);
  const Value va = Value::FromArray(a), vb = Value::FromArray(b);
  const Value* ops[] = {&va, &vb};
  ApplyFn none = [](const HloComputation*, std::vector<Value>) -> absl::StatusOr<Value> {
    return absl::InternalError("unused");
  };
  for (auto _ : state) {
    auto r = EvaluateLocalInstruction(*conv, ops, DeviceIds{}, none);
    if (!r.ok()) {
      state.SkipWithError(std::string(r.status().message()).c_str());
      return;
    }
    benchmark::DoNotOptimize(r);
  }
  state.SetItemsProcessed(state.iterations() * 2 * n * hw * hw * c * 9 * (c / groups));
}

void BM_ConvF32_3x3(benchmark::State& state) { RunConv(state, 8, 56, state.range(0), 1); }
BENCHMARK(BM_ConvF32_3x3)->Arg(64)->Unit(benchmark::kMillisecond);

void BM_ConvF32_Depthwise3x3(benchmark::State& state) {
  RunConv(state, 8, 56, state.range(0), state.range(0));
}
BENCHMARK(BM_ConvF32_Depthwise3x3)->Arg(64)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace eval
}  // namespace hilo

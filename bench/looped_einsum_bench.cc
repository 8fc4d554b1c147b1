// neuron_looped_einsum_replacer (and the token replacer) on generated
// modules with N candidate dots, N up to 10,000: the time per candidate must
// stay flat (the benchmark reports the fitted complexity; O(N) expected).
//
// Every candidate has its own weight parameter and all-gather; a quarter are
// LHS folds, a quarter RHS folds, a quarter token-threaded LHS-NxD folds and
// a quarter rank-2 gathers the pass explains and leaves alone, all in one
// entry computation whose root (a tree of tuples) reads every dot.
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "benchmark/benchmark.h"
#include "hilo/ir/hlo_computation.h"
#include "hilo/ir/hlo_instruction.h"
#include "hilo/ir/hlo_module.h"
#include "hilo/passes/neuron_looped_einsum_replacer.h"
#include "hilo/passes/neuron_looped_einsum_token_replacer.h"

namespace hilo {
namespace {

Shape BF16(std::vector<int64_t> dims) { return Shape::MakeArray(PrimitiveType::BF16, std::move(dims)); }

std::unique_ptr<HloModule> MakeModule(int64_t candidates) {
  auto module = std::make_unique<HloModule>("looped_einsum_bench");
  module->set_replica_count(4);
  HloComputation* comp =
      module->AddComputation(std::make_unique<HloComputation>("main"), /*is_entry=*/true);
  int64_t next_param = 0;
  auto param = [&](Shape shape) {
    const int64_t number = next_param++;
    return comp->AddInstruction(
        HloInstruction::CreateParameter(number, std::move(shape), absl::StrCat("p", number)));
  };
  auto all_gather = [&](std::vector<HloInstruction*> operands, Shape shape) {
    HloInstruction* ag = comp->AddInstruction(
        HloInstruction::Create(HloOpcode::kAllGather, std::move(shape), operands));
    ag->set_dimensions({0});
    ag->set_replica_groups(ReplicaGroups::Explicit({{0, 1, 2, 3}}));
    return ag;
  };
  auto dot = [&](HloInstruction* lhs, HloInstruction* rhs, Shape shape, int64_t lc, int64_t rc) {
    HloInstruction* d =
        comp->AddInstruction(HloInstruction::Create(HloOpcode::kDot, std::move(shape), {lhs, rhs}));
    d->mutable_dot_dimension_numbers()->lhs_contracting_dimensions = {lc};
    d->mutable_dot_dimension_numbers()->rhs_contracting_dimensions = {rc};
    return d;
  };
  HloInstruction* x = param(BF16({16, 32}));
  HloInstruction* x2 = param(BF16({32, 16}));
  HloInstruction* tok = param(BF16({}));
  std::vector<HloInstruction*> outs;
  std::vector<Shape> out_shapes;
  for (int64_t i = 0; i < candidates; ++i) {
    HloInstruction* out = nullptr;
    switch (i % 4) {
      case 0: {  // LHS
        HloInstruction* ag = all_gather({param(BF16({4, 8, 16}))}, BF16({16, 8, 16}));
        out = dot(ag, x, BF16({16, 8, 32}), 2, 0);
        break;
      }
      case 1: {  // RHS
        HloInstruction* ag = all_gather({param(BF16({4, 8, 16}))}, BF16({16, 8, 16}));
        out = dot(x2, ag, BF16({32, 8, 16}), 1, 0);
        break;
      }
      case 2: {  // LHS-NxD, token-threaded
        Shape tuple = Shape::MakeTuple({BF16({16, 8, 16}), BF16({})});
        HloInstruction* ag = all_gather({param(BF16({4, 8, 16})), tok}, tuple);
        HloInstruction* data = comp->AddInstruction(
            HloInstruction::CreateGetTupleElement(BF16({16, 8, 16}), ag, 0));
        HloInstruction* token =
            comp->AddInstruction(HloInstruction::CreateGetTupleElement(BF16({}), ag, 1));
        outs.push_back(token);
        out_shapes.push_back(token->shape());
        HloInstruction* flat = comp->AddInstruction(HloInstruction::CreateReshape(BF16({128, 16}), data));
        out = dot(flat, x, BF16({128, 32}), 1, 0);
        break;
      }
      default: {  // rank-2 gather on dimension 0: explained, not folded
        HloInstruction* ag = all_gather({param(BF16({8, 16}))}, BF16({32, 16}));
        out = dot(ag, x, BF16({32, 32}), 1, 0);
        break;
      }
    }
    outs.push_back(out);
    out_shapes.push_back(out->shape());
  }
  // The outputs are gathered by a tree of 8-operand tuples, not one tuple of
  // N operands: replacing one operand of an instruction scans its operand
  // list (HloInstruction::ReplaceOperandWithAll, as in XLA), so N dots
  // feeding one N-operand tuple cost O(N^2) in the IR whatever the pass
  // does (measured in docs/passes/looped-einsum.md).
  constexpr size_t kFanIn = 8;
  while (outs.size() > 1) {
    std::vector<HloInstruction*> next;
    std::vector<Shape> next_shapes;
    for (size_t i = 0; i < outs.size(); i += kFanIn) {
      const size_t end = std::min(outs.size(), i + kFanIn);
      std::vector<HloInstruction*> group(outs.begin() + i, outs.begin() + end);
      std::vector<Shape> shapes(out_shapes.begin() + i, out_shapes.begin() + end);
      Shape shape = Shape::MakeTuple(shapes);
      next.push_back(comp->AddInstruction(HloInstruction::Create(HloOpcode::kTuple, shape, group)));
      next_shapes.push_back(std::move(shape));
    }
    outs = std::move(next);
    out_shapes = std::move(next_shapes);
  }
  comp->set_root_instruction(outs[0]);
  return module;
}

void BM_LoopedEinsumReplacer(benchmark::State& state) {
  const int64_t n = state.range(0);
  PassOptions options;
  options.collective_matmul_nxd = true;  // flags, so the environment can not change the result
  options.collective_permute_aggressive = false;
  options.sb_to_sb_threshold_mb = 16;
  for (auto _ : state) {
    state.PauseTiming();
    std::unique_ptr<HloModule> module = MakeModule(n);
    state.ResumeTiming();
    NeuronLoopedEinsumReplacer replacer(options);
    absl::StatusOr<bool> changed = replacer.Run(module.get());
    NeuronLoopedEinsumTokenReplacer token_replacer(options);
    absl::StatusOr<bool> cleaned = token_replacer.Run(module.get());
    if (!changed.ok() || !*changed || !cleaned.ok() || !*cleaned ||
        static_cast<int64_t>(replacer.candidates().size()) != n) {
      state.SkipWithError("the passes did not fold the generated module as expected");
      break;
    }
    benchmark::DoNotOptimize(replacer.Explanations());
    state.PauseTiming();
    module.reset();
    state.ResumeTiming();
  }
  state.SetComplexityN(n);
  state.counters["candidates"] = static_cast<double>(n);
}
BENCHMARK(BM_LoopedEinsumReplacer)
    ->RangeMultiplier(2)
    ->Range(625, 10000)
    ->Arg(10000)
    ->Unit(benchmark::kMillisecond)
    ->Complexity(benchmark::oN);

}  // namespace
}  // namespace hilo

// Cost of the three stream-id / channel-id passes relative to the round trip
// (issue 4: together they add at most 10% to parse + verify + print of the
// 300,000-instruction generated module). See docs/performance.md.
//
// BM_RoundTrip: parse + verify + print. BM_CollectivePasses: the checker,
// the injector and the enforcer on a freshly parsed module (the parse is
// excluded from the timing). The ratio of the two is the figure.
#include <cstdio>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "benchmark/benchmark.h"
#include "hilo/analysis/hlo_verifier.h"
#include "hilo/ir/hlo_module.h"
#include "hilo/pass/pass_options.h"
#include "hilo/passes/collective_stream_id_checker.h"
#include "hilo/passes/neuron_collective_stream_id_injector.h"
#include "hilo/passes/neuron_unique_channel_id_enforcer.h"
#include "hilo/text/parser.h"
#include "hilo/text/printer.h"
#include "transformer_generator.h"

namespace hilo {
namespace {

const std::string& Module300k() {
  static const std::string* const text = [] {
    gen::TransformerOptions options;
    options.layers = gen::LayersForInstructionCount(300000);
    auto generated = gen::GenerateTransformerModule(options);
    if (!generated.ok()) {
      std::fprintf(stderr, "generator: %s\n", std::string(generated.status().message()).c_str());
      std::abort();
    }
    return new std::string(*std::move(generated));
  }();
  return *text;
}

std::unique_ptr<HloModule> MustParse(benchmark::State& state) {
  auto module = ParseHloModule(Module300k());
  if (!module.ok()) {
    state.SkipWithError(std::string(module.status().message()).c_str());
    return nullptr;
  }
  return *std::move(module);
}

void BM_RoundTrip(benchmark::State& state) {
  for (auto _ : state) {
    std::unique_ptr<HloModule> module = MustParse(state);
    if (module == nullptr) return;
    if (!VerifyHloModule(*module).ok()) {
      state.SkipWithError("generated module does not verify");
      return;
    }
    std::string printed = PrintHloModule(*module);
    benchmark::DoNotOptimize(printed.data());
    state.PauseTiming();  // freeing is not part of the round trip
    module.reset();
    state.ResumeTiming();
  }
  state.counters["instructions"] = 300000;
}
BENCHMARK(BM_RoundTrip)->Unit(benchmark::kMillisecond)->MinTime(2);

void BM_CollectivePasses(benchmark::State& state) {
  PassOptions options;
  for (auto _ : state) {
    state.PauseTiming();
    std::unique_ptr<HloModule> module = MustParse(state);
    if (module == nullptr) return;
    CollectiveStreamIdChecker checker(options);
    NeuronCollectiveStreamIdInjector injector(options);
    NeuronUniqueChannelIdEnforcer enforcer(options);
    state.ResumeTiming();
    bool ok = checker.Run(module.get()).ok() && injector.Run(module.get()).ok() &&
              enforcer.Run(module.get()).ok();
    state.PauseTiming();
    if (!ok) {
      state.SkipWithError("a pass failed");
      return;
    }
    module.reset();
    state.ResumeTiming();
  }
}
BENCHMARK(BM_CollectivePasses)->Unit(benchmark::kMillisecond)->MinTime(2);

// Each pass alone, on a module the earlier passes of the pipeline already
// ran on (as in the pipeline), to see where the time goes.
template <int kPass>
void BM_OnePass(benchmark::State& state) {
  PassOptions options;
  for (auto _ : state) {
    state.PauseTiming();
    std::unique_ptr<HloModule> module = MustParse(state);
    if (module == nullptr) return;
    CollectiveStreamIdChecker checker(options);
    NeuronCollectiveStreamIdInjector injector(options);
    NeuronUniqueChannelIdEnforcer enforcer(options);
    bool ok = true;
    if (kPass > 0) ok = ok && checker.Run(module.get()).ok();
    if (kPass > 1) ok = ok && injector.Run(module.get()).ok();
    state.ResumeTiming();
    if (kPass == 0) ok = ok && checker.Run(module.get()).ok();
    if (kPass == 1) ok = ok && injector.Run(module.get()).ok();
    if (kPass == 2) ok = ok && enforcer.Run(module.get()).ok();
    state.PauseTiming();
    if (!ok) {
      state.SkipWithError("a pass failed");
      return;
    }
    module.reset();
    state.ResumeTiming();
  }
}
BENCHMARK(BM_OnePass<0>)->Name("BM_Checker")->Unit(benchmark::kMillisecond)->MinTime(1);
BENCHMARK(BM_OnePass<1>)->Name("BM_Injector")->Unit(benchmark::kMillisecond)->MinTime(1);
BENCHMARK(BM_OnePass<2>)->Name("BM_Enforcer")->Unit(benchmark::kMillisecond)->MinTime(1);

}  // namespace
}  // namespace hilo

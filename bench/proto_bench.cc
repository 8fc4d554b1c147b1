// In-process benchmarks of the proto formats against the text format on the
// generated 300,000-instruction module (tools/hilo-gen -n 300000) and a
// 30,000-instruction one: text parse + print against binary proto decode +
// encode (bytes in, bytes out, no verifier), and each half alone. The
// whole-process comparison, with peak memory, is scripts/bench-proto.sh; the
// figures are in docs/performance.md.
#include <cstdio>
#include <map>
#include <memory>
#include <string>

#include "benchmark/benchmark.h"
#include "hilo/proto/module_file.h"
#include "hilo/proto/wire_split.h"
#include "hilo/text/parser.h"
#include "hilo/text/printer.h"
#include "transformer_generator.h"

namespace hilo {
namespace {

struct Forms {
  std::string text;
  std::string binary;
};

// The module of about `instructions` instructions, as text and as a binary proto.
const Forms& Generated(int64_t instructions) {
  static auto* cache = new std::map<int64_t, Forms>();
  auto it = cache->find(instructions);
  if (it != cache->end()) return it->second;
  gen::TransformerOptions options;
  options.layers = gen::LayersForInstructionCount(instructions);
  absl::StatusOr<std::string> text = gen::GenerateTransformerModule(options);
  if (!text.ok()) std::abort();
  auto module = ParseHloModule(*text);
  if (!module.ok()) std::abort();
  absl::StatusOr<std::string> binary = SerializeModule(**module, ModuleFormat::kProto);
  if (!binary.ok()) std::abort();
  return cache->emplace(instructions, Forms{*std::move(text), *std::move(binary)}).first->second;
}

void BM_TextRoundTrip(benchmark::State& state) {
  const Forms& forms = Generated(state.range(0));
  for (auto _ : state) {
    auto module = ParseHloModule(forms.text);
    std::string out = PrintHloModule(**module);
    benchmark::DoNotOptimize(out);
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(forms.text.size()));
}

void BM_ProtoRoundTrip(benchmark::State& state) {
  const Forms& forms = Generated(state.range(0));
  for (auto _ : state) {
    auto loaded = LoadModule(forms.binary, "m.pb");
    auto out = SerializeModule(*loaded->module, ModuleFormat::kProto);
    benchmark::DoNotOptimize(out);
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(forms.binary.size()));
}

void BM_ProtoRead(benchmark::State& state) {
  const Forms& forms = Generated(state.range(0));
  for (auto _ : state) {
    auto loaded = LoadModule(forms.binary, "m.pb");
    benchmark::DoNotOptimize(loaded);
  }
}

void BM_ProtoWrite(benchmark::State& state) {
  const Forms& forms = Generated(state.range(0));
  auto module = ParseHloModule(forms.text);
  for (auto _ : state) {
    auto out = SerializeModule(**module, ModuleFormat::kProto);
    benchmark::DoNotOptimize(out);
  }
}

// The floor of streamed reading: the instructions' bytes found and each
// parsed by protobuf into one reused message, nothing built.
void BM_ProtoParseOnly(benchmark::State& state) {
  const Forms& forms = Generated(state.range(0));
  for (auto _ : state) {
    std::vector<absl::string_view> comps, insts;
    std::string rest;
    SplitField(forms.binary, 3, &comps, &rest);
    for (absl::string_view c : comps) SplitField(c, 2, &insts, &rest);
    int64_t names = 0;
    xla::HloInstructionProto reused;
    for (absl::string_view bytes : insts) {
      if (!ParseAtDepth(bytes, DefaultProtoRecursionBudget() - 2, &reused)) std::abort();
      names += static_cast<int64_t>(reused.name().size());
    }
    benchmark::DoNotOptimize(names);
  }
}

BENCHMARK(BM_TextRoundTrip)->Arg(30000)->Arg(300000)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ProtoRoundTrip)->Arg(30000)->Arg(300000)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ProtoRead)->Arg(30000)->Arg(300000)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ProtoWrite)->Arg(30000)->Arg(300000)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ProtoParseOnly)->Arg(30000)->Arg(300000)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace hilo

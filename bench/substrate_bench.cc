// Micro-benchmarks of the substrate: scanning (the lexer's lower bound),
// lexing, parse, print (to a string, and streamed to a sink), post order,
// verifier and the whole round trip, on generated
// tensor-parallel x FSDP modules (tools/hilo-gen) of growing size and on the
// largest modules of the shared folder's corpus/valid ($HILO_SHARED_DIR, else
// ../shared; without it those report "corpus file not found"). See
// docs/performance.md.
//
// The parser has no separate lexer API; BM_ScanWords is the in-process
// equivalent of `wc -w` (count whitespace-separated words) and is the floor
// any lexer over the same bytes pays. BM_Lex runs the parser's own lexical
// layer over the whole text: the input check every parse starts with (NUL
// bytes, UTF-8, line count), then every token with the parser's character
// classes and identifier scanner.
#include <cstdio>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "benchmark/benchmark.h"
#include "hilo/analysis/hlo_verifier.h"
#include "hilo/ir/hlo_computation.h"
#include "hilo/text/char_class.h"
#include "hilo/text/input_check.h"
#include "hilo/ir/hlo_module.h"
#include "hilo/text/parser.h"
#include "hilo/text/printer.h"
#include "shared_dir.h"
#include "transformer_generator.h"

namespace hilo {
namespace {

// Generated modules, by layer count (18 instructions per layer).
const std::string& Generated(int64_t layers) {
  static auto* cache = new std::map<int64_t, std::string>();
  auto it = cache->find(layers);
  if (it == cache->end()) {
    gen::TransformerOptions options;
    options.layers = layers;
    auto text = gen::GenerateTransformerModule(options);
    if (!text.ok()) {
      std::fprintf(stderr, "generator: %s\n", std::string(text.status().message()).c_str());
      std::abort();
    }
    it = cache->emplace(layers, *std::move(text)).first;
  }
  return it->second;
}

// The largest corpus modules (by instruction count, see MANIFEST.tsv).
const char* const kCorpusFiles[] = {
    "openxla-xla/xla__tools__benchmarks__hlo__hlo_mixtral_8x7b_bf16_1x8.hlo",
    "openxla-xla/xla__tools__benchmarks__hlo__hlo_llama31_8b_bf16_1x8.hlo",
    "openxla-xla/xla__tools__benchmarks__hlo__hlo_torax_iterhybrid_predictor_corrector_f64.hlo",
};

std::string ReadCorpusFile(const char* relative) {
  std::ifstream in(absl::StrCat(hilo::test::SharedDir(), "/corpus/valid/", relative), std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

std::unique_ptr<HloModule> MustParse(const std::string& text, benchmark::State& state) {
  auto module = ParseHloModule(text);
  if (!module.ok()) {
    state.SkipWithError(std::string(module.status().message().substr(0, 500)).c_str());
    return nullptr;
  }
  return *std::move(module);
}

void SetCounters(benchmark::State& state, const std::string& text, int64_t instructions) {
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) *
                          static_cast<int64_t>(text.size()));
  state.counters["instructions"] = static_cast<double>(instructions);
  state.counters["per_instruction"] = benchmark::Counter(
      static_cast<double>(instructions),
      benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
  state.counters["MB"] = static_cast<double>(text.size()) / 1e6;
}

// --- The operations, each over one text --------------------------------------

void ScanWords(benchmark::State& state, const std::string& text) {
  for (auto _ : state) {
    int64_t words = 0;
    bool in_word = false;
    for (char c : text) {
      bool space = c == ' ' || c == '\n' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
      words += !space && !in_word;
      in_word = !space;
    }
    benchmark::DoNotOptimize(words);
  }
  SetCounters(state, text, 0);
}

void Parse(benchmark::State& state, const std::string& text) {
  int64_t instructions = 0;
  for (auto _ : state) {
    auto module = MustParse(text, state);
    if (module == nullptr) return;
    instructions = module->instruction_count();
    benchmark::DoNotOptimize(module.get());
    state.PauseTiming();  // freeing the module is not parsing
    module.reset();
    state.ResumeTiming();
  }
  SetCounters(state, text, instructions);
}

void Print(benchmark::State& state, const std::string& text) {
  auto module = MustParse(text, state);
  if (module == nullptr) return;
  for (auto _ : state) {
    std::string printed = PrintHloModule(*module);
    benchmark::DoNotOptimize(printed.data());
  }
  SetCounters(state, text, module->instruction_count());
}

// Takes the streaming printer's output and only counts it.
class CountingSink final : public OutputSink {
 public:
  absl::Status Write(absl::string_view piece) override {
    bytes += piece.size();
    return absl::OkStatus();
  }
  size_t bytes = 0;
};

// The streaming printer into a CountingSink: the printer's own cost,
// without building the output string (what hilo-opt pays before write(2)).
void PrintStream(benchmark::State& state, const std::string& text) {
  auto module = MustParse(text, state);
  if (module == nullptr) return;
  for (auto _ : state) {
    CountingSink sink;
    absl::Status status = PrintHloModule(*module, sink);
    benchmark::DoNotOptimize(sink.bytes);
    if (!status.ok()) {
      state.SkipWithError(std::string(status.message()).c_str());
      return;
    }
  }
  SetCounters(state, text, module->instruction_count());
}

void PostOrder(benchmark::State& state, const std::string& text) {
  auto module = MustParse(text, state);
  if (module == nullptr) return;
  for (auto _ : state) {
    for (HloComputation* computation : module->computations()) {
      std::vector<HloInstruction*> order = computation->MakeInstructionPostOrder();
      benchmark::DoNotOptimize(order.data());
    }
  }
  SetCounters(state, text, module->instruction_count());
}

void Verify(benchmark::State& state, const std::string& text) {
  auto module = MustParse(text, state);
  if (module == nullptr) return;
  for (auto _ : state) {
    absl::Status status = VerifyHloModule(*module);
    if (!status.ok()) {
      state.SkipWithError(std::string(status.message().substr(0, 500)).c_str());
      return;
    }
  }
  SetCounters(state, text, module->instruction_count());
}

// What `hilo-opt` does with no pass: parse + verify + print, streamed as
// hilo-opt does (+ free, which hilo-opt skips).
void RoundTrip(benchmark::State& state, const std::string& text) {
  int64_t instructions = 0;
  for (auto _ : state) {
    auto module = MustParse(text, state);
    if (module == nullptr) return;
    absl::Status status = VerifyHloModule(*module);
    if (!status.ok()) {
      state.SkipWithError(std::string(status.message().substr(0, 500)).c_str());
      return;
    }
    CountingSink sink;
    status = PrintHloModule(*module, sink);
    benchmark::DoNotOptimize(sink.bytes);
    instructions = module->instruction_count();
  }
  SetCounters(state, text, instructions);
}

void Lex(benchmark::State& state, const std::string& text) {
  int64_t tokens = 0;
  for (auto _ : state) {
    const InputCheck check = CheckInput(text);
    if (check.problem != nullptr) {
      state.SkipWithError(check.problem);
      return;
    }
    benchmark::DoNotOptimize(check.lines);
    tokens = 0;
    absl::string_view rest(text);
    while (!rest.empty()) {
      const uint8_t cls = kCharClass[static_cast<unsigned char>(rest.front())];
      size_t length = 1;
      if (cls == kIdentClass) {
        length = IdentifierLength(rest);
      } else if (cls == kSpaceClass) {
        while (length < rest.size() &&
               kCharClass[static_cast<unsigned char>(rest[length])] == kSpaceClass) {
          ++length;
        }
        rest.remove_prefix(length);
        continue;
      }
      ++tokens;
      rest.remove_prefix(length);
    }
    benchmark::DoNotOptimize(tokens);
  }
  SetCounters(state, text, 0);
  state.counters["tokens"] = static_cast<double>(tokens);
}

using Operation = void (*)(benchmark::State&, const std::string&);

// Registers every operation on generated modules of 10..10,000 layers
// (186..180,006 instructions) and on the corpus files.
bool RegisterAll() {
  const std::pair<const char*, Operation> operations[] = {
      {"ScanWords", ScanWords}, {"Lex", Lex},       {"Parse", Parse},   {"Print", Print},
      {"PrintStream", PrintStream}, {"PostOrder", PostOrder}, {"Verify", Verify},
      {"RoundTrip", RoundTrip},
  };
  for (const auto& [name, op] : operations) {
    for (int64_t layers : {10, 100, 1000, 10000}) {
      benchmark::RegisterBenchmark(
          absl::StrCat("BM_", name, "/generated/layers:", layers).c_str(),
          [op = op, layers](benchmark::State& state) { op(state, Generated(layers)); })
          ->Unit(benchmark::kMillisecond);
    }
    for (const char* file : kCorpusFiles) {
      std::string short_name(file);
      short_name = short_name.substr(short_name.rfind("__") + 2);
      benchmark::RegisterBenchmark(
          absl::StrCat("BM_", name, "/corpus:", short_name).c_str(),
          [op = op, file](benchmark::State& state) {
            static auto* cache = new std::map<const char*, std::string>();
            auto it = cache->find(file);
            if (it == cache->end()) it = cache->emplace(file, ReadCorpusFile(file)).first;
            if (it->second.empty()) {
              state.SkipWithError("corpus file not found");
              return;
            }
            op(state, it->second);
          })
          ->Unit(benchmark::kMillisecond);
    }
  }
  return true;
}

const bool kRegistered = RegisterAll();

}  // namespace
}  // namespace hilo

// hilo-run: runs an HLO module on simulated devices with the reference SPMD
// interpreter and prints each device's outputs.
//
//   hilo-run IN [--devices=N] [--seed=S] [--inputs=FILE] [--print] [-o FILE]
//
// Without --print each output leaf is summarised (shape, sum, min, max);
// with --print its values are printed in full. -o writes the values in the
// inputs-file format (`output L device D : values`). Exit status and error
// format as every hilo tool (docs/tools.md). See docs/interpreter.md.
//
// IN is HLO text or any of XLA's protos (docs/proto-format.md). An
// HloSnapshot's recorded arguments are the inputs (before --inputs), and its
// recorded result, when present, is compared with device 0's output: exit
// status 3 when they differ.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/file_io.h"
#include "common/tool_cli.h"
#include "hilo/eval/interpreter.h"
#include "hilo/proto/module_file.h"
#include "hilo/eval/snapshot_values.h"

namespace {

constexpr char kTool[] = "hilo-run";

int Main(int argc, char** argv) {
  namespace tool = hilo::tool;
  CLI::App app{"hilo-run: run an HLO module on simulated SPMD devices"};
  tool::SetUpApp(app, kTool);
  std::string input;
  std::optional<int64_t> devices;
  uint64_t seed = 0;
  std::string inputs_file;
  bool print = false;
  std::string output_file;
  app.add_option("input", input,
                 "module file: HLO text, or XLA's HloModuleProto / HloProto / HloSnapshot, binary or "
                 "text proto ('-' for stdin)")
      ->required();
  std::optional<int64_t> replica_count;
  std::optional<int64_t> num_partitions;
  app.add_option("--replica-count", replica_count, "the module's replica count (protos lack it)");
  app.add_option("--num-partitions", num_partitions,
                 "the module's number of partitions (protos lack it)");
  app.add_option("--devices", devices,
                 "number of devices (default: replica_count x num_partitions of the module)");
  tool::AddSeedOption(app, &seed, "seed of the pseudo-random inputs");
  app.add_option("--inputs", inputs_file, "file of parameter values (docs/interpreter.md)");
  app.add_flag("--print", print, "print every output value");
  app.add_option("-o,--output", output_file, "write the output values to this file");
  hilo::eval::InterpreterOptions options;
  int64_t max_memory_mib = options.max_memory_bytes >> 20;
  double time_budget = 0;
  app.add_option("--max-array-elements", options.max_array_elements,
                 "largest array, in elements (default 2^27)");
  app.add_option("--max-memory", max_memory_mib, "MiB of values held over all devices (default 4096)");
  app.add_option("--max-work", options.max_work, "element operations over all devices (default 2^36)");
  app.add_option("--time-budget", time_budget, "seconds; 0 = no limit (default)");
  if (std::optional<int> exit = tool::ParseCommandLine(app, kTool, argc, argv)) return *exit;
  options.max_memory_bytes = max_memory_mib << 20;
  if (time_budget > 0) {
    options.deadline = std::chrono::steady_clock::now() +
                       std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                           std::chrono::duration<double>(time_budget));
  }
  if (!output_file.empty()) {
    if (absl::Status status = hilo::CheckOutputPath(output_file); !status.ok()) {
      return tool::Fail(kTool, status);
    }
  }

  tool::AnnounceStdinRead(kTool, input);
  absl::StatusOr<hilo::InputBuffer> text = hilo::ReadInput(input);
  if (!text.ok()) return tool::Fail(kTool, text.status());
  auto loaded = hilo::LoadModule(text->text(), input == "-" ? "<stdin>" : input);
  if (!loaded.ok()) {
    // The reader's message already reads `file:line:col: error: ...`.
    std::fprintf(stderr, "%s\n", std::string(loaded.status().message()).c_str());
    return tool::kExitBadInput;
  }
  std::unique_ptr<hilo::HloModule> module = std::move(loaded->module);
  if (replica_count.has_value()) module->set_replica_count(replica_count);
  if (num_partitions.has_value()) module->set_num_partitions(num_partitions);
  options.devices = devices;
  options.seed = seed;
  absl::StatusOr<std::string> snapshot_inputs = hilo::SnapshotArgumentsAsInputs(loaded->arguments);
  if (!snapshot_inputs.ok()) return tool::Fail(kTool, snapshot_inputs.status());
  options.inputs_text = *std::move(snapshot_inputs);
  if (!inputs_file.empty()) {
    absl::StatusOr<hilo::InputBuffer> inputs = hilo::ReadInput(inputs_file);
    if (!inputs.ok()) return tool::Fail(kTool, inputs.status());
    options.inputs_text += std::string(inputs->text());
  }
  const auto start = std::chrono::steady_clock::now();
  auto result = hilo::eval::RunModule(*module, options);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!result.ok()) return tool::Fail(kTool, result.status());
  std::string out;
  std::string file_out;
  const auto& grid = result->grid;
  for (int64_t d = 0; d < grid.devices(); ++d) {
    const auto ids = grid.ids(d);
    absl::StrAppend(&out, "device ", d, " (replica ", ids.replica_id, ", partition ", ids.partition_id,
                    "):\n");
    std::vector<std::pair<std::vector<int64_t>, const hilo::eval::Array*>> leaves;
    result->outputs[d].CollectLeafPaths(&leaves);
    for (const auto& [path, array] : leaves) {
      const std::string name =
          path.empty() ? "output" : absl::StrCat("output ", absl::StrJoin(path, "."));
      if (print) {
        absl::StrAppend(&out, "  ", name, ": ", array->ToString(), "\n");
      } else {
        double sum = 0, lo = INFINITY, hi = -INFINITY;
        for (int64_t k = 0; k < array->size(); ++k) {
          const double v = array->GetDouble(k);
          sum += v;
          lo = std::min(lo, v);
          hi = std::max(hi, v);
        }
        absl::StrAppend(&out, absl::StrFormat("  %s: %s sum=%.9g min=%.9g max=%.9g\n", name,
                                              array->ShapeString(), sum, lo, hi));
      }
      if (!output_file.empty()) {
        // The value text without the shape prefix, flattened.
        std::vector<std::string> values;
        for (int64_t k = 0; k < array->size(); ++k) {
          hilo::eval::Array one(array->type(), {});
          one.CopyElement(0, *array, k);
          std::string s = one.ToString();
          values.push_back(s.substr(s.find(' ') + 1));
        }
        absl::StrAppend(&file_out, "output ", path.empty() ? std::string("0") : absl::StrJoin(path, "."), " device ", d, " : ",
                        absl::StrJoin(values, " "), "\n");
      }
    }
  }
  absl::StrAppend(&out, absl::StrFormat("ran %d devices, %d collective group executions, %.3f s\n",
                                        grid.devices(), result->collectives_executed, seconds));
  if (!output_file.empty()) {
    if (absl::Status status = hilo::WriteFileAtomically(output_file, file_out); !status.ok()) {
      return tool::Fail(kTool, status);
    }
  }
  // A snapshot's recorded result against device 0's output.
  int exit_code = tool::kExitOk;
  if (loaded->result.has_value()) {
    absl::StatusOr<hilo::RecordedResultComparison> compared =
        hilo::CompareWithRecordedResult(result->outputs[0], *loaded->result);
    if (!compared.ok()) return tool::Fail(kTool, compared.status());
    absl::StrAppend(&out, "result: ", compared->message, "\n");
    if (!compared->matches) exit_code = tool::kExitNotEquivalent;
  }
  if (absl::Status status = hilo::WriteStdout(out); !status.ok()) return tool::Fail(kTool, status);
  return exit_code;
}

}  // namespace

int main(int argc, char** argv) {
  return hilo::tool::RunTool(kTool, [&] { return Main(argc, argv); });
}

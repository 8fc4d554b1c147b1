// hilo-run: runs an HLO module on simulated devices with the reference SPMD
// interpreter and prints each device's outputs.
//
//   hilo-run IN [--devices=N] [--seed=S] [--inputs=FILE] [--print] [-o FILE]
//
// Without --print each output leaf is summarised (shape, sum, min, max);
// with --print its values are printed in full. -o writes the values in the
// inputs-file format (`output L device D : values`). Exit status: 0 success,
// 1 unreadable/unparsable input or an error while running (message on
// stderr). See docs/interpreter.md.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "hilo/eval/interpreter.h"
#include "hilo/text/parser.h"

namespace {

bool ReadFile(const std::string& path, std::string* out) {
  if (path == "-") {
    std::ostringstream ss;
    ss << std::cin.rdbuf();
    *out = ss.str();
    return true;
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream ss;
  ss << in.rdbuf();
  *out = ss.str();
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"hilo-run: run an HLO module on simulated SPMD devices"};
  std::string input;
  std::optional<int64_t> devices;
  uint64_t seed = 0;
  std::string inputs_file;
  bool print = false;
  std::string output_file;
  app.add_option("input", input, "HLO text file ('-' for stdin)")->required();
  app.add_option("--devices", devices, "number of devices (overrides the module header)");
  app.add_option("--seed", seed, "seed of the pseudo-random inputs");
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
  CLI11_PARSE(app, argc, argv);
  options.max_memory_bytes = max_memory_mib << 20;
  if (time_budget > 0) {
    options.deadline = std::chrono::steady_clock::now() +
                       std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                           std::chrono::duration<double>(time_budget));
  }

  std::string text;
  if (!ReadFile(input, &text)) {
    std::fprintf(stderr, "hilo-run: can not read %s\n", input.c_str());
    return 1;
  }
  auto module = hilo::ParseHloModule(text, input);
  if (!module.ok()) {
    std::fprintf(stderr, "%s\n", std::string(module.status().message()).c_str());
    return 1;
  }
  options.devices = devices;
  options.seed = seed;
  if (!inputs_file.empty() && !ReadFile(inputs_file, &options.inputs_text)) {
    std::fprintf(stderr, "hilo-run: can not read %s\n", inputs_file.c_str());
    return 1;
  }
  const auto start = std::chrono::steady_clock::now();
  auto result = hilo::eval::RunModule(**module, options);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!result.ok()) {
    std::fprintf(stderr, "hilo-run: %s\n", std::string(result.status().message()).c_str());
    return 1;
  }
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
          if (array->is_float()) one.f()[0] = array->f()[k];
          else one.i()[0] = array->i()[k];
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
  std::fputs(out.c_str(), stdout);
  if (!output_file.empty()) {
    std::ofstream f(output_file, std::ios::binary);
    f << file_out;
    if (!f) {
      std::fprintf(stderr, "hilo-run: can not write %s\n", output_file.c_str());
      return 1;
    }
  }
  return 0;
}

// hilo-run: runs an HLO module on simulated devices with the reference SPMD
// interpreter and prints each device's outputs.
//
//   hilo-run IN [--devices=N] [--seed=S] [--inputs=FILE] [--print] [-o FILE]
//
// IN is HLO text or any of XLA's protos (docs/proto-format.md). An
// HloSnapshot's recorded arguments are the inputs (before --inputs), and its
// recorded result, when present, is compared with device 0's output: exit
// status 3 when they differ.
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
#include "hilo/proto/hlo_proto_convert.h"
#include "hilo/proto/module_file.h"

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
  app.add_option("input", input,
                 "module file: HLO text, or XLA's HloModuleProto / HloProto / HloSnapshot, binary or "
                 "text proto ('-' for stdin)")
      ->required();
  std::optional<int64_t> replica_count;
  std::optional<int64_t> num_partitions;
  app.add_option("--replica-count", replica_count, "the module's replica count (protos lack it)");
  app.add_option("--num-partitions", num_partitions,
                 "the module's number of partitions (protos lack it)");
  app.add_option("--devices", devices, "number of devices (overrides the module header)");
  app.add_option("--seed", seed, "seed of the pseudo-random inputs");
  app.add_option("--inputs", inputs_file, "file of parameter values (docs/interpreter.md)");
  app.add_flag("--print", print, "print every output value");
  app.add_option("-o,--output", output_file, "write the output values to this file");
  CLI11_PARSE(app, argc, argv);

  std::string text;
  if (!ReadFile(input, &text)) {
    std::fprintf(stderr, "hilo-run: can not read %s\n", input.c_str());
    return 1;
  }
  auto loaded = hilo::LoadModule(text, input == "-" ? "<stdin>" : input);
  if (!loaded.ok()) {
    std::fprintf(stderr, "%s\n", std::string(loaded.status().message()).c_str());
    return 1;
  }
  std::unique_ptr<hilo::HloModule> module = std::move(loaded->module);
  if (replica_count.has_value()) module->set_replica_count(replica_count);
  if (num_partitions.has_value()) module->set_num_partitions(num_partitions);
  hilo::eval::InterpreterOptions options;
  options.devices = devices;
  options.seed = seed;
  // A snapshot's arguments, as inputs-file lines for every device.
  for (size_t p = 0; p < loaded->arguments.size(); ++p) {
    auto leaves = hilo::LiteralLeafValues(loaded->arguments[p]);
    if (!leaves.ok()) {
      std::fprintf(stderr, "hilo-run: snapshot argument %zu: %s\n", p,
                   std::string(leaves.status().message()).c_str());
      return 1;
    }
    const bool tuple = loaded->arguments[p].shape().element_type() == xla::TUPLE;
    for (size_t l = 0; l < leaves->size(); ++l) {
      absl::StrAppend(&options.inputs_text, "param ", p, tuple ? absl::StrCat(".", l) : "",
                      " device * : ", absl::StrJoin((*leaves)[l], " "), "\n");
    }
  }
  std::string more_inputs;
  if (!inputs_file.empty() && !ReadFile(inputs_file, &more_inputs)) {
    std::fprintf(stderr, "hilo-run: can not read %s\n", inputs_file.c_str());
    return 1;
  }
  options.inputs_text += more_inputs;
  const auto start = std::chrono::steady_clock::now();
  auto result = hilo::eval::RunModule(*module, options);
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
  // A snapshot's recorded result against device 0's output.
  int exit_code = 0;
  if (loaded->result.has_value()) {
    auto recorded = hilo::LiteralLeafValues(*loaded->result);
    std::vector<std::pair<std::vector<int64_t>, const hilo::eval::Array*>> leaves;
    result->outputs[0].CollectLeafPaths(&leaves);
    std::string verdict = "result: matches the snapshot's recorded result\n";
    if (!recorded.ok()) {
      verdict = absl::StrCat("result: the recorded result can not be read: ",
                             recorded.status().message(), "\n");
      exit_code = 1;
    } else if (recorded->size() != leaves.size()) {
      verdict = absl::StrCat("result: differs from the recorded result: ", leaves.size(),
                             " output arrays, ", recorded->size(), " recorded\n");
      exit_code = 3;
    } else {
      for (size_t l = 0; l < leaves.size() && exit_code == 0; ++l) {
        const hilo::eval::Array& a = *leaves[l].second;
        const std::vector<std::string>& want = (*recorded)[l];
        if (static_cast<int64_t>(want.size()) != a.size()) {
          verdict = absl::StrCat("result: output ", l, " has ", a.size(), " elements, recorded ",
                                 want.size(), "\n");
          exit_code = 3;
          break;
        }
        for (int64_t k = 0; k < a.size(); ++k) {
          const double w = want[k] == "true" ? 1 : want[k] == "false" ? 0 : std::strtod(want[k].c_str(), nullptr);
          const double g = a.GetDouble(k);
          const bool same = (std::isnan(w) && std::isnan(g)) || g == w ||
                            std::fabs(g - w) <= 1e-5 + 1e-3 * std::fabs(w);
          if (!same) {
            verdict = absl::StrCat("result: differs from the snapshot's recorded result at output ", l,
                                   " element ", k, ": ", absl::StrFormat("%.9g", g), " vs recorded ",
                                   want[k], "\n");
            exit_code = 3;
            break;
          }
        }
      }
    }
    absl::StrAppend(&out, verdict);
  }
  std::fputs(out.c_str(), stdout);
  if (!output_file.empty()) {
    std::ofstream f(output_file, std::ios::binary);
    f << file_out;
    if (!f) {
      std::fprintf(stderr, "hilo-run: can not write %s\n", output_file.c_str());
      return 1;
    }
  }
  return exit_code;
}

// hilo-gen: writes a synthetic tensor-parallel x FSDP transformer HLO module
// (see transformer_generator.h for its structure).
#include <cstdio>
#include <optional>
#include <string>

#include "CLI/CLI.hpp"
#include "common/file_io.h"
#include "common/tool_cli.h"
#include "transformer_generator.h"

namespace {

constexpr char kTool[] = "hilo-gen";

int Main(int argc, char** argv) {
  namespace tool = hilo::tool;
  hilo::gen::TransformerOptions o;
  std::string output = "-";
  std::string groups = "explicit";
  int64_t target = 0;
  CLI::App app{"hilo-gen: writes a synthetic tensor-parallel x FSDP transformer HLO module"};
  tool::SetUpApp(app, kTool);
  app.add_option("-o,--output", output, "output file ('-' = stdout)");
  app.add_option("-L,--layers", o.layers, "number of transformer layers")
      ->check(CLI::Range(int64_t{1}, int64_t{100000000}));
  app.add_option("-n,--target-instructions", target,
                 "choose the layer count so the module has at least this many instructions "
                 "(instead of --layers)")
      ->check(CLI::Range(int64_t{1}, int64_t{2000000000}))
      ->default_str("");
  app.add_option("--tp", o.tp, "tensor-parallel degree")->check(CLI::Range(1, 1 << 16));
  app.add_option("--fsdp", o.fsdp, "FSDP degree")->check(CLI::Range(1, 1 << 16));
  app.add_option("--batch", o.batch, "batch size")->check(CLI::Range(1, 1 << 30));
  app.add_option("--seq", o.seq, "sequence length (a multiple of --tp)")
      ->check(CLI::Range(1, 1 << 30));
  app.add_option("--hidden", o.hidden, "hidden size (a multiple of --fsdp)")
      ->check(CLI::Range(1, 1 << 30));
  app.add_option("--heads", o.heads, "attention heads (a multiple of --tp)")
      ->check(CLI::Range(1, 1 << 30));
  app.add_option("--head-dim", o.head_dim, "size of one attention head")->check(CLI::Range(1, 1 << 30));
  app.add_option("--groups", groups, "replica group form: explicit or iota")
      ->check(CLI::IsMember({"explicit", "iota"}));
  app.add_option("--channel-ids", o.channel_ids,
                 "unique: one id per collective; collide: every 4th collective repeats the "
                 "previous id; none")
      ->check(CLI::IsMember({"unique", "collide", "none"}));
  app.add_flag("!--no-layouts", o.layouts, "omit {minor-to-major} layouts");
  app.add_flag("!--no-operand-shapes", o.operand_shapes, "write `%x` instead of `bf16[..] %x`");
  app.add_option("--name", o.module_name, "module name (default: tp_fsdp_transformer_L<layers>)");
  if (std::optional<int> exit = tool::ParseCommandLine(app, kTool, argc, argv)) return *exit;
  if (absl::Status status = hilo::CheckOutputPath(output); !status.ok()) {
    return tool::Fail(kTool, status);
  }
  o.iota_groups = groups == "iota";
  if (target > 0) o.layers = hilo::gen::LayersForInstructionCount(target);

  auto text = hilo::gen::GenerateTransformerModule(o);
  if (!text.ok()) return tool::Fail(kTool, text.status());
  absl::Status written =
      output == "-" ? hilo::WriteStdout(*text) : hilo::WriteFileAtomically(output, *text);
  if (!written.ok()) return tool::Fail(kTool, written);
  std::fprintf(stderr, "hilo-gen: %lld layers, %lld instructions, %zu bytes\n",
               static_cast<long long>(o.layers),
               static_cast<long long>(hilo::gen::InstructionCount(o.layers)), text->size());
  return tool::kExitOk;
}

}  // namespace

int main(int argc, char** argv) {
  return hilo::tool::RunTool(kTool, [&] { return Main(argc, argv); });
}

// The HLO corpus through XLA's protos (docs/proto-format.md): for every file
// of ../shared/corpus/valid that round-trips as text (the files
// corpus_roundtrip_test lists as exceptions or rejected are skipped, as
// there), text -> IR -> binary HloModuleProto -> IR -> text is byte-identical
// to text -> IR -> text, the same through the text-proto form, and the
// verifier's verdict on the decoded module is the text module's. Also: the
// text protos XLA's authors wrote (../shared/corpus/proto) load and give what
// their README states.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "hilo/analysis/hlo_verifier.h"
#include "hilo/proto/module_file.h"
#include "hilo/text/parser.h"
#include "shared_dir.h"
#include "hilo/text/printer.h"

namespace hilo {
namespace {

namespace fs = std::filesystem;

const std::string kCorpus = hilo::test::SharedDir() + "/corpus";

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The paths (first column) of a list in tests/corpus/.
std::vector<std::string> ListedPaths(const std::string& name) {
  std::vector<std::string> paths;
  std::ifstream in(std::string(HILO_SOURCE_DIR) + "/tests/corpus/" + name);
  EXPECT_TRUE(in.good()) << "missing tests/corpus/" << name;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    paths.push_back(line.substr(0, line.find('\t')));
  }
  return paths;
}

// "" when `printed` comes back through `format`; else what went wrong.
std::string ThroughProto(const HloModule& module, const std::string& printed, ModuleFormat format,
                         bool text_verifies, const std::string& name) {
  absl::StatusOr<std::string> bytes = SerializeModule(module, format);
  if (!bytes.ok()) return "serialize: " + std::string(bytes.status().message());
  const std::string file = name + (format == ModuleFormat::kProto ? ".pb" : ".pbtxt");
  absl::StatusOr<LoadedModule> loaded = LoadModule(*bytes, file);
  if (!loaded.ok()) return "load: " + std::string(loaded.status().message());
  if (loaded->format != format) return "detected as another format";
  const std::string back = PrintHloModule(*loaded->module);
  if (back != printed) {
    size_t i = 0;
    while (i < back.size() && i < printed.size() && back[i] == printed[i]) ++i;
    const size_t from = i > 60 ? i - 60 : 0;
    return "differs at byte " + std::to_string(i) + ": text '" + printed.substr(from, 140) +
           "' vs proto '" + back.substr(from, 140) + "'";
  }
  if (text_verifies && !VerifyHloModule(*loaded->module).ok()) {
    return "verifier fails after decoding: " +
           std::string(VerifyHloModule(*loaded->module).message());
  }
  return "";
}

TEST(ProtoCorpusTest, ValidRoundTripsThroughBothProtoForms) {
  HILO_SKIP_WITHOUT_SHARED_DIR();
  const std::string dir = kCorpus + "/valid";
  ASSERT_TRUE(fs::exists(dir)) << dir;
  std::vector<std::string> skip = ListedPaths("valid_roundtrip_exceptions.tsv");
  for (const std::string& p : ListedPaths("valid_rejected.tsv")) skip.push_back(p);
  std::vector<std::string> files;
  for (const auto& entry : fs::recursive_directory_iterator(dir)) {
    if (entry.is_regular_file() && entry.path().extension() == ".hlo") {
      files.push_back(entry.path().string());
    }
  }
  std::sort(files.begin(), files.end());
  ASSERT_GT(files.size(), 2000u);
  int passed = 0, failed = 0;
  for (const std::string& path : files) {
    const std::string rel = path.substr(dir.size() + 1);
    if (std::find(skip.begin(), skip.end(), rel) != skip.end()) continue;
    auto module = ParseHloModule(ReadFile(path), rel);
    ASSERT_TRUE(module.ok()) << rel << ": " << module.status().message();
    const std::string printed = PrintHloModule(**module);
    const bool verifies = VerifyHloModule(**module).ok();
    for (ModuleFormat format : {ModuleFormat::kProto, ModuleFormat::kProtoText}) {
      const std::string problem = ThroughProto(**module, printed, format, verifies, rel);
      if (!problem.empty()) {
        if (++failed <= 20) {
          ADD_FAILURE() << rel << " (" << ModuleFormatName(format) << "): " << problem;
        }
      }
    }
    ++passed;
  }
  std::printf("proto corpus: %d modules through .pb and .pbtxt, %d failures\n", passed, failed);
  EXPECT_EQ(failed, 0);
}

TEST(ProtoCorpusTest, XlaTextProtoWithLocalOperandIds) {
  HILO_SKIP_WITHOUT_SHARED_DIR();
  const std::string path =
      kCorpus + "/proto/hlo_module_test__LoadAndFixNonConsecutiveInstructionIds.pbtxt";
  absl::StatusOr<LoadedModule> loaded = LoadModule(ReadFile(path), path);
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  EXPECT_EQ(loaded->format, ModuleFormat::kProtoText);
  EXPECT_EQ(loaded->message, ProtoMessage::kHloModuleProto);
  const HloModule& m = *loaded->module;
  ASSERT_EQ(m.computation_count(), 2);
  EXPECT_EQ(m.computations()[0]->name(), "comp2");  // listed first, kept first
  ASSERT_NE(m.entry_computation(), nullptr);
  EXPECT_EQ(m.entry_computation()->name(), "entry_computation");
  EXPECT_EQ(m.entry_computation()->instruction_count(), 3);
  const HloComputation* comp2 = m.GetComputationWithName("comp2");
  ASSERT_NE(comp2, nullptr);
  EXPECT_EQ(comp2->instruction_count(), 4);
  const HloInstruction* retvals = comp2->root_instruction();
  EXPECT_EQ(retvals->name(), "XLA_Retvals.comp2");
  ASSERT_EQ(retvals->operand_count(), 1);
  EXPECT_EQ(retvals->operand(0)->name(), "arg1.comp2");
  const HloInstruction* add = nullptr;
  for (const HloInstruction* inst : comp2->instructions()) {
    if (inst->name() == "add.comp2") add = inst;
  }
  ASSERT_NE(add, nullptr);
  ASSERT_EQ(add->operand_count(), 2);
  EXPECT_EQ(add->operand(0)->name(), "arg1.comp2");
  EXPECT_EQ(add->operand(1)->name(), "arg0.comp2");
  // The schedule makes the module scheduled.
  ASSERT_NE(m.header_attribute("is_scheduled"), nullptr);
  EXPECT_EQ(*m.header_attribute("is_scheduled"), "true");
}

TEST(ProtoCorpusTest, XlaHloProtoWithAllGathersAndSlices) {
  HILO_SKIP_WITHOUT_SHARED_DIR();
  const std::string path = kCorpus + "/proto/memory_analysis_test__ComplexMemoAndCategorization.pbtxt";
  absl::StatusOr<LoadedModule> loaded = LoadModule(ReadFile(path), path);
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  EXPECT_EQ(loaded->message, ProtoMessage::kHloProto);
  const HloModule& m = *loaded->module;
  ASSERT_EQ(m.computation_count(), 1);
  EXPECT_EQ(m.entry_computation()->name(), "test_computation");
  EXPECT_EQ(m.entry_computation()->instruction_count(), 12);
  const std::string text = PrintHloModule(m);
  // XLA prints an all-gather without groups as `replica_groups={}`.
  EXPECT_NE(text.find("%gather1 = f32[256,128] all-gather(f32[128,128] %reshape1), "
                      "dimensions={0}, replica_groups={}"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("slice={[0:64], [0:128]}"), std::string::npos) << text;
  EXPECT_NE(text.find("metadata={op_name=\"func/embedding_table\"}"), std::string::npos) << text;
  // The tail padding alignment of param_sparsecore's layout.
  EXPECT_NE(text.find("f32[128,128]{1,0:L(1024)} parameter(1)"), std::string::npos) << text;
  EXPECT_TRUE(VerifyHloModule(m).ok()) << VerifyHloModule(m).message();
  // And back out as an HloProto, which reads back the same.
  absl::StatusOr<std::string> bytes = SerializeModule(m, ModuleFormat::kProto, loaded->message, loaded->envelope);
  ASSERT_TRUE(bytes.ok());
  absl::StatusOr<LoadedModule> again = LoadModule(*bytes, "again.hlo.pb");
  ASSERT_TRUE(again.ok()) << again.status().message();
  EXPECT_EQ(again->message, ProtoMessage::kHloProto);
  EXPECT_EQ(PrintHloModule(*again->module), text);
}

}  // namespace
}  // namespace hilo

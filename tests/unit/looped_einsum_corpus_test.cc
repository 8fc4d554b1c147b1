// The looped-einsum passes over the real corpus: every module under
// shared/corpus/valid whose text has both an all-gather and a dot is parsed
// and run through neuron_looped_einsum_replacer and
// neuron_looped_einsum_token_replacer under several gate settings; every run
// must succeed and leave a module the verifier accepts (when the input
// verified). The Llama 3.1 8B dump's decisions are pinned (see
// docs/passes/looped-einsum.md for the reasoning).
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "hilo/analysis/hlo_verifier.h"
#include "hilo/ir/hlo_computation.h"
#include "hilo/ir/hlo_module.h"
#include "hilo/passes/neuron_looped_einsum_replacer.h"
#include "hilo/passes/neuron_looped_einsum_token_replacer.h"
#include "hilo/text/parser.h"
#include "shared_dir.h"

namespace hilo {
namespace {

namespace fs = std::filesystem;

const fs::path kValid = fs::path(test::SharedDir()) / "corpus" / "valid";

std::string ReadFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Corpus files that mention both an all-gather and a dot.
std::vector<fs::path> CandidateFiles() {
  std::vector<fs::path> files;
  if (!fs::exists(kValid)) return files;
  for (const auto& entry : fs::recursive_directory_iterator(kValid)) {
    if (!entry.is_regular_file() || entry.path().extension() != ".hlo") continue;
    const std::string text = ReadFile(entry.path());
    if (text.find("all-gather(") != std::string::npos && text.find(" dot(") != std::string::npos) {
      files.push_back(entry.path());
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

int64_t CountCollectiveMatmuls(const HloModule& module) {
  int64_t n = 0;
  for (const HloComputation* c : module.computations()) {
    for (const HloInstruction* i : c->instructions()) {
      n += i->opcode() == HloOpcode::kCustomCall &&
                   i->custom_call_target() == "AwsNeuronCollectiveMatmul"
               ? 1
               : 0;
    }
  }
  return n;
}

TEST(LoopedEinsumCorpusTest, EveryDotOfAnAllGatherRunsWithoutError) {
  HILO_SKIP_WITHOUT_SHARED_DIR();
  const std::vector<fs::path> files = CandidateFiles();
  ASSERT_GE(files.size(), 21u) << "corpus missing under " << kValid;
  int64_t modules_with_candidates = 0;
  int64_t total_candidates = 0;
  int64_t total_fused = 0;
  std::vector<std::string> parse_failures;
  struct Setting {
    const char* label;
    PassOptions options;
  };
  std::vector<Setting> settings(4);
  settings[0].label = "defaults";
  settings[0].options.collective_matmul_nxd = false;
  settings[0].options.collective_permute_aggressive = false;
  settings[1].label = "nxd+aggressive";
  settings[1].options.collective_matmul_nxd = true;
  settings[1].options.collective_permute_aggressive = true;
  settings[2].label = "strict";
  settings[2].options.collective_matmul_nxd = false;
  settings[2].options.collective_permute_aggressive = false;
  settings[2].options.collective_matmul_strict = true;
  settings[3].label = "threshold 0";
  settings[3].options.collective_matmul_nxd = false;
  settings[3].options.collective_permute_aggressive = false;
  settings[3].options.sb_to_sb_threshold_mb = 0;
  for (const fs::path& file : files) {
    const std::string text = ReadFile(file);
    for (const Setting& setting : settings) {
      SCOPED_TRACE(file.filename().string() + " [" + setting.label + "]");
      absl::StatusOr<std::unique_ptr<HloModule>> module = ParseHloModule(text, file.string());
      if (!module.ok()) {
        // Not this pass's business; a module that matters and does not
        // parse shows up as a missing candidate module below.
        if (setting.label == settings[0].label) {
          parse_failures.push_back(file.filename().string() + ": " +
                                   std::string(module.status().message().substr(0, 200)));
        }
        continue;
      }
      const bool verified_before = VerifyHloModule(**module).ok();
      NeuronLoopedEinsumReplacer replacer(setting.options);
      absl::StatusOr<bool> changed = replacer.Run(module->get());
      ASSERT_TRUE(changed.ok()) << changed.status();
      int64_t fused = 0;
      for (const auto& c : replacer.candidates()) {
        fused += c.fused ? 1 : 0;
        EXPECT_FALSE(c.explanation.empty());
        if (!c.fused) {
          EXPECT_FALSE(c.reason.empty()) << c.dot;
        }
        if (c.fused && setting.options.collective_matmul_strict) {
          EXPECT_TRUE(c.exact) << c.dot;
        }
      }
      EXPECT_EQ(*changed, fused > 0);
      EXPECT_EQ(CountCollectiveMatmuls(**module), fused);
      EXPECT_EQ(replacer.Explanations().size(), replacer.candidates().size());
      NeuronLoopedEinsumTokenReplacer token_replacer(setting.options);
      ASSERT_TRUE(token_replacer.Run(module->get()).ok());
      if (verified_before) {
        absl::Status after = VerifyHloModule(**module);
        EXPECT_TRUE(after.ok()) << after;
      }
      // A second run finds nothing new to fold.
      NeuronLoopedEinsumReplacer again(setting.options);
      absl::StatusOr<bool> changed_again = again.Run(module->get());
      ASSERT_TRUE(changed_again.ok());
      EXPECT_FALSE(*changed_again);
      if (setting.label == settings[0].label) {
        modules_with_candidates += replacer.candidates().empty() ? 0 : 1;
        total_candidates += static_cast<int64_t>(replacer.candidates().size());
        total_fused += fused;
      }
    }
  }
  // Every module the structural scan of docs/passes/looped-einsum.md found
  // (a dot operand reaching an all-gather within 4 operand-0 hops) is a
  // candidate module here.
  EXPECT_GE(modules_with_candidates, 21);
  EXPECT_GT(total_candidates, 0);
  EXPECT_GT(total_fused, 0);
  for (const std::string& failure : parse_failures) std::cout << "not parsed: " << failure << "\n";
  std::cout << files.size() << " files, " << modules_with_candidates << " with candidates, "
            << total_candidates << " candidate dots, " << total_fused << " fused (defaults)\n";
}

}  // namespace
}  // namespace hilo

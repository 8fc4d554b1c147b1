// Verifier over the shared HLO corpus (../shared/corpus/valid, see its
// README): every file that parses must verify, except modules that are
// invalid on purpose (XLA's verifier tests hold many). Those are listed in
// tests/corpus/verify_expectations.tsv with a substring of the verifier's
// message and why the module really is invalid; each listed file must fail
// with that message, and a listed file that now verifies (or no longer
// exists, or no longer parses) is a failure too, so the list stays honest.
//
// Files that do not parse are the round-trip test's business
// (corpus_roundtrip_test.cc); they are counted and reported here, not failed.
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "gtest/gtest.h"
#include "hilo/analysis/hlo_verifier.h"
#include "hilo/text/parser.h"
#include "shared_dir.h"

namespace hilo {
namespace {

namespace fs = std::filesystem;

const std::string kValid = test::SharedDir() + "/corpus/valid";
const std::string kExpectations =
    std::string(HILO_SOURCE_DIR) + "/tests/corpus/verify_expectations.tsv";

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct Expectation {
  std::string message;  // substring of the verifier's message
  std::string reason;
  int line = 0;
};

// `relative path <TAB> message substring <TAB> reason`; `#` comments.
std::map<std::string, Expectation> ReadExpectations() {
  std::map<std::string, Expectation> result;
  std::ifstream in(kExpectations);
  EXPECT_TRUE(in.good()) << "cannot open " << kExpectations;
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (line.empty() || line[0] == '#') continue;
    std::vector<std::string> fields = absl::StrSplit(line, '\t');
    EXPECT_EQ(fields.size(), 3u) << kExpectations << ":" << number
                                 << ": expected 3 tab-separated fields";
    if (fields.size() != 3) continue;
    EXPECT_FALSE(fields[1].empty()) << kExpectations << ":" << number << ": empty message";
    EXPECT_FALSE(fields[2].empty()) << kExpectations << ":" << number << ": no reason given";
    bool inserted = result.emplace(fields[0], Expectation{fields[1], fields[2], number}).second;
    EXPECT_TRUE(inserted) << kExpectations << ":" << number << ": " << fields[0]
                          << " listed twice";
  }
  return result;
}

TEST(CorpusVerifyTest, ValidModulesVerify) {
  HILO_SKIP_WITHOUT_SHARED_DIR();
  ASSERT_TRUE(fs::exists(kValid)) << kValid;
  std::vector<std::string> files;
  for (const auto& entry : fs::recursive_directory_iterator(kValid)) {
    if (entry.is_regular_file() && entry.path().extension() == ".hlo") {
      files.push_back(fs::relative(entry.path(), kValid).string());
    }
  }
  std::sort(files.begin(), files.end());
  ASSERT_GT(files.size(), 2000u);

  std::map<std::string, Expectation> expectations = ReadExpectations();
  std::map<std::string, bool> seen;  // listed file -> parsed
  int parsed = 0, not_parsed = 0, verified = 0, failed_as_expected = 0;
  for (const std::string& file : files) {
    auto module = ParseHloModule(ReadFile(kValid + "/" + file), file);
    auto listed = expectations.find(file);
    if (listed != expectations.end()) seen[file] = module.ok();
    if (!module.ok()) {
      ++not_parsed;
      continue;
    }
    ++parsed;
    absl::Status status = VerifyHloModule(**module);
    if (listed == expectations.end()) {
      EXPECT_TRUE(status.ok()) << file << ": " << status.message();
      if (status.ok()) ++verified;
      continue;
    }
    if (status.ok()) {
      ADD_FAILURE() << file << " is listed in verify_expectations.tsv (line "
                    << listed->second.line << ") but now verifies";
      continue;
    }
    EXPECT_NE(std::string(status.message()).find(listed->second.message), std::string::npos)
        << file << ": expected a message containing '" << listed->second.message
        << "', got: " << status.message();
    ++failed_as_expected;
  }
  for (const auto& [file, expectation] : expectations) {
    auto it = seen.find(file);
    if (it == seen.end()) {
      ADD_FAILURE() << "verify_expectations.tsv line " << expectation.line << ": " << file
                    << " is not in the corpus";
    } else if (!it->second) {
      ADD_FAILURE() << "verify_expectations.tsv line " << expectation.line << ": " << file
                    << " does not parse, so its verifier message can not be checked";
    }
  }
  std::cout << "corpus/valid: " << files.size() << " files, " << parsed << " parsed ("
            << not_parsed << " did not), " << verified << " verified, " << failed_as_expected
            << " invalid on purpose and rejected as listed\n";
}

// The largest real module (a 41,881-instruction Mixtral dump) verifies in
// well under a second; a quadratic check would take minutes.
TEST(CorpusVerifyTest, LargestModuleVerifiesQuickly) {
  HILO_SKIP_WITHOUT_SHARED_DIR();
  const std::string file =
      kValid + "/openxla-xla/xla__tools__benchmarks__hlo__hlo_mixtral_8x7b_bf16_1x8.hlo";
  auto module = ParseHloModule(ReadFile(file), file);
  ASSERT_TRUE(module.ok()) << module.status();
  ASSERT_GT((*module)->instruction_count(), 40000);
  const auto start = std::chrono::steady_clock::now();
  absl::Status status = VerifyHloModule(**module);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_TRUE(status.ok()) << status;
  std::cout << "verified " << (*module)->instruction_count() << " instructions in " << seconds
            << " s\n";
  EXPECT_LT(seconds, 5.0);
}

}  // namespace
}  // namespace hilo

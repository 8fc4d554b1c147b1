// Round trip over the shared HLO corpus (../shared/corpus, see its README):
//  - valid/: every file parses and print(parse(print(parse(x)))) == print(parse(x));
//    files that can not are listed, with a reason, in
//    tests/corpus/valid_roundtrip_exceptions.tsv, or, when they are not valid
//    HLO at all (templates, fragments, XLA's negative parser tests), in
//    tests/corpus/valid_rejected.tsv with the error they must produce; both
//    lists together stay under 1% of valid/, and a listed file that now
//    passes is a failure too, so the lists stay honest.
//    Also reports how many files print back byte-identical to the input
//    (trailing whitespace ignored).
//  - legacy/: reports the parse rate; every failure is a clear
//    `file:line:col: error:` message.
//  - invalid/: every file parses or fails with such a message.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "hilo/text/parser.h"
#include "hilo/text/printer.h"
#include "shared_dir.h"

namespace hilo {
namespace {

namespace fs = std::filesystem;

const std::string kCorpus = test::SharedDir() + "/corpus";

std::vector<std::string> HloFiles(const std::string& dir) {
  std::vector<std::string> files;
  if (!fs::exists(dir)) return files;
  for (const auto& entry : fs::recursive_directory_iterator(dir)) {
    if (entry.is_regular_file() && entry.path().extension() == ".hlo") {
      files.push_back(entry.path().string());
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string Relative(const std::string& path, const std::string& dir) {
  return path.substr(dir.size() + 1);
}

// Trailing whitespace of every line and of the file removed.
std::string StripTrailing(absl::string_view text) {
  std::string out;
  out.reserve(text.size());
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find('\n', start);
    if (end == absl::string_view::npos) end = text.size();
    absl::string_view line = text.substr(start, end - start);
    while (!line.empty() && (line.back() == ' ' || line.back() == '\t' || line.back() == '\r')) {
      line.remove_suffix(1);
    }
    out.append(line.data(), line.size());
    out.push_back('\n');
    start = end + 1;
  }
  while (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

// `file:line:col: error: message`, then the source line and a caret line.
bool IsClearError(const std::string& message) {
  static const std::regex kPattern(R"(^[^\n]+:[0-9]+:[0-9]+: error: [^\n]+\n[^\n]*\n *\^$)");
  return std::regex_match(message, kPattern);
}

// `<path>\t<rest>` lines of a list in tests/corpus/, '#' lines skipped.
std::map<std::string, std::string> ReadList(const std::string& name) {
  std::map<std::string, std::string> result;
  std::ifstream in(std::string(HILO_SOURCE_DIR) + "/tests/corpus/" + name);
  EXPECT_TRUE(in.good()) << "missing tests/corpus/" << name;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    size_t tab = line.find('\t');
    if (tab == std::string::npos) {
      ADD_FAILURE() << name << ": line without a tab-separated reason: " << line;
      continue;
    }
    result[line.substr(0, tab)] = line.substr(tab + 1);
  }
  return result;
}

// "" if `a` and `b` are structurally equal (same computations in the same
// order, and the same instructions, matched by name, with the same opcodes,
// shapes, operands, called computations and attributes); else the first
// difference.
std::string StructuralDifference(const HloModule& a, const HloModule& b) {
  std::vector<HloComputation*> ca = a.computations(), cb = b.computations();
  if (ca.size() != cb.size()) return "different computation counts";
  if (a.entry_computation()->name() != b.entry_computation()->name()) return "different entry";
  for (size_t c = 0; c < ca.size(); ++c) {
    if (ca[c]->name() != cb[c]->name()) return absl::StrCat("computation ", ca[c]->name(), " renamed");
    std::vector<HloInstruction*> ia = ca[c]->instructions(), ib = cb[c]->instructions();
    if (ia.size() != ib.size()) return absl::StrCat("different instruction counts in ", ca[c]->name());
    if (ca[c]->root_instruction()->name() != cb[c]->root_instruction()->name()) {
      return absl::StrCat("different root in ", ca[c]->name());
    }
    // Instructions are matched by name: the printer may place instructions
    // the parser created (e.g. for compact `%t#0` operands) or a pass added
    // before their first user instead of at the end of the list.
    std::map<std::string, const HloInstruction*, std::less<>> by_name;
    for (const HloInstruction* inst : ib) by_name[std::string(inst->name())] = inst;
    for (size_t i = 0; i < ia.size(); ++i) {
      const HloInstruction& x = *ia[i];
      auto found = by_name.find(x.name());
      if (found == by_name.end()) return absl::StrCat("instruction ", x.name(), " missing after re-parse");
      const HloInstruction& y = *found->second;
      auto where = [&](const char* what) { return absl::StrCat(what, " differs at ", x.name()); };
      if (x.name() != y.name() || x.opcode() != y.opcode()) return where("name/opcode");
      if (!(x.shape() == y.shape())) return where("shape");
      if (x.operand_count() != y.operand_count()) return where("operand count");
      for (int64_t k = 0; k < x.operand_count(); ++k) {
        if (x.operand(k)->name() != y.operand(k)->name()) return where("operand");
      }
      std::vector<HloComputation*> xc = x.called_computations(), yc = y.called_computations();
      if (xc.size() != yc.size()) return where("called computations");
      for (size_t k = 0; k < xc.size(); ++k) {
        if (xc[k]->name() != yc[k]->name()) return where("called computation");
      }
      if (x.control_predecessors().size() != y.control_predecessors().size()) {
        return where("control predecessors");
      }
      if (x.parameter_number() != y.parameter_number() || x.tuple_index() != y.tuple_index() ||
          x.dimensions() != y.dimensions() || !(x.dot_dimension_numbers() == y.dot_dimension_numbers()) ||
          x.replica_groups() != y.replica_groups() || x.channel_id() != y.channel_id() ||
          x.use_global_device_ids() != y.use_global_device_ids() ||
          x.constrain_layout() != y.constrain_layout() ||
          x.source_target_pairs() != y.source_target_pairs() ||
          x.custom_call_target() != y.custom_call_target() || x.api_version() != y.api_version() ||
          x.backend_config() != y.backend_config() ||
          !(x.frontend_attributes() == y.frontend_attributes()) || x.metadata() != y.metadata() ||
          x.sharding() != y.sharding() || x.literal_text() != y.literal_text() ||
          x.attribute_order() != y.attribute_order()) {
        return where("a typed attribute");
      }
      if (x.raw_attributes().size() != y.raw_attributes().size()) return where("raw attributes");
      for (size_t k = 0; k < x.raw_attributes().size(); ++k) {
        if (x.raw_attributes()[k].name != y.raw_attributes()[k].name ||
            x.raw_attributes()[k].value != y.raw_attributes()[k].value) {
          return where("raw attribute");
        }
      }
    }
  }
  return "";
}

// The problem with one valid file, or "" if it round-trips.
std::string RoundTrip(const std::string& path, const std::string& text, bool* identical) {
  auto first = ParseHloModule(text, path);
  if (!first.ok()) return std::string(first.status().message());
  std::string printed = PrintHloModule(**first);
  auto second = ParseHloModule(printed, path + " (printed)");
  if (!second.ok()) return "re-parse failed: " + std::string(second.status().message());
  std::string reprinted = PrintHloModule(**second);
  if (reprinted != printed) {
    size_t i = 0;
    while (i < printed.size() && i < reprinted.size() && printed[i] == reprinted[i]) ++i;
    return "printing is not idempotent; first difference at byte " + std::to_string(i) +
           ": '" + printed.substr(i, 80) + "' vs '" + reprinted.substr(i, 80) + "'";
  }
  std::string difference = StructuralDifference(**first, **second);
  if (!difference.empty()) return "re-parse is not structurally equal: " + difference;
  *identical = StripTrailing(printed) == StripTrailing(text);
  return "";
}

TEST(CorpusRoundTripTest, Valid) {
  HILO_SKIP_WITHOUT_SHARED_DIR();
  const std::string dir = kCorpus + "/valid";
  std::vector<std::string> files = HloFiles(dir);
  ASSERT_GT(files.size(), 2000u) << "corpus not found at " << dir;
  std::map<std::string, std::string> exceptions = ReadList("valid_roundtrip_exceptions.tsv");
  // Files rejected on purpose: `<expected error text>\t<why>`.
  std::map<std::string, std::string> rejected = ReadList("valid_rejected.tsv");
  // Together the two lists are the files of valid/ that do not round-trip.
  EXPECT_LT((exceptions.size() + rejected.size()) * 100, files.size())
      << "the files of valid/ that do not round-trip (exceptions + rejected) must stay under "
         "1% of valid/";
  int passed = 0, identical = 0, failed = 0, rejected_ok = 0;
  for (const std::string& path : files) {
    const std::string rel = Relative(path, dir);
    auto reject = rejected.find(rel);
    if (reject != rejected.end()) {
      const std::string expected = reject->second.substr(0, reject->second.find('\t'));
      auto module = ParseHloModule(ReadFile(path), rel);
      if (module.ok()) {
        ADD_FAILURE() << rel << " is listed in valid_rejected.tsv but now parses";
      } else {
        std::string message(module.status().message());
        EXPECT_TRUE(IsClearError(message)) << message;
        EXPECT_NE(message.find(expected), std::string::npos)
            << rel << ": expected an error containing \"" << expected << "\", got:\n" << message;
        ++rejected_ok;
      }
      continue;
    }
    bool same = false;
    std::string problem = RoundTrip(path, ReadFile(path), &same);
    const bool listed = exceptions.count(rel) > 0;
    if (problem.empty()) {
      ++passed;
      identical += same;
      EXPECT_FALSE(listed) << rel << " is listed as an exception but now round-trips";
    } else {
      ++failed;
      EXPECT_TRUE(listed) << rel << ": " << problem;
    }
  }
  for (const auto& [rel, reason] : exceptions) {
    EXPECT_TRUE(fs::exists(dir + "/" + rel)) << "listed exception does not exist: " << rel;
    EXPECT_EQ(rejected.count(rel), 0u) << rel << " is in both lists";
  }
  for (const auto& [rel, reason] : rejected) {
    EXPECT_TRUE(fs::exists(dir + "/" + rel)) << "listed rejected file does not exist: " << rel;
  }
  std::cout << "[corpus valid] files=" << files.size() << " round-trip=" << passed
            << " failed=" << failed << " (listed exceptions=" << exceptions.size() << ")"
            << " rejected-on-purpose=" << rejected_ok << " (listed " << rejected.size() << ")"
            << " byte-identical=" << identical << " ("
            << (passed ? 100.0 * identical / passed : 0.0) << "% of round-tripping files)\n";
}

TEST(CorpusRoundTripTest, LegacyParsesOrFailsClearly) {
  HILO_SKIP_WITHOUT_SHARED_DIR();
  const std::string dir = kCorpus + "/legacy";
  std::vector<std::string> files = HloFiles(dir);
  ASSERT_GT(files.size(), 400u) << "corpus not found at " << dir;
  int parsed = 0, roundtrip = 0;
  std::map<std::string, int> reasons;
  for (const std::string& path : files) {
    std::string text = ReadFile(path);
    auto module = ParseHloModule(text, Relative(path, dir));
    if (module.ok()) {
      ++parsed;
      bool same;
      if (RoundTrip(path, text, &same).empty()) ++roundtrip;
      continue;
    }
    std::string message(module.status().message());
    EXPECT_TRUE(IsClearError(message)) << path << ":\n" << message;
    size_t e = message.find(": error: ");
    std::string reason = message.substr(e + 9, message.find('\n') - e - 9);
    reason = reason.substr(0, reason.find('\''));
    ++reasons[reason];
  }
  std::cout << "[corpus legacy] files=" << files.size() << " parsed=" << parsed << " ("
            << (100.0 * parsed / files.size()) << "%), of which round-trip=" << roundtrip
            << "\n";
  for (const auto& [reason, n] : reasons) std::cout << "  " << n << " x " << reason << "\n";
}

TEST(CorpusRoundTripTest, InvalidParsesOrFailsClearly) {
  HILO_SKIP_WITHOUT_SHARED_DIR();
  const std::string dir = kCorpus + "/invalid";
  std::vector<std::string> files = HloFiles(dir);
  ASSERT_GT(files.size(), 100u) << "corpus not found at " << dir;
  int parsed = 0;
  for (const std::string& path : files) {
    std::string text = ReadFile(path);
    auto module = ParseHloModule(text, Relative(path, dir));
    if (module.ok()) {
      ++parsed;
      bool same;
      std::string problem = RoundTrip(path, text, &same);
      EXPECT_TRUE(problem.empty()) << path << " parses but does not round-trip: " << problem;
      continue;
    }
    EXPECT_TRUE(IsClearError(std::string(module.status().message())))
        << path << ":\n" << module.status().message();
  }
  std::cout << "[corpus invalid] files=" << files.size() << " parsed=" << parsed
            << " rejected with a clear error=" << files.size() - parsed << "\n";
}

}  // namespace
}  // namespace hilo

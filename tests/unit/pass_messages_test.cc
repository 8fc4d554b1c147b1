// tools/hilo-opt/pass_messages.h: the summary line from a report entry, and
// --explain's grouping of identical decisions.
#include "pass_messages.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace hilo {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

TEST(PassSummaryLineTest, OnlyForPassesThatSayWhatChanged) {
  nlohmann::json entry = {{"name", "dce"}, {"changed", true}, {"change_summary", "removed 1 dead instruction"}};
  EXPECT_EQ(PassSummaryLine(entry), "dce: removed 1 dead instruction");
  // The injector's quirk: it stamps but says "changed": false.
  entry["changed"] = false;
  EXPECT_EQ(PassSummaryLine(entry), "dce: removed 1 dead instruction");
  // A skipped pass, or one with nothing to say.
  EXPECT_EQ(PassSummaryLine({{"name", "x"}, {"changed", false}, {"skipped", "why"}}), std::nullopt);
  EXPECT_EQ(PassSummaryLine({{"name", "x"}, {"changed", true}}), std::nullopt);
}

TEST(GroupExplanationsTest, GroupsIdenticalDecisionsWhereTheFirstWas) {
  std::vector<std::string> lines = {
      "%a in main: left alone: no token",
      "%b in main: replaced by %t",
      "%c in main: left alone: no token",
      "no colon here",
      "%d in main: left alone: no token",
      "%e in main: left alone: no token",
      "%f in main: left alone: shapes differ",
  };
  EXPECT_THAT(GroupExplanations(lines),
              ElementsAre("4 x left alone: no token (%a in main, %c in main, %d in main and 1 more)",
                          "%b in main: replaced by %t", "no colon here",
                          "%f in main: left alone: shapes differ"));
}

TEST(GroupExplanationsTest, DistinctDecisionsStayAsTheyAre) {
  std::vector<std::string> lines = {"x: one", "y: two"};
  EXPECT_THAT(GroupExplanations(lines), ElementsAre("x: one", "y: two"));
  EXPECT_TRUE(GroupExplanations({}).empty());
  EXPECT_THAT(GroupExplanations(std::vector<std::string>{"p: same", "q: same"}),
              ElementsAre("2 x same (p, q)"));
}

TEST(EquivalenceNoteTest, SaysWhatWasCompared) {
  eval::EquivalenceReport report;
  report.grid.replica_count = 8;
  report.seed = 3;
  const std::string note = EquivalenceNote(report);
  EXPECT_THAT(note, HasSubstr("8 simulated devices"));
  EXPECT_THAT(note, HasSubstr("seed 3"));
  EXPECT_THAT(note, HasSubstr("hilo's model of the kernel's contract"));
  EXPECT_THAT(note, HasSubstr("not on Neuron hardware"));
}

TEST(EquivalenceNoteTest, SaysAStructuralVerdictRanNothing) {
  eval::EquivalenceReport report;
  report.structurally_identical = true;
  const std::string note = EquivalenceNote(report);
  EXPECT_THAT(note, HasSubstr("structurally"));
  EXPECT_THAT(note, HasSubstr("--check-by-running"));
  EXPECT_THAT(note, Not(HasSubstr("simulated devices")));
}

TEST(EquivalenceNoteTest, SaysALocalVerdictRanOnlyTheChangedRegions) {
  eval::EquivalenceReport report;
  report.grid.replica_count = 4;
  report.local = eval::EquivalenceReport::Local{};
  const std::string note = EquivalenceNote(report);
  EXPECT_THAT(note, HasSubstr("the verdict is local"));
  EXPECT_THAT(note, HasSubstr("4 simulated devices"));
  EXPECT_THAT(note, HasSubstr("random values at their inputs"));
}

}  // namespace
}  // namespace hilo

// ComputationNameIndex (the module's computations by name, as positions in
// its list): finds every computation at its position through growth, and
// after erasures, which shift entries back in the table (a broken shift
// loses entries that probed past the hole) and number every later
// computation one lower (a broken renumbering finds the wrong one).
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "hilo/ir/computation_name_index.h"
#include "hilo/ir/hlo_computation.h"
#include "hilo/ir/hlo_module.h"

namespace hilo {
namespace {

using Computations = std::vector<std::unique_ptr<HloComputation>>;

// Every computation of `list` is found at its position, and the names of
// `gone` are not found.
void ExpectIndexed(const ComputationNameIndex& index, const Computations& list,
                   const std::vector<std::string>& gone) {
  EXPECT_EQ(index.size(), list.size());
  EXPECT_LE(index.size(), index.capacity() - index.capacity() / 8);
  for (size_t i = 0; i < list.size(); ++i) {
    EXPECT_EQ(index.Find(list[i]->name(), list), static_cast<int64_t>(i)) << list[i]->name();
  }
  for (const std::string& name : gone) EXPECT_EQ(index.Find(name, list), -1) << name;
}

TEST(ComputationNameIndexTest, FindsPositionsThroughGrowthAndErasure) {
  Computations list;
  ComputationNameIndex index;
  EXPECT_EQ(index.Find("a", list), -1);
  for (int i = 0; i < 3000; ++i) {
    list.push_back(std::make_unique<HloComputation>(absl::StrCat("computation_with_a_name.", i)));
    index.Insert(list.size() - 1, list);
  }
  ExpectIndexed(index, list, {"computation_with_a_name.3000", "a"});
  // Erase two of every three, from the front: runs are cut in many places
  // and every erasure renumbers all the computations after it.
  std::vector<std::string> gone;
  for (size_t i = 0; i < list.size();) {
    if (gone.size() % 2 == 0 || i % 3 != 0) {
      gone.emplace_back(list[i]->name());
      index.Erase(i, list);
      list.erase(list.begin() + static_cast<std::ptrdiff_t>(i));
      if (gone.size() % 97 == 0) ExpectIndexed(index, list, gone);
    } else {
      ++i;
    }
  }
  ExpectIndexed(index, list, gone);
  // Names erased come back at the end of the list.
  for (size_t k = 0; k < 100; ++k) {
    list.push_back(std::make_unique<HloComputation>(gone.back()));
    gone.pop_back();
    index.Insert(list.size() - 1, list);
  }
  ExpectIndexed(index, list, gone);
  // The last one and the first one.
  gone.emplace_back(list.back()->name());
  index.Erase(list.size() - 1, list);
  list.pop_back();
  gone.emplace_back(list.front()->name());
  index.Erase(0, list);
  list.erase(list.begin());
  ExpectIndexed(index, list, gone);
}

// Through the module: a name added twice gets a suffix, and a removed
// computation's name is free again while the others keep theirs.
TEST(ComputationNameIndexTest, ModuleAddsRenamesAndRemoves) {
  HloModule module("m");
  HloComputation* a = module.AddComputation(std::make_unique<HloComputation>("a"));
  HloComputation* b = module.AddComputation(std::make_unique<HloComputation>("b"));
  HloComputation* a1 = module.AddComputation(std::make_unique<HloComputation>("a"));
  EXPECT_EQ(a1->name(), "a.1");
  EXPECT_EQ(module.GetComputationWithName("a"), a);
  EXPECT_EQ(module.GetComputationWithName("a.1"), a1);
  module.RemoveComputation(a);
  EXPECT_EQ(module.GetComputationWithName("a"), nullptr);
  EXPECT_EQ(module.GetComputationWithName("b"), b);
  EXPECT_EQ(module.GetComputationWithName("a.1"), a1);
  HloComputation* again = module.AddComputation(std::make_unique<HloComputation>("a"));
  EXPECT_EQ(again->name(), "a");
  EXPECT_EQ(module.GetComputationWithName("a"), again);
  EXPECT_EQ(module.computation_count(), 3);
}

}  // namespace
}  // namespace hilo

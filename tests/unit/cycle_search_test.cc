// HloComputation::FindCycle: the search from the edges that climb to larger
// unique ids gives exactly the whole-computation walk's answer
// (FindCycleByWalk), cycle or not, and stays linear when every edge climbs.
#include <cstdint>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "hilo/analysis/hlo_verifier.h"
#include "hilo/ir/hlo_computation.h"
#include "hilo/ir/hlo_instruction.h"
#include "hilo/ir/hlo_module.h"

namespace hilo {
namespace {

Shape F32() { return Shape::MakeArray(PrimitiveType::F32, {}); }

struct Graph {
  std::unique_ptr<HloModule> module = std::make_unique<HloModule>("m");
  HloComputation* comp =
      module->AddComputation(std::make_unique<HloComputation>("main"), /*is_entry=*/true);
  std::vector<HloInstruction*> insts;

  Graph() { insts.push_back(comp->AddInstruction(HloInstruction::CreateParameter(0, F32(), "p"))); }
  HloInstruction* Add(HloOpcode opcode, std::vector<HloInstruction*> operands) {
    insts.push_back(comp->AddInstruction(HloInstruction::Create(opcode, F32(), operands)));
    return insts.back();
  }
};

// Same edge, or both none.
void ExpectSameAnswer(const HloComputation& comp, const std::string& what) {
  std::optional<HloComputation::CycleEdge> fast = comp.FindCycle();
  std::optional<HloComputation::CycleEdge> walk = comp.FindCycleByWalk();
  ASSERT_EQ(fast.has_value(), walk.has_value()) << what;
  if (!walk.has_value()) return;
  EXPECT_EQ(fast->from, walk->from) << what;
  EXPECT_EQ(fast->to, walk->to) << what;
  EXPECT_EQ(fast->control, walk->control) << what;
}

TEST(CycleSearchTest, WrittenInOrderHasNoUpEdgeAndNoCycle) {
  Graph g;
  HloInstruction* a = g.Add(HloOpcode::kNegate, {g.insts[0]});
  HloInstruction* b = g.Add(HloOpcode::kAdd, {a, g.insts[0]});
  g.comp->set_root_instruction(b);
  EXPECT_FALSE(g.comp->FindCycle().has_value());
  ExpectSameAnswer(*g.comp, "in order");
}

TEST(CycleSearchTest, ARewriteLikeAPassesIsAcyclicAndACycleIsTheWalksEdge) {
  // x = negate(p); y = exp(x); r = add(y, p). A new instruction n = negate(x)
  // replaces y in r: r -> n climbs (n is newer), no cycle.
  Graph g;
  HloInstruction* x = g.Add(HloOpcode::kNegate, {g.insts[0]});
  HloInstruction* y = g.Add(HloOpcode::kExp, {x});
  HloInstruction* r = g.Add(HloOpcode::kAdd, {y, g.insts[0]});
  g.comp->set_root_instruction(r);
  HloInstruction* n = g.Add(HloOpcode::kNegate, {x});
  r->ReplaceOperandWith(0, n);
  EXPECT_FALSE(g.comp->FindCycle().has_value());
  ExpectSameAnswer(*g.comp, "rewired");
  // Now n uses r: r -> n -> r.
  n->ReplaceOperandWith(0, r);
  ASSERT_TRUE(g.comp->FindCycle().has_value());
  ExpectSameAnswer(*g.comp, "cycle through the new instruction");
  // Through a control edge: hz becomes a control predecessor of hx (the
  // edge hx -> hz climbs), and hz needs hy, which needs hx.
  Graph h;
  HloInstruction* hx = h.Add(HloOpcode::kNegate, {h.insts[0]});
  HloInstruction* hy = h.Add(HloOpcode::kExp, {hx});
  HloInstruction* hz = h.Add(HloOpcode::kExp, {hy});
  h.comp->set_root_instruction(hz);
  hz->AddControlDependencyTo(hx);  // hx waits for hz, which needs hx
  ASSERT_TRUE(h.comp->FindCycle().has_value());
  ExpectSameAnswer(*h.comp, "control cycle");
}

// 1-39 adds and multiplies of earlier instructions (no up-edge), the last
// one the root.
void AddRandomInOrder(std::mt19937& rng, Graph* g) {
  const int n = 2 + static_cast<int>(rng() % 40);
  for (int i = 1; i < n; ++i) {
    HloInstruction* a = g->insts[rng() % g->insts.size()];
    HloInstruction* b = g->insts[rng() % g->insts.size()];
    g->Add(rng() % 2 == 0 ? HloOpcode::kAdd : HloOpcode::kMultiply, {a, b});
  }
  g->comp->set_root_instruction(g->insts.back());
}

TEST(CycleSearchTest, RandomGraphsGiveTheWalksAnswer) {
  int cyclic = 0;
  int acyclic_with_up_edges = 0;
  for (uint32_t seed = 1; seed <= 400; ++seed) {
    std::mt19937 rng(seed);
    Graph g;
    AddRandomInOrder(rng, &g);
    // A few edits that may climb: rewired operands and control edges, some
    // of them closing cycles, more of them not.
    const int edits = static_cast<int>(rng() % 4);
    bool climbs = false;
    for (int e = 0; e < edits; ++e) {
      HloInstruction* user = g.insts[1 + rng() % (g.insts.size() - 1)];
      HloInstruction* target = g.insts[rng() % g.insts.size()];
      climbs |= target->unique_id() >= user->unique_id();
      if (rng() % 3 == 0) {
        target->AddControlDependencyTo(user);
      } else {
        user->ReplaceOperandWith(rng() % 2, target);
      }
    }
    const std::string what = "seed " + std::to_string(seed);
    ExpectSameAnswer(*g.comp, what);
    if (g.comp->FindCycleByWalk().has_value()) {
      ++cyclic;
    } else if (climbs) {
      ++acyclic_with_up_edges;
    }
  }
  // Both kinds were tried.
  EXPECT_GT(cyclic, 20);
  EXPECT_GT(acyclic_with_up_edges, 20);
}

// Random in-order graphs whose up-edge log was started (a FindCycle that
// found none) before the edits: every edit that climbs is logged, so the
// answer is still the walk's.
TEST(CycleSearchTest, EditsAfterTheLogStartedGiveTheWalksAnswer) {
  int cyclic = 0;
  for (uint32_t seed = 1; seed <= 400; ++seed) {
    std::mt19937 rng(seed);
    Graph g;
    AddRandomInOrder(rng, &g);
    ASSERT_FALSE(g.comp->FindCycle().has_value());
    ASSERT_TRUE(g.comp->up_edges_logged());
    const int edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < edits; ++e) {
      HloInstruction* user = g.insts[1 + rng() % (g.insts.size() - 1)];
      HloInstruction* target = g.insts[rng() % g.insts.size()];
      switch (rng() % 4) {
        case 0:
          target->AddControlDependencyTo(user);
          break;
        case 1:
          user->ReplaceOperandWith(rng() % user->operand_count(), target);
          break;
        case 2:
          // A new instruction in place of `user`'s operand, using `target`.
          user->ReplaceOperandWith(rng() % user->operand_count(),
                                   g.Add(HloOpcode::kNegate, {target}));
          break;
        default:
          if (user != g.comp->root_instruction()) (void)user->ReplaceAllUsesWith(target);
          break;
      }
    }
    ExpectSameAnswer(*g.comp, "seed " + std::to_string(seed));
    if (g.comp->FindCycleByWalk().has_value()) ++cyclic;
  }
  EXPECT_GT(cyclic, 20);
}

TEST(CycleSearchTest, AnInstructionAddedAfterItsUserIsLogged) {
  // r = negate(p), logged from here on. x = negate(r) is made outside the
  // computation and r is pointed at it (r -> x -> r) before x is added:
  // the edge r -> x climbs only once AddInstruction gives x its id.
  Graph g;
  HloInstruction* r = g.Add(HloOpcode::kNegate, {g.insts[0]});
  g.comp->set_root_instruction(r);
  ASSERT_FALSE(g.comp->FindCycle().has_value());
  std::unique_ptr<HloInstruction> x = HloInstruction::Create(HloOpcode::kNegate, F32(), {r});
  r->ReplaceOperandWith(0, x.get());
  g.comp->AddInstruction(std::move(x));
  ASSERT_TRUE(g.comp->up_edges_logged());
  ASSERT_TRUE(g.comp->FindCycle().has_value());
  ExpectSameAnswer(*g.comp, "added after its user");
}

TEST(CycleSearchTest, TheVerifierStartsTheLogAndALongLogIsDropped) {
  Graph g;
  HloInstruction* a = g.Add(HloOpcode::kNegate, {g.insts[0]});
  g.comp->set_root_instruction(a);
  EXPECT_FALSE(g.comp->up_edges_logged());
  ASSERT_TRUE(VerifyHloModule(*g.module).ok());
  EXPECT_TRUE(g.comp->up_edges_logged());
  // More logged up-edges than the computation has instructions (and than
  // the smallest log, 1024): the log is dropped and FindCycle sweeps again.
  std::vector<HloInstruction*> later;
  for (int i = 0; i < 1100; ++i) later.push_back(g.Add(HloOpcode::kNegate, {g.insts[0]}));
  for (int i = 0; i + 1 < 1100; ++i) later[i]->ReplaceOperandWith(0, later[i + 1]);
  for (int i = 0; i + 2 < 1100; ++i) later[i]->ReplaceOperandWith(0, later[i + 2]);
  EXPECT_FALSE(g.comp->up_edges_logged());
  EXPECT_FALSE(g.comp->FindCycle().has_value());
  later.back()->ReplaceOperandWith(0, later.front());
  ASSERT_TRUE(g.comp->FindCycle().has_value());
  ExpectSameAnswer(*g.comp, "after the log was dropped");
}

TEST(CycleSearchTest, StaysLinearWhenEveryEdgeClimbs) {
  // 100,000 instructions, each using the next one created: every edge
  // climbs, and each search alone would cover everything above it
  // (quadratic: 5e9 steps). The searches' budget runs out and the walk
  // answers; with a cycle closed at the far end, the walk's edge.
  Graph g;
  const int n = 100000;
  for (int i = 0; i < n; ++i) g.Add(HloOpcode::kNegate, {g.insts[0]});
  for (int i = 1; i < n; ++i) g.insts[i]->ReplaceOperandWith(0, g.insts[i + 1]);
  g.comp->set_root_instruction(g.insts[1]);
  EXPECT_FALSE(g.comp->FindCycle().has_value());
  g.insts[n]->ReplaceOperandWith(0, g.insts[1]);
  ASSERT_TRUE(g.comp->FindCycle().has_value());
  ExpectSameAnswer(*g.comp, "long climbing cycle");
}

}  // namespace
}  // namespace hilo

// Verifying only what a pass touched (VerifyHloInstructions, and
// HloPassPipeline with a pass that lists its touched instructions): a broken
// change is still caught, the pass is named, and HILO_VERIFY_FULL=1 gives
// the whole-module check back. Modules are built through the IR API.
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "hilo/analysis/hlo_verifier.h"
#include "hilo/ir/hlo_computation.h"
#include "hilo/ir/hlo_instruction.h"
#include "hilo/ir/hlo_module.h"
#include "hilo/pass/hlo_dce.h"
#include "hilo/pass/hlo_pass_pipeline.h"
#include "hilo/pass/op_expander_pass.h"

namespace hilo {
namespace {

using ::testing::HasSubstr;

Shape F32(std::vector<int64_t> dims) { return Shape::MakeArray(PrimitiveType::F32, dims); }

// entry: p0 = f32[4] parameter(0); a = negate(p0); b = exp(a); ROOT r = add(b, p0);
// other: q = f32[4] parameter(0); ROOT n = negate(q).
struct Module {
  std::unique_ptr<HloModule> module = std::make_unique<HloModule>("m");
  HloComputation* entry;
  HloComputation* other;
  HloInstruction *p0, *a, *b, *root, *q;

  Module() {
    other = module->AddComputation(std::make_unique<HloComputation>("other"), false);
    q = other->AddInstruction(HloInstruction::CreateParameter(0, F32({4}), "q"));
    other->set_root_instruction(
        other->AddInstruction(HloInstruction::Create(HloOpcode::kNegate, F32({4}), {q}, "n")));
    entry = module->AddComputation(std::make_unique<HloComputation>("entry"), true);
    p0 = entry->AddInstruction(HloInstruction::CreateParameter(0, F32({4}), "p0"));
    a = entry->AddInstruction(HloInstruction::Create(HloOpcode::kNegate, F32({4}), {p0}, "a"));
    b = entry->AddInstruction(HloInstruction::Create(HloOpcode::kExp, F32({4}), {a}, "b"));
    root = entry->AddInstruction(HloInstruction::Create(HloOpcode::kAdd, F32({4}), {b, p0}, "r"));
    entry->set_root_instruction(root);
  }
};

// Expands every exp with `expand`.
class ExpExpander : public OpExpanderPass {
 public:
  using Expand = std::function<HloInstruction*(HloInstruction*)>;
  explicit ExpExpander(Expand expand) : expand_(std::move(expand)) {}
  absl::string_view name() const override { return "exp-expander"; }

 protected:
  bool InstructionMatchesPattern(HloInstruction* instruction) override {
    return instruction->opcode() == HloOpcode::kExp;
  }
  absl::StatusOr<HloInstruction*> ExpandInstruction(HloInstruction* instruction) override {
    return expand_(instruction);
  }

 private:
  Expand expand_;
};

// Runs `expand` on the module through a pipeline (verification at the end,
// the default), with HILO_VERIFY_FULL set to `full` ("" = unset).
absl::StatusOr<bool> RunPipeline(Module& m, ExpExpander::Expand expand, const char* full = "") {
  if (*full != '\0') {
    setenv("HILO_VERIFY_FULL", full, 1);
  } else {
    unsetenv("HILO_VERIFY_FULL");
  }
  EXPECT_TRUE(VerifyHloModule(*m.module).ok()) << VerifyHloModule(*m.module);
  HloPassPipeline pipeline;
  pipeline.AddPass<ExpExpander>(std::move(expand));
  absl::StatusOr<bool> changed = pipeline.Run(m.module.get());
  unsetenv("HILO_VERIFY_FULL");
  return changed;
}

HloInstruction* Add(HloComputation* c, std::unique_ptr<HloInstruction> inst) {
  return c->AddInstruction(std::move(inst));
}

TEST(IncrementalVerificationTest, AValidExpansionPassesAndListsWhatItTouched) {
  Module m;
  ExpExpander expander([](HloInstruction* exp) {
    return Add(exp->parent(), HloInstruction::CreateCustomCall(exp->shape(),
                                                               {exp->mutable_operand(0)}, "K"));
  });
  absl::StatusOr<bool> changed = expander.Run(m.module.get());
  ASSERT_TRUE(changed.ok()) << changed.status();
  ASSERT_TRUE(*changed);
  const std::vector<const HloInstruction*>& touched = *expander.touched_instructions();
  const HloInstruction* custom_call = m.root->operand(0);
  const HloInstruction* root = m.root;
  // The custom-call (added, listed twice: as the replacement and as added)
  // and the user whose operand changed; not its operand a, whose new user
  // edge is checked from the custom-call's side.
  EXPECT_THAT(touched, ::testing::UnorderedElementsAre(custom_call, root, custom_call));
  EXPECT_TRUE(VerifyHloInstructions(*m.module, touched).ok());
  EXPECT_TRUE(VerifyHloModule(*m.module).ok());
}

// An expander whose expansions vouch that they read only ancestors of what
// they replace (OpExpanderPass::NoteExpansionReadsOnlyAncestors) when `vouch`
// says so for the instruction.
class VouchingExpander : public OpExpanderPass {
 public:
  using Vouch = std::function<bool(HloInstruction*)>;
  VouchingExpander(ExpExpander::Expand expand, Vouch vouch)
      : expand_(std::move(expand)), vouch_(std::move(vouch)) {}
  absl::string_view name() const override { return "vouching-expander"; }

 protected:
  bool InstructionMatchesPattern(HloInstruction* instruction) override {
    return instruction->opcode() == HloOpcode::kExp;
  }
  absl::StatusOr<HloInstruction*> ExpandInstruction(HloInstruction* instruction) override {
    if (vouch_(instruction)) NoteExpansionReadsOnlyAncestors();
    return expand_(instruction);
  }

 private:
  ExpExpander::Expand expand_;
  Vouch vouch_;
};

// touched_made_no_cycle() is true only when every replacing expansion of
// the Run vouched; the pipeline then leaves out the cycle search of the
// touched check, and only that: a (false) vouch for an expansion that does
// close a cycle (the custom-call reads the root, which the custom-call
// replaces an operand of) passes, and is caught with
// HILO_TOUCHED_NO_CYCLE_PROOF=0, without the vouch, or by the full check.
TEST(IncrementalVerificationTest, OnlyAVouchedRunSkipsTheCycleSearch) {
  auto cyclic = [](HloInstruction* exp) {
    HloInstruction* root = exp->parent()->root_instruction();
    return Add(exp->parent(), HloInstruction::CreateCustomCall(exp->shape(), {root}, "K"));
  };
  auto valid = [](HloInstruction* exp) {
    return Add(exp->parent(), HloInstruction::CreateCustomCall(exp->shape(),
                                                               {exp->mutable_operand(0)}, "K"));
  };
  for (bool vouch : {false, true}) {
    Module m;
    VouchingExpander expander(valid, [vouch](HloInstruction*) { return vouch; });
    ASSERT_TRUE(*expander.Run(m.module.get()));
    EXPECT_EQ(expander.touched_made_no_cycle(), vouch);
  }
  {
    // Two exps, only one vouched: the Run does not vouch.
    Module m;
    HloInstruction* exp2 = m.entry->AddInstruction(
        HloInstruction::Create(HloOpcode::kExp, F32({4}), {m.b}, "b2"));
    m.root->ReplaceOperandWith(1, exp2);
    VouchingExpander expander(valid, [&](HloInstruction* exp) { return exp != exp2; });
    ASSERT_TRUE(*expander.Run(m.module.get()));
    EXPECT_FALSE(expander.touched_made_no_cycle());
    EXPECT_TRUE(VerifyHloModule(*m.module).ok());
  }
  auto run = [&](bool vouch, const char* proof) {
    Module m;
    EXPECT_TRUE(VerifyHloModule(*m.module).ok());
    if (proof != nullptr) setenv("HILO_TOUCHED_NO_CYCLE_PROOF", proof, 1);
    HloPassPipeline pipeline;
    pipeline.AddPass<VouchingExpander>(cyclic, [vouch](HloInstruction*) { return vouch; });
    absl::StatusOr<bool> changed = pipeline.Run(m.module.get());
    unsetenv("HILO_TOUCHED_NO_CYCLE_PROOF");
    EXPECT_FALSE(VerifyHloModule(*m.module).ok()) << "the full check finds the cycle";
    return changed.status();
  };
  EXPECT_TRUE(run(/*vouch=*/true, nullptr).ok());
  EXPECT_THAT(std::string(run(/*vouch=*/true, "0").message()), HasSubstr("cycle"));
  EXPECT_THAT(std::string(run(/*vouch=*/false, nullptr).message()), HasSubstr("cycle"));
}

TEST(IncrementalVerificationTest, AReroutedUserWithTheSameShapeObjectIsNotListed) {
  // The replacement shares the exp's shape object: the root, only rerouted
  // to it, is left out (ReroutedUserNeedsNoCheck); with
  // HILO_EXPANDER_SKIP_REROUTED_USERS=0 it is listed as before. Either way
  // the module verifies, touched set and whole.
  for (const bool skip : {true, false}) {
    if (skip) {
      unsetenv("HILO_EXPANDER_SKIP_REROUTED_USERS");
    } else {
      setenv("HILO_EXPANDER_SKIP_REROUTED_USERS", "0", 1);
    }
    Module m;
    ExpExpander expander([](HloInstruction* exp) {
      return Add(exp->parent(), HloInstruction::CreateCustomCall(
                                    exp->shared_shape(), {exp->mutable_operand(0)}, "K"));
    });
    absl::StatusOr<bool> changed = expander.Run(m.module.get());
    unsetenv("HILO_EXPANDER_SKIP_REROUTED_USERS");
    ASSERT_TRUE(changed.ok()) << changed.status();
    const std::vector<const HloInstruction*>& touched = *expander.touched_instructions();
    const HloInstruction* custom_call = m.root->operand(0);
    ASSERT_EQ(&custom_call->shape(), &m.b->shape());
    if (skip) {
      EXPECT_THAT(touched, ::testing::UnorderedElementsAre(custom_call, custom_call));
    } else {
      EXPECT_THAT(touched, ::testing::UnorderedElementsAre(custom_call, m.root, custom_call));
    }
    EXPECT_TRUE(VerifyHloInstructions(*m.module, touched).ok());
    EXPECT_TRUE(VerifyHloModule(*m.module).ok());
  }
  // The shape checks that read more of an operand than its shape.
  EXPECT_FALSE(ReroutedUserNeedsNoCheck(HloOpcode::kSendDone));
  EXPECT_FALSE(ReroutedUserNeedsNoCheck(HloOpcode::kRecvDone));
  EXPECT_TRUE(ReroutedUserNeedsNoCheck(HloOpcode::kAdd));
  EXPECT_TRUE(ReroutedUserNeedsNoCheck(HloOpcode::kTranspose));
}

TEST(IncrementalVerificationTest, ASameShapeReplacementInAnotherComputationIsStillCaught) {
  // Rerouted to an instruction of another computation that shares the exp's
  // shape object: the root is not listed, and the replacement's own check of
  // its users finds the edge that crosses computations.
  Module m;
  HloInstruction* elsewhere = nullptr;
  absl::StatusOr<bool> changed = RunPipeline(m, [&](HloInstruction* exp) {
    elsewhere = Add(m.other, HloInstruction::Create(HloOpcode::kNegate, exp->shared_shape(),
                                                    {m.q}, "elsewhere"));
    return elsewhere;
  });
  ASSERT_FALSE(changed.ok());
  EXPECT_THAT(std::string(changed.status().message()),
              HasSubstr("module is invalid after pass 'exp-expander'"));
  EXPECT_THAT(std::string(changed.status().message()), HasSubstr("%elsewhere"));
}

TEST(IncrementalVerificationTest, ABadNewInstructionIsCaughtAndThePassNamed) {
  // A replacement of the right shape whose own shape check fails (an add of
  // f32[4] and f32[2]).
  Module m;
  absl::StatusOr<bool> changed = RunPipeline(m, [](HloInstruction* exp) {
    HloComputation* c = exp->parent();
    HloInstruction* small = Add(c, HloInstruction::CreateReshape(F32({2, 2}), exp->mutable_operand(0)));
    return Add(c, HloInstruction::Create(HloOpcode::kAdd, F32({4}), {exp->mutable_operand(0), small},
                                         "bad_add"));
  });
  ASSERT_FALSE(changed.ok());
  EXPECT_EQ(changed.status().code(), absl::StatusCode::kInternal);
  EXPECT_THAT(std::string(changed.status().message()), HasSubstr("module is invalid after pass 'exp-expander'"));
  EXPECT_THAT(std::string(changed.status().message()), HasSubstr("bad_add"));
}

TEST(IncrementalVerificationTest, AnUnusedBadInstructionTheExpansionAddedIsCaught) {
  // Added but used by nothing: found by its unique id, not through the
  // replacement's operands.
  Module m;
  absl::StatusOr<bool> changed = RunPipeline(m, [](HloInstruction* exp) {
    HloComputation* c = exp->parent();
    Add(c, HloInstruction::CreateReshape(F32({7}), exp->mutable_operand(0)));
    return Add(c, HloInstruction::CreateCustomCall(exp->shape(), {exp->mutable_operand(0)}, "K"));
  });
  ASSERT_FALSE(changed.ok());
  EXPECT_THAT(std::string(changed.status().message()), HasSubstr("module is invalid after pass 'exp-expander'"));
  EXPECT_THAT(std::string(changed.status().message()), HasSubstr("reshape"));
}

TEST(IncrementalVerificationTest, ACycleThroughARewiredUserIsCaught) {
  // exp(a) replaced by negate(r): r used exp, so r -> negate -> r.
  Module m;
  absl::StatusOr<bool> changed = RunPipeline(m, [&m](HloInstruction* exp) {
    return Add(exp->parent(), HloInstruction::Create(HloOpcode::kNegate, F32({4}), {m.root}, "loop"));
  });
  ASSERT_FALSE(changed.ok());
  EXPECT_THAT(std::string(changed.status().message()), HasSubstr("module is invalid after pass 'exp-expander'"));
  EXPECT_THAT(std::string(changed.status().message()), HasSubstr("on a cycle"));
}

TEST(IncrementalVerificationTest, ACycleThroughAnInstructionThePassDidNotListIsCaught) {
  // Outside a listing pass's contract, still caught: the expansion also
  // makes `a` (not listed) use the root, so a -> r -> negate -> a. The
  // cycle search sweeps the whole computation for climbing edges.
  Module m;
  absl::StatusOr<bool> changed = RunPipeline(m, [&m](HloInstruction* exp) {
    m.a->ReplaceOperandWith(0, m.root);
    return Add(exp->parent(),
               HloInstruction::Create(HloOpcode::kNegate, F32({4}), {m.a}, "new_negate"));
  });
  ASSERT_FALSE(changed.ok());
  EXPECT_THAT(std::string(changed.status().message()), HasSubstr("module is invalid after pass 'exp-expander'"));
  EXPECT_THAT(std::string(changed.status().message()), HasSubstr("on a cycle"));
}

TEST(IncrementalVerificationTest, AnOperandFromAnotherComputationIsCaught) {
  // Rerouted to an existing instruction of another computation: the
  // rewired user is checked.
  Module m;
  absl::StatusOr<bool> changed = RunPipeline(m, [&m](HloInstruction*) {
    return m.other->root_instruction();
  });
  ASSERT_FALSE(changed.ok());
  EXPECT_THAT(std::string(changed.status().message()), HasSubstr("module is invalid after pass 'exp-expander'"));
  EXPECT_THAT(std::string(changed.status().message()), HasSubstr("in computation %other, instruction %n: %r is listed as a user"));
}

TEST(IncrementalVerificationTest, HiloVerifyFullChecksTheWholeModule) {
  // A problem outside what the pass touched (an instruction renamed behind
  // the module's back, which no pass does): only the whole-module check
  // sees it. This is the difference the switch measures.
  auto break_elsewhere = [](Module& m) {
    m.q->SetNameUnchecked("p0");  // now two instructions are named p0
  };
  auto expand = [](HloInstruction* exp) {
    return Add(exp->parent(), HloInstruction::CreateCustomCall(exp->shape(),
                                                               {exp->mutable_operand(0)}, "K"));
  };
  {
    Module m;
    ASSERT_TRUE(VerifyHloModule(*m.module).ok());
    HloPassPipeline pipeline;
    pipeline.AddPass<ExpExpander>(expand);
    break_elsewhere(m);
    unsetenv("HILO_VERIFY_FULL");
    EXPECT_TRUE(pipeline.Run(m.module.get()).ok());
  }
  {
    Module m;
    HloPassPipeline pipeline;
    pipeline.AddPass<ExpExpander>(expand);
    break_elsewhere(m);
    setenv("HILO_VERIFY_FULL", "1", 1);
    absl::StatusOr<bool> changed = pipeline.Run(m.module.get());
    unsetenv("HILO_VERIFY_FULL");
    ASSERT_FALSE(changed.ok());
    EXPECT_THAT(std::string(changed.status().message()), HasSubstr("used more than once"));
  }
}

TEST(IncrementalVerificationTest, FullSwitchCatchesWhatIncrementalCatches) {
  Module m;
  absl::StatusOr<bool> changed = RunPipeline(
      m,
      [&m](HloInstruction* exp) {
        return Add(exp->parent(),
                   HloInstruction::Create(HloOpcode::kNegate, F32({4}), {m.root}, "loop"));
      },
      "1");
  ASSERT_FALSE(changed.ok());
  EXPECT_THAT(std::string(changed.status().message()), HasSubstr("module is invalid after pass 'exp-expander'"));
}

TEST(IncrementalVerificationTest, ATouchedInstructionThatCallsFallsBackToTheWholeModule) {
  // A call's callee is checked only by the whole-module walk (call graph,
  // parameters); the touched check hands over to it.
  Module m;
  HloInstruction* call = Add(m.entry, HloInstruction::Create(HloOpcode::kCall, F32({4}), {m.p0}, "c"));
  call->SetCalledComputations("to_apply", {m.other});
  m.other->root_instruction()->SetNameUnchecked("p0");  // a duplicate only the full walk sees
  const std::vector<const HloInstruction*> touched = {call};
  absl::Status status = VerifyHloInstructions(*m.module, touched);
  EXPECT_THAT(status.message(), HasSubstr("used more than once"));
}

// The touched check's fast path (Verifier::TouchedStructureOk) only says
// "all pass": whatever it does not vouch for goes through the checks that
// name the error, with the same message as before it. Each case below is
// checked on a touched instruction that is not a parameter (a parameter
// makes the whole module checked).
std::string TouchedError(const Module& m, std::vector<const HloInstruction*> touched) {
  absl::Status s = VerifyHloInstructions(*m.module, touched);
  return s.ok() ? std::string("ok") : std::string(s.message());
}

TEST(IncrementalVerificationTest, FastPathLeavesAStrayUserToTheFullCheck) {
  Module m;
  EXPECT_EQ(TouchedError(m, {m.b, m.a}), "ok");
  std::unique_ptr<HloInstruction> stray =
      HloInstruction::Create(HloOpcode::kNegate, F32({4}), {m.a}, "stray");
  EXPECT_EQ(TouchedError(m, {m.b, m.a}),
            "in computation %entry, instruction %a: %stray is listed as a user but does not use it "
            "as an operand");
  stray->DetachFromOperands();
  EXPECT_EQ(TouchedError(m, {m.b, m.a}), "ok");
}

TEST(IncrementalVerificationTest, FastPathLeavesAUserInAnotherComputationToTheFullCheck) {
  Module m;
  m.other->root_instruction()->AppendOperand(m.a);
  EXPECT_EQ(TouchedError(m, {m.a}),
            "in computation %entry, instruction %a: %n is listed as a user but does not use it "
            "as an operand");
}

TEST(IncrementalVerificationTest, FastPathLeavesAWrongArityToTheFullCheck) {
  Module m;
  m.b->AppendOperand(m.p0);
  EXPECT_THAT(TouchedError(m, {m.b}),
              ::testing::MatchesRegex("in computation %entry, instruction %b: [a-z]+ takes 1 "
                                      "operand\\(s\\) but has 2"));
}

TEST(IncrementalVerificationTest, FastPathLeavesAnOperandOfAnotherComputationToTheFullCheck) {
  Module m;
  m.b->ReplaceOperandWith(0, m.q);
  EXPECT_EQ(TouchedError(m, {m.b}),
            "in computation %entry, instruction %b: operand 0 %q is in computation %other, not "
            "in %entry");
}

TEST(IncrementalVerificationTest, ANameMissingFromTheIndexIsCaught) {
  Module m;
  m.a->SetNameUnchecked("renamed");
  EXPECT_EQ(TouchedError(m, {m.a}),
            "in computation %entry, instruction %renamed: instruction name is not registered in "
            "the module, so it may be used more than once");
  m.a->SetNameUnchecked("a");
  EXPECT_EQ(TouchedError(m, {m.a}), "ok");
}

TEST(IncrementalVerificationTest, ControlEdgesGoThroughTheFullCheckAndPass) {
  Module m;
  m.a->AddControlDependencyTo(m.b);
  EXPECT_EQ(TouchedError(m, {m.a, m.b}), "ok");
}

TEST(IncrementalVerificationTest, ABadReshapeAfterGoodOnesIsCaught) {
  // The shape memo compares a reshape with the last one that passed first
  // (ShapeMemo::Seen): a reshape of other Shape objects is still checked.
  Module m;
  std::vector<const HloInstruction*> touched;
  for (int i = 0; i < 3; ++i) {
    touched.push_back(Add(m.entry, HloInstruction::Create(HloOpcode::kReshape, F32({2, 2}),
                                                          {m.a}, "r" + std::to_string(i))));
  }
  EXPECT_EQ(TouchedError(m, touched), "ok");
  touched.push_back(
      Add(m.entry, HloInstruction::Create(HloOpcode::kReshape, F32({3}), {m.a}, "bad")));
  EXPECT_EQ(TouchedError(m, touched),
            "in computation %entry, instruction %bad: reshape of f32[4] (4 elements) to f32[3] (3 "
            "elements) changes the element count");
}

TEST(IncrementalVerificationTest, DceListsNothingAndStillLeavesAValidModule) {
  Module m;
  Add(m.entry, HloInstruction::Create(HloOpcode::kNegate, F32({4}), {m.p0}, "dead"));
  HloDCE dce;
  absl::StatusOr<bool> changed = dce.Run(m.module.get());
  ASSERT_TRUE(changed.ok());
  EXPECT_TRUE(*changed);
  ASSERT_NE(dce.touched_instructions(), nullptr);
  EXPECT_TRUE(dce.touched_instructions()->empty());
  EXPECT_TRUE(VerifyHloModule(*m.module).ok());
}

}  // namespace
}  // namespace hilo

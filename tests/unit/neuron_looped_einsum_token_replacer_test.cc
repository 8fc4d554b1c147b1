// Unit tests of neuron_looped_einsum_token_replacer (#64): the
// NEURON_COLLECTIVE_MATMUL_NXD gate (environment and flag), the rank-0
// get-tuple-element of an all-gather rerouted to the gather's operand 1
// (an existing instruction: nothing added), and every case left alone.
#include "hilo/passes/neuron_looped_einsum_token_replacer.h"

#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "hilo/analysis/hlo_verifier.h"
#include "hilo/ir/hlo_computation.h"
#include "hilo/ir/hlo_instruction.h"
#include "hilo/ir/hlo_module.h"
#include "hilo/passes/neuron_looped_einsum_replacer.h"

namespace hilo {
namespace {

using ::testing::HasSubstr;

Shape BF16(std::vector<int64_t> dims) { return Shape::MakeArray(PrimitiveType::BF16, std::move(dims)); }

// Clears NEURON_COLLECTIVE_MATMUL_NXD for the test and restores it after.
class NxdEnv {
 public:
  NxdEnv() {
    const char* v = std::getenv(kCollectiveMatmulNxdEnv);
    if (v != nullptr) saved_ = v;
    unsetenv(kCollectiveMatmulNxdEnv);
  }
  ~NxdEnv() {
    if (saved_.has_value()) {
      setenv(kCollectiveMatmulNxdEnv, saved_->c_str(), 1);
    } else {
      unsetenv(kCollectiveMatmulNxdEnv);
    }
  }

 private:
  std::optional<std::string> saved_;
};

// `(bf16[16,8], bf16[]) all-gather(w, tok)`, its two get-tuple-elements, and
// a root tuple using both.
struct TokenModule {
  std::unique_ptr<HloModule> module = std::make_unique<HloModule>("m");
  HloComputation* comp = nullptr;
  HloInstruction* w = nullptr;
  HloInstruction* tok = nullptr;
  HloInstruction* ag = nullptr;
  HloInstruction* data = nullptr;
  HloInstruction* token = nullptr;
  HloInstruction* root = nullptr;

  explicit TokenModule(Shape tok_shape = BF16({}), int64_t token_index = 1) {
    module->set_replica_count(4);
    comp = module->AddComputation(std::make_unique<HloComputation>("main"), true);
    w = comp->AddInstruction(HloInstruction::CreateParameter(0, BF16({4, 8}), "w"));
    tok = comp->AddInstruction(HloInstruction::CreateParameter(1, tok_shape, "tok"));
    Shape ag_shape = Shape::MakeTuple({BF16({16, 8}), BF16({})});
    ag = comp->AddInstruction(HloInstruction::Create(HloOpcode::kAllGather, ag_shape, {w, tok}, "ag"));
    ag->set_dimensions({0});
    ag->set_replica_groups(ReplicaGroups::Explicit({{0, 1, 2, 3}}));
    data = comp->AddInstruction(HloInstruction::CreateGetTupleElement(BF16({16, 8}), ag, 0));
    token = comp->AddInstruction(
        HloInstruction::CreateGetTupleElement(ag_shape.tuple_shapes(token_index), ag, token_index));
    root = comp->AddInstruction(HloInstruction::Create(
        HloOpcode::kTuple, Shape::MakeTuple({data->shape(), token->shape()}), {data, token}));
    comp->set_root_instruction(root);
  }
  int64_t InstructionCount() const { return comp->instruction_count(); }
};

TEST(TokenReplacerTest, GateOffDoesNothingAndSaysWhy) {
  NxdEnv env;
  TokenModule m;
  NeuronLoopedEinsumTokenReplacer pass{PassOptions{}};
  absl::StatusOr<bool> changed = pass.Run(m.module.get());
  ASSERT_TRUE(changed.ok());
  EXPECT_FALSE(*changed);
  EXPECT_EQ(m.root->operand(1), m.token);
  ASSERT_EQ(pass.candidates().size(), 1u);
  EXPECT_FALSE(pass.candidates()[0].replaced);
  ASSERT_EQ(pass.Explanations().size(), 1u);
  EXPECT_THAT(pass.Explanations()[0],
              HasSubstr("left alone: NEURON_COLLECTIVE_MATMUL_NXD is not 1"));
}

TEST(TokenReplacerTest, EnvironmentAndFlagCombinations) {
  struct Row {
    const char* env;
    std::optional<bool> flag;
    bool replaced;
  };
  const Row rows[] = {
      {nullptr, std::nullopt, false}, {"1", std::nullopt, true}, {"0", std::nullopt, false},
      {"true", std::nullopt, false},  {" 1 ", std::nullopt, true}, {"1", false, false},
      {nullptr, true, true},          {"0", true, true},
  };
  for (const Row& row : rows) {
    NxdEnv env;
    if (row.env != nullptr) setenv(kCollectiveMatmulNxdEnv, row.env, 1);
    TokenModule m;
    PassOptions options;
    options.collective_matmul_nxd = row.flag;
    NeuronLoopedEinsumTokenReplacer pass(options);
    ASSERT_EQ(*pass.Run(m.module.get()), row.replaced)
        << "env=" << (row.env ? row.env : "unset") << " flag=" << (row.flag ? *row.flag : -1);
    EXPECT_EQ(pass.nxd(), row.replaced);
  }
}

TEST(TokenReplacerTest, ReroutesToOperandOneWithoutAddingAnything) {
  NxdEnv env;
  setenv(kCollectiveMatmulNxdEnv, "1", 1);
  TokenModule m;
  const int64_t before = m.InstructionCount();
  const int64_t ids_before = m.module->NextUniqueId();
  NeuronLoopedEinsumTokenReplacer pass{PassOptions{}};
  ASSERT_TRUE(*pass.Run(m.module.get()));
  EXPECT_EQ(m.root->operand(1), m.tok);  // the existing parameter
  EXPECT_EQ(m.InstructionCount(), before - 1);  // only the gte went; the gather still feeds data
  EXPECT_EQ(m.module->NextUniqueId(), ids_before + 1);  // no instruction was added
  EXPECT_TRUE(VerifyHloModule(*m.module).ok()) << VerifyHloModule(*m.module);
  EXPECT_THAT(pass.Explanations()[0], HasSubstr("replaced by the all-gather's operand 1 %tok"));
  EXPECT_EQ(pass.ReportDetails()["replaced"], 1);
  // Idempotent.
  EXPECT_FALSE(*pass.Run(m.module.get()));
}

// Without record_details (hilo-opt without --report or --explain) the same
// rerouting and summary, and no candidate list, gate on or off.
TEST(TokenReplacerTest, WithoutDetailsTheSameChangeAndNoCandidates) {
  for (bool nxd : {false, true}) {
    NxdEnv env;
    TokenModule m;
    PassOptions options;
    options.collective_matmul_nxd = nxd;
    options.record_details = false;
    NeuronLoopedEinsumTokenReplacer pass(options);
    ASSERT_EQ(*pass.Run(m.module.get()), nxd);
    EXPECT_EQ(m.root->operand(1), nxd ? m.tok : m.token);
    EXPECT_EQ(pass.ChangeSummary(),
              nxd ? "rerouted 1 all-gather token use to the all-gather's token operand" : "");
    EXPECT_TRUE(pass.candidates().empty());
    EXPECT_TRUE(pass.Explanations().empty());
  }
}

TEST(TokenReplacerTest, LeavesAloneWhatItCanNotOrMustNotReplace) {
  NxdEnv env;
  setenv(kCollectiveMatmulNxdEnv, "1", 1);
  {  // operand 1 of a different shape than the gte: XLA would abort; we explain
    TokenModule m(Shape::MakeScalar(PrimitiveType::F32));
    NeuronLoopedEinsumTokenReplacer pass{PassOptions{}};
    ASSERT_FALSE(*pass.Run(m.module.get()));
    EXPECT_THAT(pass.candidates()[0].reason, HasSubstr("is f32[], not the gte's bf16[]"));
  }
  {  // an all-gather with one operand has no operand 1
    auto module = std::make_unique<HloModule>("m");
    HloComputation* comp = module->AddComputation(std::make_unique<HloComputation>("main"), true);
    HloInstruction* s = comp->AddInstruction(HloInstruction::CreateParameter(0, BF16({}), "s"));
    HloInstruction* ag = comp->AddInstruction(HloInstruction::Create(
        HloOpcode::kAllGather, Shape::MakeTuple({BF16({})}), {s}, "ag"));
    ag->set_dimensions({0});
    HloInstruction* gte = comp->AddInstruction(HloInstruction::CreateGetTupleElement(BF16({}), ag, 0));
    comp->set_root_instruction(gte);
    NeuronLoopedEinsumTokenReplacer pass{PassOptions{}};
    ASSERT_FALSE(*pass.Run(module.get()));
    EXPECT_THAT(pass.candidates()[0].reason, HasSubstr("has 1 operand(s)"));
    EXPECT_EQ(comp->root_instruction(), gte);
  }
  {  // not rank 0, or not of an all-gather: not candidates at all
    TokenModule m;
    HloInstruction* t = m.comp->AddInstruction(HloInstruction::Create(
        HloOpcode::kTuple, Shape::MakeTuple({BF16({})}), {m.tok}));
    HloInstruction* g = m.comp->AddInstruction(HloInstruction::CreateGetTupleElement(BF16({}), t, 0));
    m.comp->set_root_instruction(m.comp->AddInstruction(HloInstruction::Create(
        HloOpcode::kTuple, Shape::MakeTuple({BF16({16, 8}), BF16({}), BF16({})}),
        {m.data, m.token, g})));
    NeuronLoopedEinsumTokenReplacer pass{PassOptions{}};
    ASSERT_TRUE(*pass.Run(m.module.get()));
    ASSERT_EQ(pass.candidates().size(), 1u);  // only the token gte of the all-gather
    EXPECT_EQ(pass.candidates()[0].gte, m.token->name());
    EXPECT_EQ(m.data->parent(), m.comp);  // the rank-2 data gte is untouched
  }
}

// The seed tests only rank 0: a rank-0 element at index 0 is rerouted to
// operand 1 too (the original's behaviour, kept).
TEST(TokenReplacerTest, AnyRankZeroElementIsReroutedToOperandOne) {
  NxdEnv env;
  setenv(kCollectiveMatmulNxdEnv, "1", 1);
  auto module = std::make_unique<HloModule>("m");
  HloComputation* comp = module->AddComputation(std::make_unique<HloComputation>("main"), true);
  HloInstruction* a = comp->AddInstruction(HloInstruction::CreateParameter(0, BF16({}), "a"));
  HloInstruction* b = comp->AddInstruction(HloInstruction::CreateParameter(1, BF16({}), "b"));
  HloInstruction* ag = comp->AddInstruction(HloInstruction::Create(
      HloOpcode::kAllGather, Shape::MakeTuple({BF16({}), BF16({})}), {a, b}, "ag"));
  ag->set_dimensions({0});
  HloInstruction* g0 = comp->AddInstruction(HloInstruction::CreateGetTupleElement(BF16({}), ag, 0));
  comp->set_root_instruction(g0);
  NeuronLoopedEinsumTokenReplacer pass{PassOptions{}};
  ASSERT_TRUE(*pass.Run(module.get()));
  EXPECT_EQ(comp->root_instruction(), b);
}

}  // namespace
}  // namespace hilo

// Unit tests of neuron_looped_einsum_replacer (#63), its matchers and
// analysis (src/hilo/analysis/looped_einsum_*), and the
// neuron-collective-pipeline. Modules are built with the IR API so each
// test controls exactly the graph shape it is about.
#include "hilo/passes/neuron_looped_einsum_replacer.h"

#include <cstdlib>
#include <iterator>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "hilo/analysis/hlo_verifier.h"
#include "hilo/analysis/looped_einsum_analysis.h"
#include "hilo/analysis/looped_einsum_matchers.h"
#include "hilo/ir/hlo_computation.h"
#include "hilo/ir/hlo_instruction.h"
#include "hilo/ir/hlo_module.h"
#include "hilo/ir/instruction_arena.h"
#include "hilo/pass/hlo_pass_pipeline.h"
#include "hilo/pass/pass_registry.h"
#include "hilo/passes/collective_stream_id_checker.h"
#include "hilo/passes/neuron_collective_pipeline.h"
#include "hilo/passes/neuron_looped_einsum_token_replacer.h"
#include "hilo/passes/register_passes.h"
#include "hilo/text/parser.h"
#include "hilo/text/printer.h"

namespace hilo {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

Shape BF16(std::vector<int64_t> dims) { return Shape::MakeArray(PrimitiveType::BF16, std::move(dims)); }
Shape F32(std::vector<int64_t> dims) { return Shape::MakeArray(PrimitiveType::F32, std::move(dims)); }

ReplicaGroups Groups(std::vector<std::vector<int64_t>> groups) {
  return ReplicaGroups::Explicit(std::move(groups));
}

// Saves the three environment variables, clears them for the test and
// restores them afterwards.
class EnvSandbox {
 public:
  EnvSandbox() {
    for (const char* name : kNames) {
      const char* v = std::getenv(name);
      saved_.emplace_back(name, v == nullptr ? std::nullopt : std::optional<std::string>(v));
      unsetenv(name);
    }
  }
  ~EnvSandbox() {
    for (const auto& [name, value] : saved_) {
      if (value.has_value()) {
        setenv(name, value->c_str(), 1);
      } else {
        unsetenv(name);
      }
    }
  }
  static void Set(const char* name, const char* value) { setenv(name, value, 1); }

 private:
  static constexpr const char* kNames[] = {kCollectiveMatmulNxdEnv, kCollectivePermuteAggressiveEnv,
                                           kSbToSbThresholdEnv};
  std::vector<std::pair<const char*, std::optional<std::string>>> saved_;
};

// A module with one entry computation (or a named one), built by hand.
struct Builder {
  std::unique_ptr<HloModule> module = std::make_unique<HloModule>("m");
  HloComputation* comp = nullptr;

  Builder() {
    module->set_replica_count(4);
    comp = module->AddComputation(std::make_unique<HloComputation>("main"), /*is_entry=*/true);
  }
  HloInstruction* Add(std::unique_ptr<HloInstruction> inst) {
    return comp->AddInstruction(std::move(inst));
  }
  HloInstruction* Param(int64_t n, Shape shape, std::string name) {
    return Add(HloInstruction::CreateParameter(n, std::move(shape), std::move(name)));
  }
  HloInstruction* Op(HloOpcode op, Shape shape, std::vector<HloInstruction*> operands,
                     std::string name = "") {
    return Add(HloInstruction::Create(op, std::move(shape), operands, std::move(name)));
  }
  HloInstruction* AllGather(std::vector<HloInstruction*> operands, Shape shape, int64_t dim,
                            std::optional<ReplicaGroups> groups = Groups({{0, 1, 2, 3}}),
                            std::string name = "ag") {
    HloInstruction* ag = Op(HloOpcode::kAllGather, std::move(shape), operands, std::move(name));
    ag->set_dimensions({dim});
    ag->set_replica_groups(std::move(groups));
    return ag;
  }
  HloInstruction* Reshape(HloInstruction* operand, Shape shape) {
    return Add(HloInstruction::CreateReshape(std::move(shape), operand));
  }
  HloInstruction* Gte(HloInstruction* operand, int64_t index) {
    return Add(HloInstruction::CreateGetTupleElement(operand->shape().tuple_shapes(index), operand,
                                                     index));
  }
  HloInstruction* Dot(HloInstruction* lhs, HloInstruction* rhs, Shape shape, int64_t lhs_c,
                      int64_t rhs_c, std::string name = "dot") {
    HloInstruction* dot = Op(HloOpcode::kDot, std::move(shape), {lhs, rhs}, std::move(name));
    dot->mutable_dot_dimension_numbers()->lhs_contracting_dimensions = {lhs_c};
    dot->mutable_dot_dimension_numbers()->rhs_contracting_dimensions = {rhs_c};
    return dot;
  }
  void Root(HloInstruction* inst) { comp->set_root_instruction(inst); }

  int64_t Count(HloOpcode op) const {
    int64_t n = 0;
    for (const HloComputation* c : module->computations()) {
      for (const HloInstruction* i : c->instructions()) n += i->opcode() == op ? 1 : 0;
    }
    return n;
  }
};

// The exact LHS case: W bf16[4,8,16] gathered on its rows by a contiguous
// group of 4, dot([16,8,16] . [16,32]) contracting the weight's last dim.
struct LhsCase {
  Builder b;
  HloInstruction* w;
  HloInstruction* act;
  HloInstruction* ag;
  HloInstruction* dot;
  explicit LhsCase(std::optional<ReplicaGroups> groups = Groups({{0, 1, 2, 3}})) {
    w = b.Param(0, BF16({4, 8, 16}), "w");
    act = b.Param(1, BF16({16, 32}), "x");
    ag = b.AllGather({w}, BF16({16, 8, 16}), 0, std::move(groups));
    dot = b.Dot(ag, act, BF16({16, 8, 32}), 2, 0);
    b.Root(dot);
  }
};

absl::StatusOr<bool> RunReplacer(HloModule* module, const PassOptions& options = {},
                                 NeuronLoopedEinsumReplacer* pass_out = nullptr) {
  NeuronLoopedEinsumReplacer local(options);
  NeuronLoopedEinsumReplacer& pass = pass_out != nullptr ? *pass_out : local;
  return pass.Run(module);
}

class ReplacerTest : public ::testing::Test {
 protected:
  EnvSandbox env_;
};

// --- Matchers ---------------------------------------------------------------

TEST_F(ReplacerTest, MatchersRecognizeEachShapeAndNothingElse) {
  Builder b;
  HloInstruction* w = b.Param(0, BF16({4, 8, 16}), "w");
  HloInstruction* tok = b.Param(1, BF16({}), "tok");
  HloInstruction* x = b.Param(2, BF16({128, 16}), "x");
  HloInstruction* ag = b.AllGather({w}, BF16({16, 8, 16}), 0);
  HloInstruction* rs = b.Reshape(ag, BF16({128, 16}));
  HloInstruction* ag_tok = b.AllGather({w, tok}, Shape::MakeTuple({BF16({16, 8, 16}), BF16({})}), 0,
                                       Groups({{0, 1, 2, 3}}), "ag_tok");
  HloInstruction* data = b.Gte(ag_tok, 0);
  HloInstruction* token = b.Gte(ag_tok, 1);
  HloInstruction* nxd = b.Reshape(data, BF16({128, 16}));
  HloInstruction* tok_rs = b.Reshape(token, BF16({1, 1}));
  HloInstruction* cvt = b.Op(HloOpcode::kConvert, F32({16, 8, 16}), {ag});

  HloInstruction* lhs = b.Dot(ag, x, BF16({16, 8, 128}), 2, 1, "lhs");
  HloInstruction* lhs_rs = b.Dot(rs, x, BF16({128, 128}), 1, 1, "lhs_rs");
  HloInstruction* rhs = b.Dot(x, ag, BF16({128, 16, 8}), 1, 2, "rhs");
  HloInstruction* rhs_rs = b.Dot(x, rs, BF16({128, 128}), 1, 1, "rhs_rs");
  HloInstruction* lhs_nxd = b.Dot(nxd, x, BF16({128, 128}), 1, 1, "lhs_nxd");
  HloInstruction* token_nxd = b.Dot(tok_rs, tok_rs, BF16({1, 1}), 1, 0, "token_nxd");
  HloInstruction* via_convert = b.Dot(cvt, x, F32({16, 8, 128}), 2, 1, "via_convert");
  HloInstruction* plain = b.Dot(x, x, BF16({128, 128}), 1, 1, "plain");

  EXPECT_TRUE(MatchAllGatherInDotLhs(lhs));
  EXPECT_FALSE(MatchAllGatherInDotLhs(lhs_rs));
  EXPECT_FALSE(MatchAllGatherInDotLhs(rhs));
  EXPECT_TRUE(MatchAllGatherInDotLhsRS(lhs_rs));
  EXPECT_FALSE(MatchAllGatherInDotLhsRS(lhs));
  EXPECT_FALSE(MatchAllGatherInDotLhsRS(lhs_nxd));  // reshape of a gte, not of the all-gather
  EXPECT_TRUE(MatchAllGatherInDotRhs(rhs));
  EXPECT_FALSE(MatchAllGatherInDotRhs(lhs));
  EXPECT_FALSE(MatchAllGatherInDotRhs(rhs_rs));
  EXPECT_TRUE(MatchAllGatherInDotRhsRS(rhs_rs));
  EXPECT_FALSE(MatchAllGatherInDotRhsRS(rhs));
  EXPECT_TRUE(MatchAllGatherInDotLhsNxD(lhs_nxd));
  EXPECT_FALSE(MatchAllGatherInDotLhsNxD(lhs_rs));
  EXPECT_FALSE(MatchAllGatherInDotLhsNxD(token_nxd));  // gte of the rank-0 token
  for (HloInstruction* d : {via_convert, plain}) {
    EXPECT_FALSE(MatchAllGatherInDotLhs(d) || MatchAllGatherInDotLhsRS(d) ||
                 MatchAllGatherInDotRhs(d) || MatchAllGatherInDotRhsRS(d) ||
                 MatchAllGatherInDotLhsNxD(d))
        << d->name();
  }
  // Not a dot at all.
  EXPECT_FALSE(MatchAllGatherInDotLhs(rs));
  EXPECT_FALSE(MatchAllGatherInDotLhsNxD(nullptr));
}

TEST_F(ReplacerTest, GetRootAllGatherLooksAtMostFourHopsAndNeverCrashes) {
  Builder b;
  HloInstruction* w = b.Param(0, BF16({4, 8, 16}), "w");
  HloInstruction* ag = b.AllGather({w}, BF16({16, 8, 16}), 0);
  HloInstruction* cur = ag;
  std::vector<HloInstruction*> chain;
  for (int i = 0; i < 5; ++i) {
    cur = b.Op(HloOpcode::kCopy, BF16({16, 8, 16}), {cur});
    chain.push_back(cur);
  }
  EXPECT_EQ(GetRootAllGather(ag, kRootAllGatherDepth), ag);
  EXPECT_EQ(GetRootAllGather(chain[3], kRootAllGatherDepth), ag);  // 4 hops
  EXPECT_EQ(GetRootAllGather(chain[4], kRootAllGatherDepth), nullptr);  // 5 hops
  EXPECT_EQ(GetRootAllGather(w, kRootAllGatherDepth), nullptr);  // a parameter has no operand
  EXPECT_EQ(GetRootAllGather(static_cast<HloInstruction*>(nullptr), 4), nullptr);
}

TEST_F(ReplacerTest, WeightWalkFollowsPlumbingAndTheLoopCarriedSignature) {
  Builder b;
  HloInstruction* q = b.Param(0, F32({4, 8, 16}), "q");
  // convert(get-tuple-element(tuple(q))): a tuple is not plumbing, but the
  // seed's loop-carried signature (x's operand 0 a parameter) holds.
  HloInstruction* t = b.Op(HloOpcode::kTuple, Shape::MakeTuple({F32({4, 8, 16})}), {q});
  HloInstruction* g = b.Add(HloInstruction::CreateGetTupleElement(F32({4, 8, 16}), t, 0));
  HloInstruction* sig = b.Op(HloOpcode::kConvert, BF16({4, 8, 16}), {g});
  EXPECT_TRUE(IsConvertGetTupleElementParameter(sig));
  EXPECT_FALSE(IsConvertGetTupleElementParameter(g));
  EXPECT_EQ(FindWeightParameter(sig), q);
  EXPECT_EQ(FindWeightParameter(g), nullptr);  // without the convert, the tuple stops the walk
  // The seed's set: reshape(convert(q)).
  HloInstruction* c1 = b.Op(HloOpcode::kConvert, BF16({4, 8, 16}), {q});
  HloInstruction* c2 = b.Reshape(c1, BF16({32, 16}));
  EXPECT_EQ(FindWeightParameter(c2), q);
  // bitcast and copy are not in the seed's set {parameter, gte, convert,
  // reshape}: only the opt-in wider chain walks them.
  HloInstruction* c3 = b.Op(HloOpcode::kCopy, BF16({32, 16}), {c2});
  HloInstruction* c4 = b.Op(HloOpcode::kBitcast, BF16({32, 16}), {c3});
  EXPECT_EQ(FindWeightParameter(c3), nullptr);
  EXPECT_EQ(FindWeightParameter(c4), nullptr);
  EXPECT_EQ(FindWeightParameter(c4, /*copy_bitcast=*/true), q);
  // A computation in between stops the walk.
  HloInstruction* neg = b.Op(HloOpcode::kNegate, BF16({32, 16}), {c4});
  EXPECT_EQ(FindWeightParameter(neg, true), nullptr);
  EXPECT_EQ(FindWeightParameter(nullptr), nullptr);
  // Bounded: 9 reshapes are more hops than kWeightSearchHops.
  HloInstruction* cur = q;
  for (int i = 0; i < kWeightSearchHops; ++i) cur = b.Reshape(cur, F32({4, 8, 16}));
  EXPECT_EQ(FindWeightParameter(cur), q);
  cur = b.Reshape(cur, F32({4, 8, 16}));
  EXPECT_EQ(FindWeightParameter(cur), nullptr);
}

// Issue 16 (1): the seed's WeightInLHS is an AnyOfPattern over {parameter,
// gte, convert, reshape}: all-gather(copy(parameter)) is refused by default,
// folded only with the opt-in --weight-chain-copy-bitcast.
TEST_F(ReplacerTest, CopyOrBitcastInTheWeightChainIsRefusedByDefault) {
  for (HloOpcode layout_op : {HloOpcode::kCopy, HloOpcode::kBitcast}) {
    for (bool wide : {false, true}) {
      Builder b;
      HloInstruction* w = b.Param(0, BF16({4, 8, 16}), "w");
      HloInstruction* c = b.Op(layout_op, BF16({4, 8, 16}), {w});
      HloInstruction* ag = b.AllGather({c}, BF16({16, 8, 16}), 0);
      HloInstruction* x = b.Param(1, BF16({16, 32}), "x");
      b.Root(b.Dot(ag, x, BF16({16, 8, 32}), 2, 0));
      PassOptions options;
      options.weight_chain_copy_bitcast = wide;
      NeuronLoopedEinsumReplacer pass(options);
      ASSERT_EQ(*pass.Run(b.module.get()), wide) << HloOpcodeString(layout_op);
      if (wide) {
        EXPECT_THAT(pass.candidates()[0].explanation, HasSubstr("from parameter %w"));
        EXPECT_TRUE(VerifyHloModule(*b.module).ok()) << VerifyHloModule(*b.module);
      } else {
        EXPECT_THAT(pass.candidates()[0].reason,
                    HasSubstr("LHS matched, but operand 0 does not reach a parameter through "
                              "reshape/convert/get-tuple-element/all-gather within 8 hops "
                              "(WeightInLHS)"));
      }
    }
  }
}

// Issue 16 (3): the seed's RHS/NxD branch is `if rhs: ok = WeightInRHS; else
// if rhsRS || lhsNxD: ok = true; ...`: an LHS-NxD dot whose gathered operand
// is no parameter (an activation) folds without the aggressive gate, is
// still classified, refused under --collective-matmul-strict when inexact,
// and --explain says why it folded.
TEST_F(ReplacerTest, LhsNxdFoldsWithoutAWeightCheck) {
  for (bool transposed : {false, true}) {
    for (bool strict : {false, true}) {
      Builder b;
      HloInstruction* a = b.Param(0, BF16({4, 8, 16}), "a");
      HloInstruction* act = b.Op(HloOpcode::kNegate, BF16({4, 8, 16}), {a}, "act");
      HloInstruction* tok = b.Param(1, BF16({}), "tok");
      HloInstruction* ag =
          b.AllGather({act, tok}, Shape::MakeTuple({BF16({16, 8, 16}), BF16({})}), 0);
      HloInstruction* data = b.Gte(ag, 0);
      HloInstruction* rs = b.Reshape(data, BF16({128, 16}));
      HloInstruction* x = b.Param(2, BF16({16, 32}), "x");
      // Contracting dimension 1 (the last) is exact; 0 is not.
      HloInstruction* dot = transposed ? b.Dot(rs, b.Param(3, BF16({128, 32}), "y"),
                                               BF16({16, 32}), 0, 0)
                                       : b.Dot(rs, x, BF16({128, 32}), 1, 0);
      b.Root(b.Op(HloOpcode::kTuple, Shape::MakeTuple({dot->shape(), BF16({})}),
                  {dot, b.Gte(ag, 1)}));
      ASSERT_TRUE(VerifyHloModule(*b.module).ok()) << VerifyHloModule(*b.module);
      PassOptions options;
      options.collective_matmul_strict = strict;
      NeuronLoopedEinsumReplacer pass(options);
      const bool folds = !(strict && transposed);
      ASSERT_EQ(*pass.Run(b.module.get()), folds) << transposed << strict;
      const auto& c = pass.candidates()[0];
      EXPECT_EQ(c.matcher, "LHS-NxD");
      if (folds) {
        EXPECT_EQ(c.exact, !transposed);
        EXPECT_THAT(c.explanation,
                    HasSubstr("fused as LHS-NxD (weight = operand 0, accepted without a weight "
                              "check: the seed's RHS/NxD branch sets ok = true for LHS-NxD"));
        EXPECT_THAT(c.explanation, Not(HasSubstr("AGGRESSIVE")));
        EXPECT_TRUE(VerifyHloModule(*b.module).ok()) << VerifyHloModule(*b.module);
      } else {
        EXPECT_THAT(c.reason, HasSubstr("--collective-matmul-strict refuses"));
        EXPECT_THAT(c.reason, HasSubstr("contracting dimension 0 is not its last"));
      }
    }
  }
}

// --- The rewrite --------------------------------------------------------------

TEST_F(ReplacerTest, LhsFoldsIntoOneCustomCallWithTheExactBackendConfig) {
  LhsCase t;
  t.dot->set_metadata("op_name=\"einsum\"");
  t.dot->mutable_frontend_attributes()->Set("k", "v");
  NeuronLoopedEinsumReplacer pass{PassOptions{}};
  absl::StatusOr<bool> changed = pass.Run(t.b.module.get());
  ASSERT_TRUE(changed.ok()) << changed.status();
  EXPECT_TRUE(*changed);

  HloInstruction* cc = t.b.comp->root_instruction();
  ASSERT_EQ(cc->opcode(), HloOpcode::kCustomCall);
  EXPECT_EQ(cc->custom_call_target(), "AwsNeuronCollectiveMatmul");
  ASSERT_TRUE(cc->backend_config().has_value());
  EXPECT_EQ(*cc->backend_config(), "rhs_contracting_dim=0,tp_degree=4,num_groups=1,use_sb_to_sb=1");
  EXPECT_EQ(cc->api_version(), 1);
  EXPECT_EQ(cc->shape(), BF16({16, 8, 32}));
  ASSERT_EQ(cc->operand_count(), 2);
  const HloInstruction* w2 = cc->operand(0);
  EXPECT_EQ(w2->opcode(), HloOpcode::kReshape);
  EXPECT_EQ(w2->shape(), BF16({32, 16}));  // [elements(W)/k, k]
  EXPECT_EQ(w2->operand(0), t.w);
  EXPECT_EQ(cc->operand(1), t.act);
  EXPECT_EQ(cc->metadata(), "op_name=\"einsum\"");
  ASSERT_NE(cc->frontend_attributes().Find("k"), nullptr);
  EXPECT_EQ(t.b.Count(HloOpcode::kAllGather), 0);
  EXPECT_EQ(t.b.Count(HloOpcode::kDot), 0);
  EXPECT_TRUE(VerifyHloModule(*t.b.module).ok()) << VerifyHloModule(*t.b.module);

  ASSERT_EQ(pass.candidates().size(), 1u);
  EXPECT_TRUE(pass.candidates()[0].fused);
  EXPECT_TRUE(pass.candidates()[0].exact);
  EXPECT_EQ(pass.candidates()[0].matcher, "LHS");
  std::vector<std::string> lines = pass.Explanations();
  ASSERT_EQ(lines.size(), 1u);  // one line per candidate dot
  EXPECT_THAT(pass.Summary(), HasSubstr("1 candidate dot(s), 1 fused (1 exact"));
  EXPECT_THAT(lines[0], HasSubstr("%dot in main: fused as LHS (weight = operand 0 from parameter %w"));
  EXPECT_THAT(lines[0], HasSubstr("backend_config=\"rhs_contracting_dim=0,tp_degree=4,num_groups=1,use_sb_to_sb=1\""));
  EXPECT_THAT(lines[0], HasSubstr("; exact under the kernel contract"));
  nlohmann::json report = pass.ReportDetails();
  EXPECT_EQ(report["fused"], 1);
  EXPECT_EQ(report["dots"][0]["backend_config"],
            "rhs_contracting_dim=0,tp_degree=4,num_groups=1,use_sb_to_sb=1");
  EXPECT_EQ(report["dots"][0]["custom_call"], std::string(cc->name()));

  // Running again changes nothing: the custom-call is not a dot.
  absl::StatusOr<bool> again = pass.Run(t.b.module.get());
  ASSERT_TRUE(again.ok());
  EXPECT_FALSE(*again);
  EXPECT_TRUE(pass.candidates().empty());
}

TEST_F(ReplacerTest, LhsRsFoldsAndUsesTheContractingExtentAfterTheReshape) {
  Builder b;
  HloInstruction* w = b.Param(0, BF16({4, 8, 16}), "w");
  HloInstruction* x = b.Param(1, BF16({16, 32}), "x");
  HloInstruction* ag = b.AllGather({w}, BF16({16, 8, 16}), 0);
  HloInstruction* rs = b.Reshape(ag, BF16({128, 16}));
  b.Root(b.Dot(rs, x, BF16({128, 32}), 1, 0));
  NeuronLoopedEinsumReplacer pass{PassOptions{}};
  ASSERT_TRUE(*pass.Run(b.module.get()));
  HloInstruction* cc = b.comp->root_instruction();
  ASSERT_EQ(cc->opcode(), HloOpcode::kCustomCall);
  EXPECT_EQ(cc->operand(0)->shape(), BF16({32, 16}));
  EXPECT_EQ(pass.candidates()[0].matcher, "LHS-RS");
  EXPECT_TRUE(pass.candidates()[0].exact);
  EXPECT_EQ(b.Count(HloOpcode::kAllGather), 0);
  EXPECT_EQ(b.Count(HloOpcode::kReshape), 1);  // only W'
  EXPECT_TRUE(VerifyHloModule(*b.module).ok());
}

TEST_F(ReplacerTest, LhsWithoutAParameterIsRefusedEvenWhenAggressive) {
  for (bool aggressive : {false, true}) {
    Builder b;
    HloInstruction* w = b.Param(0, BF16({4, 8, 16}), "w");
    HloInstruction* neg = b.Op(HloOpcode::kNegate, BF16({4, 8, 16}), {w});
    HloInstruction* x = b.Param(1, BF16({16, 32}), "x");
    HloInstruction* ag = b.AllGather({neg}, BF16({16, 8, 16}), 0);
    b.Root(b.Dot(ag, x, BF16({16, 8, 32}), 2, 0));
    PassOptions options;
    options.collective_permute_aggressive = aggressive;
    NeuronLoopedEinsumReplacer pass(options);
    ASSERT_FALSE(*pass.Run(b.module.get()));
    ASSERT_EQ(pass.candidates().size(), 1u);
    EXPECT_FALSE(pass.candidates()[0].fused);
    EXPECT_THAT(pass.candidates()[0].reason, HasSubstr("WeightInLHS"));
    EXPECT_EQ(b.Count(HloOpcode::kDot), 1);
  }
}

// Both operands gathered: the LHS branch is decided first and does not fall
// through to the RHS when WeightInLHS fails (the seed's control flow).
TEST_F(ReplacerTest, LhsBranchWinsOverRhsEvenWhenItFails) {
  Builder b;
  HloInstruction* w1 = b.Param(0, BF16({4, 8, 16}), "w1");
  HloInstruction* neg = b.Op(HloOpcode::kNegate, BF16({4, 8, 16}), {w1});
  HloInstruction* ag1 = b.AllGather({neg}, BF16({16, 8, 16}), 0, Groups({{0, 1, 2, 3}}), "ag1");
  HloInstruction* w2 = b.Param(1, BF16({4, 8, 16}), "w2");
  HloInstruction* ag2 = b.AllGather({w2}, BF16({16, 8, 16}), 0, Groups({{0, 1, 2, 3}}), "ag2");
  b.Root(b.Dot(ag1, ag2, BF16({16, 8, 8, 16}), 2, 0));
  NeuronLoopedEinsumReplacer pass{PassOptions{}};
  ASSERT_FALSE(*pass.Run(b.module.get()));
  EXPECT_EQ(pass.candidates()[0].matcher, "LHS");
  EXPECT_THAT(pass.candidates()[0].reason, HasSubstr("the LHS branch is decided first"));
  // With a provable LHS weight the LHS side is the one folded.
  Builder c;
  HloInstruction* v1 = c.Param(0, BF16({4, 8, 16}), "w1");
  HloInstruction* a1 = c.AllGather({v1}, BF16({16, 8, 16}), 0, Groups({{0, 1, 2, 3}}), "ag1");
  HloInstruction* v2 = c.Param(1, BF16({4, 8, 16}), "w2");
  HloInstruction* a2 = c.AllGather({v2}, BF16({16, 8, 16}), 0, Groups({{0, 1, 2, 3}}), "ag2");
  HloInstruction* root = c.Op(HloOpcode::kTuple, Shape::MakeTuple({BF16({16, 8, 8, 16})}),
                              {c.Dot(a1, a2, BF16({16, 8, 8, 16}), 2, 0)});
  c.Root(root);
  NeuronLoopedEinsumReplacer pass2{PassOptions{}};
  ASSERT_TRUE(*pass2.Run(c.module.get()));
  const HloInstruction* cc = root->operand(0);
  EXPECT_EQ(cc->operand(0)->operand(0), v1);
  EXPECT_EQ(cc->operand(1), a2);  // the RHS all-gather stays: it is the activation
  EXPECT_EQ(c.Count(HloOpcode::kAllGather), 1);
}

// RHS with the weight not provably a parameter: the aggressive gate, from
// the environment or the flag, with the flag winning.
TEST_F(ReplacerTest, RhsNeedsWeightInRhsOrAggressive) {
  struct Row {
    const char* env;                 // NEURON_COLLECTIVE_PERMUTE_AGGRESSIVE, or null
    std::optional<bool> flag;        // --collective-permute-aggressive
    bool fused;
  };
  const Row rows[] = {
      {nullptr, std::nullopt, false}, {"1", std::nullopt, true},  {"0", std::nullopt, false},
      {"01", std::nullopt, true},     {"2", std::nullopt, false}, {"yes", std::nullopt, false},
      {"1", false, false},            {nullptr, true, true},      {"0", true, true},
  };
  for (const Row& row : rows) {
    unsetenv(kCollectivePermuteAggressiveEnv);
    if (row.env != nullptr) EnvSandbox::Set(kCollectivePermuteAggressiveEnv, row.env);
    Builder b;
    HloInstruction* x = b.Param(0, BF16({32, 16}), "x");
    HloInstruction* w = b.Param(1, BF16({4, 8, 16}), "w");
    HloInstruction* neg = b.Op(HloOpcode::kNegate, BF16({4, 8, 16}), {w});
    HloInstruction* ag = b.AllGather({neg}, BF16({16, 8, 16}), 0);
    b.Root(b.Dot(x, ag, BF16({32, 8, 16}), 1, 0));
    PassOptions options;
    options.collective_permute_aggressive = row.flag;
    NeuronLoopedEinsumReplacer pass(options);
    absl::StatusOr<bool> changed = pass.Run(b.module.get());
    ASSERT_TRUE(changed.ok());
    EXPECT_EQ(*changed, row.fused) << "env=" << (row.env ? row.env : "unset")
                                   << " flag=" << (row.flag ? (*row.flag ? "1" : "0") : "unset");
    if (!row.fused) {
      EXPECT_THAT(pass.candidates()[0].reason,
                  HasSubstr("WeightInRHS) and NEURON_COLLECTIVE_PERMUTE_AGGRESSIVE is not 1"));
    } else {
      EXPECT_THAT(pass.candidates()[0].explanation,
                  HasSubstr("not proven a parameter; NEURON_COLLECTIVE_PERMUTE_AGGRESSIVE is 1"));
    }
    if (row.env != nullptr && std::string(row.env) == "yes") {
      ASSERT_EQ(pass.Warnings().size(), 1u);
      EXPECT_THAT(pass.Warnings()[0], HasSubstr("'yes' is not an integer"));
    }
  }
}

TEST_F(ReplacerTest, RhsWithAParameterFoldsButIsNotExact) {
  Builder b;
  HloInstruction* x = b.Param(0, BF16({32, 16}), "x");
  HloInstruction* w = b.Param(1, BF16({4, 8, 16}), "w");
  HloInstruction* ag = b.AllGather({w}, BF16({16, 8, 16}), 0);
  b.Root(b.Dot(x, ag, BF16({32, 8, 16}), 1, 0));
  NeuronLoopedEinsumReplacer pass{PassOptions{}};
  ASSERT_TRUE(*pass.Run(b.module.get()));
  HloInstruction* cc = b.comp->root_instruction();
  EXPECT_EQ(*cc->backend_config(), "rhs_contracting_dim=0,tp_degree=4,num_groups=1,use_sb_to_sb=1");
  EXPECT_EQ(cc->operand(0)->operand(0), w);  // {W', activation}
  EXPECT_EQ(cc->operand(1), x);
  const auto& c = pass.candidates()[0];
  EXPECT_EQ(c.matcher, "RHS");
  EXPECT_FALSE(c.exact);
  EXPECT_THAT(c.inexact_reasons, testing::Contains(HasSubstr("the weight is dot operand 1")));
  EXPECT_THAT(c.inexact_reasons,
              testing::Contains(HasSubstr("contracting dimension 0 is not its last")));
  EXPECT_TRUE(VerifyHloModule(*b.module).ok());

  // Strict refuses it and says why.
  Builder b2;
  HloInstruction* x2 = b2.Param(0, BF16({32, 16}), "x");
  HloInstruction* w2 = b2.Param(1, BF16({4, 8, 16}), "w");
  HloInstruction* ag2 = b2.AllGather({w2}, BF16({16, 8, 16}), 0);
  b2.Root(b2.Dot(x2, ag2, BF16({32, 8, 16}), 1, 0));
  PassOptions strict;
  strict.collective_matmul_strict = true;
  NeuronLoopedEinsumReplacer strict_pass(strict);
  ASSERT_FALSE(*strict_pass.Run(b2.module.get()));
  EXPECT_THAT(strict_pass.candidates()[0].reason, HasSubstr("--collective-matmul-strict refuses"));
  EXPECT_THAT(strict_pass.candidates()[0].reason, HasSubstr("the weight is dot operand 1"));
}

// Without record_details (hilo-opt without --report or --explain) the pass
// does the same to the module, with the same summary and warnings (the
// inexact fold's warning names the dot and the custom-call), and keeps no
// per-candidate details.
TEST_F(ReplacerTest, WithoutDetailsTheModuleSummaryAndWarningsAreTheSame) {
  // One inexact fold (RHS), one exact fold (LHS), one candidate refused.
  auto build = [](Builder& b) {
    HloInstruction* x = b.Param(0, BF16({32, 16}), "x");
    HloInstruction* w = b.Param(1, BF16({4, 8, 16}), "w");
    HloInstruction* rhs = b.Dot(x, b.AllGather({w}, BF16({16, 8, 16}), 0, Groups({{0, 1, 2, 3}}), "ag0"),
                                BF16({32, 8, 16}), 1, 0, "rhs_dot");
    HloInstruction* w2 = b.Param(2, BF16({4, 8, 16}), "w2");
    HloInstruction* act = b.Param(3, BF16({16, 32}), "act");
    HloInstruction* lhs = b.Dot(b.AllGather({w2}, BF16({16, 8, 16}), 0, Groups({{0, 1, 2, 3}}), "ag1"),
                                act, BF16({16, 8, 32}), 2, 0, "lhs_dot");
    HloInstruction* ag2 = b.AllGather({b.Param(4, BF16({4, 16}), "v")}, BF16({16, 16}), 0,
                                      Groups({{0, 1, 2, 3}}), "ag2");
    HloInstruction* refused = b.Dot(b.Op(HloOpcode::kConvert, F32({16, 16}), {ag2}),
                                    b.Param(5, F32({16, 4}), "y"), F32({16, 4}), 1, 0, "refused");
    b.Root(b.Op(HloOpcode::kTuple,
                Shape::MakeTuple({rhs->shape(), lhs->shape(), refused->shape()}),
                {rhs, lhs, refused}));
  };
  Builder with, without;
  build(with);
  build(without);
  NeuronLoopedEinsumReplacer detailed{PassOptions{}};
  PassOptions quiet;
  quiet.record_details = false;
  NeuronLoopedEinsumReplacer lean{quiet};
  ASSERT_TRUE(*detailed.Run(with.module.get()));
  ASSERT_TRUE(*lean.Run(without.module.get()));
  EXPECT_EQ(PrintHloModule(*without.module), PrintHloModule(*with.module));
  EXPECT_EQ(lean.ChangeSummary(), detailed.ChangeSummary());
  EXPECT_THAT(lean.ChangeSummary(), HasSubstr("fused 2 of 3 candidate dots"));
  EXPECT_EQ(lean.Warnings(), detailed.Warnings());
  ASSERT_EQ(lean.Warnings().size(), 1u);
  EXPECT_THAT(lean.Warnings()[0], HasSubstr("%rhs_dot in main was fused into %custom-call"));
  EXPECT_EQ(detailed.candidates().size(), 3u);
  EXPECT_TRUE(lean.candidates().empty());
  EXPECT_TRUE(lean.Explanations().empty());
  EXPECT_THAT(detailed.candidates()[2].reason, HasSubstr("no matcher applies"));
}

TEST_F(ReplacerTest, RhsRsIsAcceptedWithoutWeightProof) {
  Builder b;
  HloInstruction* x = b.Param(0, BF16({32, 16}), "x");
  HloInstruction* w = b.Param(1, BF16({4, 8, 16}), "w");
  HloInstruction* neg = b.Op(HloOpcode::kNegate, BF16({4, 8, 16}), {w});
  HloInstruction* ag = b.AllGather({neg}, BF16({16, 8, 16}), 0);
  HloInstruction* rs = b.Reshape(ag, BF16({16, 128}));
  b.Root(b.Dot(x, rs, BF16({32, 128}), 1, 0));
  NeuronLoopedEinsumReplacer pass{PassOptions{}};
  ASSERT_TRUE(*pass.Run(b.module.get()));
  EXPECT_EQ(pass.candidates()[0].matcher, "RHS-RS");
  HloInstruction* cc = b.comp->root_instruction();
  EXPECT_EQ(cc->operand(0)->operand(0), neg);  // W is the all-gather's operand, whatever it is
  EXPECT_EQ(cc->operand(0)->shape(), BF16({32, 16}));
  EXPECT_THAT(pass.candidates()[0].explanation, HasSubstr("accepted without WeightInRHS"));
}

TEST_F(ReplacerTest, AllGatherDimensionAndRankGate) {
  struct Row {
    std::vector<int64_t> w;
    int64_t dim;
    bool fused;
  };
  const Row rows[] = {
      {{8, 16}, 0, false},    {{8, 16}, 1, false},   {{4, 8, 16}, 0, true},
      {{4, 8, 16}, 1, true},  {{4, 8, 16}, 2, true}, {{2, 2, 4, 16}, 2, true},
      {{2, 2, 4, 16}, 1, false},
  };
  for (const Row& row : rows) {
    Builder b;
    HloInstruction* w = b.Param(0, BF16(row.w), "w");
    std::vector<int64_t> gathered = row.w;
    gathered[row.dim] *= 4;
    HloInstruction* ag = b.AllGather({w}, BF16(gathered), row.dim);
    const int64_t k = gathered.back();
    HloInstruction* x = b.Param(1, BF16({k, 8}), "x");
    std::vector<int64_t> out(gathered.begin(), gathered.end() - 1);
    out.push_back(8);
    b.Root(b.Dot(ag, x, BF16(out), static_cast<int64_t>(gathered.size()) - 1, 0));
    NeuronLoopedEinsumReplacer pass{PassOptions{}};
    ASSERT_EQ(*pass.Run(b.module.get()), row.fused) << BF16(row.w).ToString() << " dim " << row.dim;
    if (!row.fused) {
      EXPECT_EQ(pass.candidates()[0].reason,
                absl::StrCat("all-gather dimension ", row.dim, " <= 1 and its operand has rank ",
                             row.w.size(), ", not 3"));
    } else {
      EXPECT_TRUE(VerifyHloModule(*b.module).ok());
    }
  }
}

TEST_F(ReplacerTest, ExplainsTheRankTwoGatherLikeTheIssueExample) {
  Builder b;
  HloInstruction* w = b.Param(0, BF16({8, 16}), "w");
  HloInstruction* ag = b.AllGather({w}, BF16({32, 16}), 0);
  HloInstruction* x = b.Param(1, BF16({16, 8}), "x");
  b.Root(b.Dot(ag, x, BF16({32, 8}), 1, 0));
  NeuronLoopedEinsumReplacer pass{PassOptions{}};
  ASSERT_FALSE(*pass.Run(b.module.get()));
  EXPECT_EQ(pass.Explanations()[0],
            "%dot in main: not fused: all-gather dimension 0 <= 1 and its operand has rank 2, not 3");
}

TEST_F(ReplacerTest, SingleContractingDimensionPerSide) {
  Builder b;
  HloInstruction* w = b.Param(0, BF16({4, 8, 16}), "w");
  HloInstruction* ag = b.AllGather({w}, BF16({16, 8, 16}), 0);
  HloInstruction* x = b.Param(1, BF16({8, 16, 4}), "x");
  HloInstruction* dot = b.Dot(ag, x, BF16({16, 4}), 1, 0);
  dot->mutable_dot_dimension_numbers()->lhs_contracting_dimensions = {1, 2};
  dot->mutable_dot_dimension_numbers()->rhs_contracting_dimensions = {0, 1};
  b.Root(dot);
  NeuronLoopedEinsumReplacer pass{PassOptions{}};
  ASSERT_FALSE(*pass.Run(b.module.get()));
  EXPECT_THAT(pass.candidates()[0].reason,
              HasSubstr("the dot has 2 rhs contracting dimensions {0,1}; the collective matmul takes exactly 1"));
}

TEST_F(ReplacerTest, ConvertBetweenGatherAndDotMatchesNothingAndSaysSo) {
  Builder b;
  HloInstruction* w = b.Param(0, BF16({4, 8, 16}), "w");
  HloInstruction* ag = b.AllGather({w}, BF16({16, 8, 16}), 0);
  HloInstruction* cvt = b.Op(HloOpcode::kConvert, F32({16, 8, 16}), {ag});
  HloInstruction* x = b.Param(1, F32({16, 8}), "x");
  b.Root(b.Dot(cvt, x, F32({16, 8, 8}), 2, 0));
  HloInstruction* unrelated = b.Dot(x, x, F32({16, 16}), 1, 1, "unrelated");
  (void)unrelated;
  NeuronLoopedEinsumReplacer pass{PassOptions{}};
  ASSERT_FALSE(*pass.Run(b.module.get()));
  ASSERT_EQ(pass.candidates().size(), 1u);  // the unrelated dot is not a candidate
  EXPECT_THAT(pass.candidates()[0].reason,
              HasSubstr("no matcher applies: operand 0 reaches an all-gather as convert(all-gather)"));
}

// NxD: the >5-operand block only applies with NEURON_COLLECTIVE_MATMUL_NXD=1
// (or the flag); 5 operands is still fine.
TEST_F(ReplacerTest, NxdGateBlocksAllGathersWithMoreThanFiveOperands) {
  struct Row {
    int extra;  // scalar operands after W
    const char* env;
    std::optional<bool> flag;
    bool fused;
  };
  const Row rows[] = {
      {5, nullptr, std::nullopt, true}, {5, "1", std::nullopt, false}, {4, "1", std::nullopt, true},
      {5, "1", false, true},            {5, nullptr, true, false},     {5, "0", std::nullopt, true},
  };
  for (const Row& row : rows) {
    unsetenv(kCollectiveMatmulNxdEnv);
    if (row.env != nullptr) EnvSandbox::Set(kCollectiveMatmulNxdEnv, row.env);
    Builder b;
    HloInstruction* w = b.Param(0, BF16({4, 8, 16}), "w");
    std::vector<HloInstruction*> operands = {w};
    std::vector<Shape> shapes = {BF16({16, 8, 16})};
    for (int i = 0; i < row.extra; ++i) {
      operands.push_back(b.Param(1 + i, BF16({}), absl::StrCat("t", i)));
      shapes.push_back(BF16({}));
    }
    HloInstruction* ag = b.AllGather(operands, Shape::MakeTuple(shapes), 0);
    HloInstruction* data = b.Gte(ag, 0);
    HloInstruction* rs = b.Reshape(data, BF16({128, 16}));
    HloInstruction* x = b.Param(1 + row.extra, BF16({16, 8}), "x");
    HloInstruction* dot = b.Dot(rs, x, BF16({128, 8}), 1, 0);
    std::vector<HloInstruction*> outs = {dot};
    std::vector<Shape> out_shapes = {dot->shape()};
    for (int i = 1; i <= row.extra; ++i) {
      outs.push_back(b.Gte(ag, i));
      out_shapes.push_back(BF16({}));
    }
    b.Root(b.Op(HloOpcode::kTuple, Shape::MakeTuple(out_shapes), outs));
    PassOptions options;
    options.collective_matmul_nxd = row.flag;
    NeuronLoopedEinsumReplacer pass(options);
    ASSERT_EQ(*pass.Run(b.module.get()), row.fused)
        << row.extra + 1 << " operands, env=" << (row.env ? row.env : "unset");
    EXPECT_EQ(pass.candidates()[0].matcher, "LHS-NxD");
    if (!row.fused) {
      EXPECT_THAT(pass.candidates()[0].reason,
                  HasSubstr("NEURON_COLLECTIVE_MATMUL_NXD is 1 and the all-gather %ag has 6 operands (more than 5)"));
    } else {
      EXPECT_TRUE(pass.candidates()[0].exact) << pass.candidates()[0].explanation;
      EXPECT_TRUE(VerifyHloModule(*b.module).ok()) << VerifyHloModule(*b.module);
    }
  }
}

// --- use_sb_to_sb -------------------------------------------------------------

TEST_F(ReplacerTest, SbToSbThresholdIsInclusive) {
  // 2 * 2 bytes * 262144 elements = exactly 1 MiB.
  EXPECT_TRUE(FitsSbToSb(PrimitiveType::BF16, 262144, 1));
  EXPECT_FALSE(FitsSbToSb(PrimitiveType::BF16, 262145, 1));
  EXPECT_FALSE(FitsSbToSb(PrimitiveType::BF16, 262144, 0));
  EXPECT_TRUE(FitsSbToSb(PrimitiveType::F32, 131072, 1));
  EXPECT_TRUE(FitsSbToSb(PrimitiveType::BF16, 0, 0));
  EXPECT_FALSE(FitsSbToSb(PrimitiveType::BF16, 1, -1));
  // The default: 16 MiB, so 4 Mi bf16 elements fit exactly.
  EXPECT_TRUE(FitsSbToSb(PrimitiveType::BF16, 4 * 1048576, kDefaultSbToSbThresholdMb));
  EXPECT_FALSE(FitsSbToSb(PrimitiveType::BF16, 4 * 1048576 + 1, kDefaultSbToSbThresholdMb));
  // No overflow at the extremes.
  EXPECT_TRUE(FitsSbToSb(PrimitiveType::F64, INT64_MAX, INT64_MAX));
  EXPECT_FALSE(FitsSbToSb(PrimitiveType::F64, INT64_MAX, 1));
  EXPECT_FALSE(FitsSbToSb(PrimitiveType::C128, INT64_MAX, INT64_MAX / 1048576));
}

TEST_F(ReplacerTest, SbToSbFromDefaultEnvironmentAndFlag) {
  struct Row {
    std::vector<int64_t> w;  // bf16, gathered on dim 0 by 4
    const char* env;
    std::optional<int64_t> flag;
    char expected;
    size_t warnings;
  };
  // [4,256,256] bf16: 2*2*262144 bytes = exactly 1 MiB; [4,1024,1024] = 16 MiB.
  const Row rows[] = {
      {{4, 1024, 1024}, nullptr, std::nullopt, '1', 0},  // equal to the default
      {{4, 1024, 1025}, nullptr, std::nullopt, '0', 0},
      {{4, 256, 256}, "1", std::nullopt, '1', 0},       // equal -> 1
      {{4, 256, 257}, "1", std::nullopt, '0', 0},
      {{4, 256, 256}, "0", std::nullopt, '0', 0},
      {{4, 256, 256}, "1.5", std::nullopt, '1', 1},    // not an integer: default 16, warned
      {{4, 256, 256}, "", std::nullopt, '1', 1},
      {{4, 256, 256}, "0", 1, '1', 0},                 // the flag wins
      {{4, 256, 256}, nullptr, 0, '0', 0},
  };
  for (const Row& row : rows) {
    unsetenv(kSbToSbThresholdEnv);
    if (row.env != nullptr) EnvSandbox::Set(kSbToSbThresholdEnv, row.env);
    Builder b;
    HloInstruction* w = b.Param(0, BF16(row.w), "w");
    std::vector<int64_t> g = row.w;
    g[0] *= 4;
    HloInstruction* ag = b.AllGather({w}, BF16(g), 0);
    HloInstruction* x = b.Param(1, BF16({g[2], 8}), "x");
    b.Root(b.Dot(ag, x, BF16({g[0], g[1], 8}), 2, 0));
    PassOptions options;
    options.sb_to_sb_threshold_mb = row.flag;
    NeuronLoopedEinsumReplacer pass(options);
    ASSERT_TRUE(*pass.Run(b.module.get()));
    const std::string config = *b.comp->root_instruction()->backend_config();
    EXPECT_EQ(config.back(), row.expected)
        << BF16(row.w).ToString() << " env=" << (row.env ? row.env : "unset") << ": " << config;
    EXPECT_EQ(pass.Warnings().size(), row.warnings);
  }
}

// --- Collective geometry ------------------------------------------------------

struct GeometryRow {
  std::string label;
  std::optional<ReplicaGroups> groups;
  std::optional<int64_t> channel_id;
  std::optional<bool> global_ids;
  std::optional<int64_t> replica_count;
  std::optional<int64_t> num_partitions;
  std::string expect;  // backend_config prefix, or a reason substring when not fused
  bool fused;
  bool exact;
};

TEST_F(ReplacerTest, TpDegreeAndNumGroupsFromEveryGroupForm) {
  IotaReplicaGroupList iota;
  iota.num_groups = 2;
  iota.group_size = 4;
  iota.reshape_dims = {8};
  IotaReplicaGroupList strided = iota;
  strided.reshape_dims = {4, 2};
  strided.transpose_perm = {1, 0};
  const GeometryRow rows[] = {
      {"explicit", Groups({{0, 1, 2, 3}}), std::nullopt, std::nullopt, 4, std::nullopt,
       "rhs_contracting_dim=0,tp_degree=4,num_groups=1,", true, true},
      {"two explicit groups", Groups({{0, 1, 2, 3}, {4, 5, 6, 7}}), std::nullopt, std::nullopt, 8,
       std::nullopt, "tp_degree=4,num_groups=2,", true, true},
      {"iota", ReplicaGroups::Iota(iota), std::nullopt, std::nullopt, 8, std::nullopt,
       "tp_degree=4,num_groups=2,", true, true},
      {"strided iota", ReplicaGroups::Iota(strided), std::nullopt, std::nullopt, 8, std::nullopt,
       "tp_degree=4,num_groups=2,", true, false},
      {"empty cross-replica", Groups({}), std::nullopt, std::nullopt, 4, std::nullopt,
       "tp_degree=4,num_groups=1,", true, true},
      {"absent cross-replica", std::nullopt, std::nullopt, std::nullopt, 4, std::nullopt,
       "tp_degree=4,num_groups=1,", true, true},
      {"empty cross-replica-and-partition", Groups({}), 1, std::nullopt, 2, 2,
       "tp_degree=4,num_groups=1,", true, true},
      {"empty, no replica_count", Groups({}), std::nullopt, std::nullopt, std::nullopt, std::nullopt,
       "the module header does not give replica_count", false, false},
      {"empty with channel, no num_partitions", Groups({}), 1, false, 4, std::nullopt,
       "does not give both replica_count and num_partitions", false, false},
      {"empty flattened ids", Groups({}), 1, true, 4, 1, "flattened ids", false, false},
      {"unequal groups", Groups({{0, 1, 2, 3}, {4, 5}}), std::nullopt, std::nullopt, 8, std::nullopt,
       "replica groups have unequal sizes (group 0 has 4 ids, group 1 has 2)", false, false},
      {"empty first group", Groups({{}}), std::nullopt, std::nullopt, 4, std::nullopt,
       "the first replica group is empty", false, false},
      {"raw", ReplicaGroups::Raw("mesh[a=4]"), std::nullopt, std::nullopt, 4, std::nullopt,
       "can not be read as explicit groups", false, false},
  };
  for (const GeometryRow& row : rows) {
    LhsCase t(row.groups);
    t.b.module->set_replica_count(row.replica_count);
    t.b.module->set_num_partitions(row.num_partitions);
    t.ag->set_channel_id(row.channel_id);
    t.ag->set_use_global_device_ids(row.global_ids);
    NeuronLoopedEinsumReplacer pass{PassOptions{}};
    absl::StatusOr<bool> changed = pass.Run(t.b.module.get());
    ASSERT_TRUE(changed.ok()) << row.label;
    ASSERT_EQ(*changed, row.fused) << row.label << ": " << pass.candidates()[0].explanation;
    const auto& c = pass.candidates()[0];
    if (row.fused) {
      EXPECT_THAT(c.backend_config, HasSubstr(row.expect)) << row.label;
      EXPECT_EQ(c.exact, row.exact) << row.label << ": " << c.explanation;
    } else {
      EXPECT_THAT(c.reason, HasSubstr(row.expect)) << row.label;
    }
  }
}

TEST_F(ReplacerTest, NonContiguousGroupsAreInexactAndStrictRefusesThem) {
  for (bool strict : {false, true}) {
    LhsCase t(Groups({{0, 2, 4, 6}, {1, 3, 5, 7}}));
    t.b.module->set_replica_count(8);
    PassOptions options;
    options.collective_matmul_strict = strict;
    NeuronLoopedEinsumReplacer pass(options);
    ASSERT_EQ(*pass.Run(t.b.module.get()), !strict);
    const std::string text = strict ? pass.candidates()[0].reason
                                    : absl::StrJoin(pass.candidates()[0].inexact_reasons, "; ");
    EXPECT_THAT(text, HasSubstr("replica group 0 is {0,2,4,6}, not the contiguous [0, 4) in order"));
  }
}

// --- Do not fold --------------------------------------------------------------

TEST_F(ReplacerTest, ContractingExtentMustDivideTheShard) {
  Builder b;
  HloInstruction* w = b.Param(0, BF16({4, 3, 5}), "w");
  HloInstruction* ag = b.AllGather({w}, BF16({16, 3, 5}), 0);
  HloInstruction* rs = b.Reshape(ag, BF16({30, 8}));
  HloInstruction* x = b.Param(1, BF16({8, 4}), "x");
  b.Root(b.Dot(rs, x, BF16({30, 4}), 1, 0));
  NeuronLoopedEinsumReplacer pass{PassOptions{}};
  ASSERT_FALSE(*pass.Run(b.module.get()));
  EXPECT_THAT(pass.candidates()[0].reason,
              HasSubstr("has 60 elements, which the contracting extent k=8 does not divide"));
  EXPECT_EQ(b.Count(HloOpcode::kDot), 1);
  EXPECT_EQ(b.Count(HloOpcode::kCustomCall), 0);
}

TEST_F(ReplacerTest, ExactnessReasons) {
  {  // gathered on dimension 1 of W[2,4,16]: two blocks per rank
    Builder b;
    HloInstruction* w = b.Param(0, BF16({2, 4, 16}), "w");
    HloInstruction* ag = b.AllGather({w}, BF16({2, 16, 16}), 1);
    HloInstruction* x = b.Param(1, BF16({16, 8}), "x");
    b.Root(b.Dot(ag, x, BF16({2, 16, 8}), 2, 0));
    NeuronLoopedEinsumReplacer pass{PassOptions{}};
    ASSERT_TRUE(*pass.Run(b.module.get()));
    EXPECT_THAT(pass.candidates()[0].inexact_reasons,
                ElementsAre(HasSubstr("concatenates along dimension 1 of W bf16[2,4,16], not along its rows")));
  }
  {  // batch dimensions and a rank-3 activation
    Builder b;
    HloInstruction* w = b.Param(0, BF16({4, 8, 16}), "w");
    HloInstruction* ag = b.AllGather({w}, BF16({16, 8, 16}), 0);
    HloInstruction* x = b.Param(1, BF16({16, 16, 4}), "x");
    HloInstruction* dot = b.Dot(ag, x, BF16({16, 8, 4}), 2, 1);
    dot->mutable_dot_dimension_numbers()->lhs_batch_dimensions = {0};
    dot->mutable_dot_dimension_numbers()->rhs_batch_dimensions = {0};
    b.Root(dot);
    NeuronLoopedEinsumReplacer pass{PassOptions{}};
    ASSERT_TRUE(*pass.Run(b.module.get()));
    EXPECT_THAT(pass.candidates()[0].inexact_reasons,
                ElementsAre(HasSubstr("the dot has batch dimensions (lhs {0}, rhs {0})"),
                            HasSubstr("the activation %x has rank 3")));
    EXPECT_TRUE(VerifyHloModule(*b.module).ok());
  }
}

TEST_F(ReplacerTest, AllGatherUsedElsewhereStays) {
  LhsCase t;
  HloInstruction* root = t.b.Op(HloOpcode::kTuple, Shape::MakeTuple({t.dot->shape(), t.ag->shape()}),
                                {t.dot, t.ag});
  t.b.Root(root);
  ASSERT_TRUE(*RunReplacer(t.b.module.get()));
  EXPECT_EQ(t.b.Count(HloOpcode::kAllGather), 1);
  EXPECT_EQ(root->operand(0)->opcode(), HloOpcode::kCustomCall);
  EXPECT_EQ(root->operand(1), t.ag);
  EXPECT_TRUE(VerifyHloModule(*t.b.module).ok());
}

TEST_F(ReplacerTest, TwoDotsOfOneAllGatherBothFoldAndTheGatherGoes) {
  LhsCase t;
  HloInstruction* x2 = t.b.Param(2, BF16({16, 4}), "x2");
  HloInstruction* dot2 = t.b.Dot(t.ag, x2, BF16({16, 8, 4}), 2, 0, "dot2");
  t.b.Root(t.b.Op(HloOpcode::kTuple, Shape::MakeTuple({t.dot->shape(), dot2->shape()}),
                  {t.dot, dot2}));
  NeuronLoopedEinsumReplacer pass{PassOptions{}};
  ASSERT_TRUE(*pass.Run(t.b.module.get()));
  EXPECT_EQ(pass.candidates().size(), 2u);
  EXPECT_EQ(t.b.Count(HloOpcode::kCustomCall), 2);
  EXPECT_EQ(t.b.Count(HloOpcode::kAllGather), 0);
  EXPECT_EQ(t.b.Count(HloOpcode::kDot), 0);
  EXPECT_TRUE(VerifyHloModule(*t.b.module).ok());
}

// The reshapes of equal weight shapes share one shape (one block, one entry
// of the printer's shape-text cache); HILO_REPLACER_SHARE_SHAPES=0 gives
// each its own, with the same module text.
TEST_F(ReplacerTest, EqualWeightReshapesShareOneShape) {
  for (const bool share : {true, false}) {
    if (!share) setenv("HILO_REPLACER_SHARE_SHAPES", "0", 1);
    LhsCase t;
    HloInstruction* x2 = t.b.Param(2, BF16({16, 4}), "x2");
    HloInstruction* dot2 = t.b.Dot(t.ag, x2, BF16({16, 8, 4}), 2, 0, "dot2");
    t.b.Root(t.b.Op(HloOpcode::kTuple, Shape::MakeTuple({t.dot->shape(), dot2->shape()}),
                    {t.dot, dot2}));
    ASSERT_TRUE(*RunReplacer(t.b.module.get()));
    std::vector<const HloInstruction*> reshapes;
    for (const HloInstruction* i : t.b.comp->instructions()) {
      if (i->opcode() == HloOpcode::kCustomCall) reshapes.push_back(i->operand(0));
    }
    ASSERT_EQ(reshapes.size(), 2u);
    ASSERT_EQ(reshapes[0]->opcode(), HloOpcode::kReshape);
    EXPECT_EQ(reshapes[0]->shape(), reshapes[1]->shape());
    EXPECT_EQ(reshapes[0]->shared_shape().SharesWith(reshapes[1]->shared_shape()), share);
    unsetenv("HILO_REPLACER_SHARE_SHAPES");
  }
}

// Dots whose all-gathers share one replica-group list, have an equal list
// of their own, or a different list (not contiguous: its own reasons; or
// another tp_degree and num_groups: another backend_config), in turns, in
// two modules, fused with environment switch `off` set to 0 (nullptr: none):
// each candidate's explanation, backend_config, reason and inexact reasons,
// then the modules printed.
std::vector<std::string> DecideMixedGroups(const char* off) {
  if (off != nullptr) setenv(off, "0", 1);
  std::vector<std::string> seen;
  const ReplicaGroups shared = Groups({{0, 1, 2, 3}});
  const ReplicaGroups strided = Groups({{0, 2, 4, 6}, {1, 3, 5, 7}});
  for (int module = 0; module < 2; ++module) {
    Builder b;
    HloInstruction* act = b.Param(0, BF16({16, 32}), "x");
    const ReplicaGroups lists[] = {shared,          shared,   strided,
                                   strided,         shared,   Groups({{0, 1, 2, 3}}),
                                   Groups({{0, 1}, {2, 3}}), shared};
    std::vector<HloInstruction*> dots;
    std::vector<Shape> shapes;
    for (size_t i = 0; i < std::size(lists); ++i) {
      const ReplicaGroups& list = lists[(i + static_cast<size_t>(module)) % std::size(lists)];
      const int64_t ids = static_cast<int64_t>(list.explicit_groups()[0].size());
      HloInstruction* w =
          b.Param(static_cast<int64_t>(i) + 1, BF16({16 / ids, 8, 16}), absl::StrCat("w", i));
      HloInstruction* ag = b.AllGather({w}, BF16({16, 8, 16}), 0, list);
      dots.push_back(b.Dot(ag, act, BF16({16, 8, 32}), 2, 0));
      shapes.push_back(dots.back()->shape());
    }
    b.Root(b.Op(HloOpcode::kTuple, Shape::MakeTuple(shapes), dots));
    PassOptions options;
    options.record_details = true;
    NeuronLoopedEinsumReplacer pass(options);
    EXPECT_TRUE(pass.Run(b.module.get()).ok());
    for (const auto& c : pass.candidates()) {
      seen.push_back(absl::StrCat(c.explanation, " | ", c.backend_config, " | ", c.reason, " | ",
                                  absl::StrJoin(c.inexact_reasons, "; ")));
    }
    seen.push_back(PrintHloModule(*b.module));
  }
  if (off != nullptr) unsetenv(off);
  return seen;
}

// The geometry read from an all-gather's explicit replica groups is reused
// for the next all-gather that shares the same group list's contents
// (LoopedEinsumSettings::memo_geometry): every candidate is decided and
// explained as without the memo (HILO_LOOPED_EINSUM_GEOMETRY_MEMO=0).
TEST_F(ReplacerTest, TheGeometryMemoGivesWhatReadingEachAllGatherGives) {
  const std::vector<std::string> with_memo = DecideMixedGroups(nullptr);
  EXPECT_EQ(with_memo, DecideMixedGroups("HILO_LOOPED_EINSUM_GEOMETRY_MEMO"));
  ASSERT_EQ(with_memo.size(), 18u);
  // Both kinds of decision are among them.
  EXPECT_THAT(absl::StrJoin(with_memo, "\n"), HasSubstr("not the contiguous"));
  EXPECT_THAT(absl::StrJoin(with_memo, "\n"), HasSubstr("tp_degree=2,num_groups=2"));
}

// The backend_config text is copied from the last fold's when its values
// are the same (LoopedEinsumSettings::memo_config): with configurations
// A A B B A A C A (tp_degree 4 or 2, num_groups 1 or 2), every custom-call
// gets the text written for it without the memo
// (HILO_LOOPED_EINSUM_CONFIG_MEMO=0).
TEST_F(ReplacerTest, TheConfigMemoGivesWhatWritingEachConfigGives) {
  const std::vector<std::string> with_memo = DecideMixedGroups(nullptr);
  EXPECT_EQ(with_memo, DecideMixedGroups("HILO_LOOPED_EINSUM_CONFIG_MEMO"));
  const std::string all = absl::StrJoin(with_memo, "\n");
  EXPECT_THAT(all, HasSubstr("backend_config=\"rhs_contracting_dim=0,tp_degree=4,num_groups=1"));
  EXPECT_THAT(all, HasSubstr("backend_config=\"rhs_contracting_dim=0,tp_degree=4,num_groups=2"));
  EXPECT_THAT(all, HasSubstr("backend_config=\"rhs_contracting_dim=0,tp_degree=2,num_groups=2"));
}

// The custom calls' attribute groups are made in the module's arena
// (HILO_REPLACER_ARENA_GROUPS): every candidate is decided, explained and
// printed as with heap groups, and the pass leaves the thread's loading
// arena as it found it (none outside a load).
TEST_F(ReplacerTest, ArenaGroupsGiveWhatHeapGroupsGive) {
  const std::vector<std::string> arena = DecideMixedGroups(nullptr);
  EXPECT_EQ(InstructionArena::Loading(), nullptr);
  EXPECT_EQ(arena, DecideMixedGroups("HILO_REPLACER_ARENA_GROUPS"));
  const std::string all = absl::StrJoin(arena, "\n");
  EXPECT_THAT(all, HasSubstr("custom_call_target=\"AwsNeuronCollectiveMatmul\""));
  EXPECT_THAT(all, HasSubstr("backend_config=\"rhs_contracting_dim=0,tp_degree=2,num_groups=2"));
}

// A parsed module's fold gives its shard and its activation a second user
// each: both user lists leave their inline word for a block from the
// module's arena (HILO_REPLACER_ARENA_USERS), two blocks of two users, not
// heap blocks; the module prints as with heap blocks, and the pass leaves
// the thread's loading arena as it found it.
std::pair<std::string, size_t> FoldParsedLayer(const char* off) {
  if (off != nullptr) setenv(off, "0", 1);
  absl::StatusOr<std::unique_ptr<HloModule>> module = ParseHloModule(R"(
HloModule layer, replica_count=32

ENTRY %main (x: bf16[2048,4096], w: bf16[4,128,4096]) -> bf16[4096,2048] {
  %x = bf16[2048,4096]{1,0} parameter(0)
  %w = bf16[4,128,4096]{2,1,0} parameter(1)
  %ag = bf16[32,128,4096]{2,1,0} all-gather(bf16[4,128,4096]{2,1,0} %w), channel_id=1, replica_groups={{0,1,2,3,4,5,6,7},{8,9,10,11,12,13,14,15},{16,17,18,19,20,21,22,23},{24,25,26,27,28,29,30,31}}, dimensions={0}
  %w.2d = bf16[4096,4096]{1,0} reshape(bf16[32,128,4096]{2,1,0} %ag)
  %norm = bf16[2048,4096]{1,0} multiply(bf16[2048,4096]{1,0} %x, bf16[2048,4096]{1,0} %x)
  ROOT %dot = bf16[4096,2048]{1,0} dot(bf16[4096,4096]{1,0} %w.2d, bf16[2048,4096]{1,0} %norm), lhs_contracting_dims={1}, rhs_contracting_dims={1}
}
)");
  EXPECT_TRUE(module.ok()) << module.status();
  if (!module.ok()) return {};
  const size_t before = (*module)->instruction_arena().used_bytes();
  NeuronLoopedEinsumReplacer pass{PassOptions()};
  absl::StatusOr<bool> changed = pass.Run(module->get());
  EXPECT_TRUE(changed.ok() && *changed);
  EXPECT_EQ(InstructionArena::Loading(), nullptr);
  const size_t grown = (*module)->instruction_arena().used_bytes() - before;
  if (off != nullptr) unsetenv(off);
  return {PrintHloModule(**module), grown};
}

TEST_F(ReplacerTest, FoldedOperandsUserListsGoToTheArena) {
  const auto [arena_text, arena_grown] = FoldParsedLayer(nullptr);
  const auto [heap_text, heap_grown] = FoldParsedLayer("HILO_REPLACER_ARENA_USERS");
  EXPECT_THAT(arena_text, HasSubstr("custom_call_target=\"AwsNeuronCollectiveMatmul\""));
  EXPECT_THAT(arena_text, Not(HasSubstr(" dot(")));
  EXPECT_EQ(arena_text, heap_text);
  // Two blocks of a header word and two users.
  EXPECT_EQ(arena_grown - heap_grown, 2 * 3 * sizeof(void*));
}

// The fold memo (LoopedEinsumFoldMemo) gives a dot the fold kept for an
// earlier dot with the same read key, and only then. Parsed layers (the
// parser shares equal shapes and group lists) of kinds A A B A C D C E A A:
// B's groups are A's ids in another order (not contiguous: not exact, so
// not kept), C has a square activation contracted on dimension 1 and D the
// same contracted on 0 (only the dimension numbers differ: another
// backend_config), E gathers an f32 weight (another reshape shape). With two
// entries kept, the hits are the second A, the third A, the second C and
// the last A; every other dot is analysed, and the module, the summary and
// the warnings are what the analysis of every dot gives
// (HILO_LOOPED_EINSUM_FOLD_MEMO=0: no hits).
// A Run as hilo-opt's without --explain or --report (no details) on a
// parsed module: what it printed and said, and its counters.
struct LeanRun {
  std::string printed;
  std::string summary;
  std::vector<std::string> warnings;
  int64_t hits = 0;   // fold_memo_hits
  int64_t early = 0;  // early_refusals
  size_t plans_capacity = 0;
  int64_t matcher_runs = 0;    // fold_memo_matcher_runs
  int64_t ancestor_walks = 0;  // ancestor_walks
};

LeanRun RunWithoutDetails(const absl::StatusOr<std::unique_ptr<HloModule>>& module) {
  EXPECT_TRUE(module.ok()) << module.status();
  LeanRun run;
  if (!module.ok()) return run;
  PassOptions options;
  options.record_details = false;
  NeuronLoopedEinsumReplacer pass(options);
  absl::StatusOr<bool> changed = pass.Run(module->get());
  EXPECT_TRUE(changed.ok() && *changed);
  run = {PrintHloModule(**module), pass.Summary(),          pass.Warnings(),
         pass.fold_memo_hits(),   pass.early_refusals(),   pass.plans_capacity(),
         pass.fold_memo_matcher_runs(), pass.ancestor_walks()};
  return run;
}
using FoldMemoRun = LeanRun;

// Two runs printed, summarised and warned alike.
void ExpectSameOutput(const LeanRun& a, const LeanRun& b) {
  EXPECT_EQ(a.printed, b.printed);
  EXPECT_EQ(a.summary, b.summary);
  EXPECT_EQ(a.warnings, b.warnings);
}

FoldMemoRun FoldLayersWithMemo(const char* off) {
  if (off != nullptr) setenv(off, "0", 1);
  const std::string contiguous = "{{0,1,2,3},{4,5,6,7},{8,9,10,11},{12,13,14,15}}";
  const std::string reordered = "{{1,0,2,3},{4,5,6,7},{8,9,10,11},{12,13,14,15}}";
  struct Kind {
    const char* weight_type;
    const std::string* groups;
    const char* activation;  // dimensions
    int rhs_contracting;
    const char* result;
  };
  const Kind a{"bf16", &contiguous, "2048,4096", 1, "bf16[2048,2048]{1,0}"};
  const Kind b{"bf16", &reordered, "2048,4096", 1, "bf16[2048,2048]{1,0}"};
  const Kind c{"bf16", &contiguous, "4096,4096", 1, "bf16[2048,4096]{1,0}"};
  const Kind d{"bf16", &contiguous, "4096,4096", 0, "bf16[2048,4096]{1,0}"};
  const Kind e{"f32", &contiguous, "2048,4096", 1, "f32[2048,2048]{1,0}"};
  const Kind layers[] = {a, a, b, a, c, d, c, e, a, a};
  std::string params, results, body, dots;
  for (size_t i = 0; i < std::size(layers); ++i) {
    const Kind& k = layers[i];
    const std::string w = absl::StrCat(k.weight_type, "[4,128,4096]");
    const std::string g = absl::StrCat(k.weight_type, "[16,128,4096]");
    const std::string w2d = absl::StrCat(k.weight_type, "[2048,4096]");
    const std::string x = absl::StrCat("bf16[", k.activation, "]");
    absl::StrAppend(&params, i == 0 ? "" : ", ", "w", i, ": ", w, ", x", i, ": ", x);
    absl::StrAppend(&results, i == 0 ? "" : ", ", k.result);
    absl::StrAppend(&body, "  %w", i, " = ", w, "{2,1,0} parameter(", 2 * i, ")\n");
    absl::StrAppend(&body, "  %ag", i, " = ", g, "{2,1,0} all-gather(", w, "{2,1,0} %w", i,
                    "), channel_id=", i + 1, ", replica_groups=", *k.groups,
                    ", dimensions={0}\n");
    absl::StrAppend(&body, "  %w2d", i, " = ", w2d, "{1,0} reshape(", g, "{2,1,0} %ag", i, ")\n");
    absl::StrAppend(&body, "  %x", i, " = ", x, "{1,0} parameter(", 2 * i + 1, ")\n");
    absl::StrAppend(&body, "  %dot", i, " = ", k.result, " dot(", w2d, "{1,0} %w2d", i, ", ", x,
                    "{1,0} %x", i, "), lhs_contracting_dims={1}, rhs_contracting_dims={",
                    k.rhs_contracting, "}\n");
    absl::StrAppend(&dots, i == 0 ? "" : ", ", k.result, " %dot", i);
  }
  const std::string text =
      absl::StrCat("HloModule layers, replica_count=16\n\nENTRY %main (", params, ") -> (",
                   results, ") {\n", body, "  ROOT %t = (", results, ") tuple(", dots, ")\n}\n");
  const FoldMemoRun run = RunWithoutDetails(ParseHloModule(text));
  if (off != nullptr) unsetenv(off);
  return run;
}

TEST_F(ReplacerTest, TheFoldMemoServesOnlyDotsWithTheSameReadKey) {
  const FoldMemoRun memo = FoldLayersWithMemo(nullptr);
  const FoldMemoRun each = FoldLayersWithMemo("HILO_LOOPED_EINSUM_FOLD_MEMO");
  EXPECT_EQ(memo.hits, 4);
  EXPECT_EQ(each.hits, 0);
  ExpectSameOutput(memo, each);
  // Each kind got its own decision.
  EXPECT_THAT(memo.summary, HasSubstr("10 fused (9 exact"));
  ASSERT_EQ(memo.warnings.size(), 1u);
  EXPECT_THAT(memo.warnings[0], HasSubstr("%dot2 "));
  EXPECT_THAT(memo.printed, HasSubstr("backend_config=\"rhs_contracting_dim=0,tp_degree=4,num_groups=4"));
  EXPECT_THAT(memo.printed, HasSubstr("backend_config=\"rhs_contracting_dim=1,tp_degree=4,num_groups=4"));
  EXPECT_THAT(memo.printed, HasSubstr("f32[512,4096]{1,0} reshape(f32[4,128,4096]"));
}

// The layers above folded as is and with `off` at 0, which must print,
// summarise and warn alike.
std::pair<FoldMemoRun, FoldMemoRun> FoldLayersOnAndOff(const char* off) {
  std::pair<FoldMemoRun, FoldMemoRun> runs{FoldLayersWithMemo(nullptr), FoldLayersWithMemo(off)};
  ExpectSameOutput(runs.first, runs.second);
  return runs;
}

// The fold memo compares a dot with its kept keys before running the LHS
// and LHS-RS matchers, and runs them only for a miss: the six dots the
// memo does not serve run them, the four hits do not
// (HILO_LOOPED_EINSUM_LEAN_FIND=0: the matchers for every dot).
TEST_F(ReplacerTest, TheFoldMemoRunsTheMatchersOnlyForAMiss) {
  const auto [lean, matched] = FoldLayersOnAndOff("HILO_LOOPED_EINSUM_LEAN_FIND");
  EXPECT_EQ(std::make_pair(lean.hits, matched.hits), std::make_pair(int64_t{4}, int64_t{4}));
  EXPECT_EQ(std::make_pair(lean.matcher_runs, matched.matcher_runs),
            std::make_pair(int64_t{6}, int64_t{10}));
}

// A kept plan's check of what the analysis reads finds the shard on the
// weight's chain, which answers the fold's ancestors test: no fold of the
// ten walks the chain again (HILO_REPLACER_ANCESTORS_FROM_CHECK=0: every
// fold walks).
TEST_F(ReplacerTest, TheKeptPlansCheckAnswersTheAncestorsTest) {
  const auto [from_check, walked] = FoldLayersOnAndOff("HILO_REPLACER_ANCESTORS_FROM_CHECK");
  EXPECT_EQ(std::make_pair(from_check.ancestor_walks, walked.ancestor_walks),
            std::make_pair(int64_t{0}, int64_t{10}));
}

// Dots without exactly one contracting dimension a side are refused before
// the analysis (LoopedEinsumRefusedEarly): %dot1 and %dot2 (two contracting
// dimensions a side, an all-gathered operand 1 and 0) are candidates refused
// without a plan, %dot3 (no all-gather) is no candidate; %dot0 folds. The
// module, the summary and the warnings are the analysis's
// (HILO_LOOPED_EINSUM_EARLY_REFUSAL=0: every dot analysed, no early
// refusal). Matching reserves its vectors for the four offered dots
// (WillOfferAtMost): the kept plans have room for four, where growing for
// the one fold gave room for one (HILO_REPLACER_RESERVE_PLANS=0).
using RefusalRun = LeanRun;

constexpr const char* kRefusalsModule = R"(
HloModule refusals, replica_count=16

ENTRY %main (w0: bf16[4,128,4096], x0: bf16[2048,4096], w1: bf16[4,64,64], x1: bf16[16,64,64], y: bf16[16,64,64]) -> (bf16[2048,2048], bf16[16,16], bf16[16,16], bf16[16,16]) {
  %w0 = bf16[4,128,4096]{2,1,0} parameter(0)
  %ag0 = bf16[16,128,4096]{2,1,0} all-gather(bf16[4,128,4096]{2,1,0} %w0), channel_id=1, replica_groups={{0,1,2,3},{4,5,6,7},{8,9,10,11},{12,13,14,15}}, dimensions={0}
  %w2d0 = bf16[2048,4096]{1,0} reshape(bf16[16,128,4096]{2,1,0} %ag0)
  %x0 = bf16[2048,4096]{1,0} parameter(1)
  %dot0 = bf16[2048,2048]{1,0} dot(bf16[2048,4096]{1,0} %w2d0, bf16[2048,4096]{1,0} %x0), lhs_contracting_dims={1}, rhs_contracting_dims={1}
  %w1 = bf16[4,64,64]{2,1,0} parameter(2)
  %ag1 = bf16[16,64,64]{2,1,0} all-gather(bf16[4,64,64]{2,1,0} %w1), channel_id=2, replica_groups={{0,1,2,3},{4,5,6,7},{8,9,10,11},{12,13,14,15}}, dimensions={0}
  %x1 = bf16[16,64,64]{2,1,0} parameter(3)
  %y = bf16[16,64,64]{2,1,0} parameter(4)
  %dot1 = bf16[16,16]{1,0} dot(bf16[16,64,64]{2,1,0} %x1, bf16[16,64,64]{2,1,0} %ag1), lhs_contracting_dims={1,2}, rhs_contracting_dims={1,2}
  %dot2 = bf16[16,16]{1,0} dot(bf16[16,64,64]{2,1,0} %ag1, bf16[16,64,64]{2,1,0} %x1), lhs_contracting_dims={1,2}, rhs_contracting_dims={1,2}
  %dot3 = bf16[16,16]{1,0} dot(bf16[16,64,64]{2,1,0} %x1, bf16[16,64,64]{2,1,0} %y), lhs_contracting_dims={1,2}, rhs_contracting_dims={1,2}
  ROOT %t = (bf16[2048,2048]{1,0}, bf16[16,16]{1,0}, bf16[16,16]{1,0}, bf16[16,16]{1,0}) tuple(%dot0, %dot1, %dot2, %dot3)
}
)";

// The module above folded as is and with `off` at 0 in the environment.
std::pair<RefusalRun, RefusalRun> FoldWithRefusals(const char* off) {
  const RefusalRun on = RunWithoutDetails(ParseHloModule(kRefusalsModule));
  setenv(off, "0", 1);
  const RefusalRun at_zero = RunWithoutDetails(ParseHloModule(kRefusalsModule));
  unsetenv(off);
  return {on, at_zero};
}

TEST_F(ReplacerTest, DotsWithTwoContractingDimensionsAreRefusedBeforeTheAnalysis) {
  const auto [early, analysed] = FoldWithRefusals("HILO_LOOPED_EINSUM_EARLY_REFUSAL");
  EXPECT_THAT(early.printed, HasSubstr("custom_call_target=\"AwsNeuronCollectiveMatmul\""));
  EXPECT_THAT(early.printed, HasSubstr("%dot1 = bf16[16,16]{1,0} dot("));
  EXPECT_THAT(early.printed, HasSubstr("%dot3 = bf16[16,16]{1,0} dot("));
  EXPECT_THAT(early.summary, HasSubstr("3 candidate dot(s), 1 fused"));
  EXPECT_EQ(early.early, 2);
  EXPECT_EQ(analysed.early, 0);
  ExpectSameOutput(early, analysed);
}

TEST_F(ReplacerTest, MatchingReservesForTheOfferedDots) {
  const auto [reserved, grown] = FoldWithRefusals("HILO_REPLACER_RESERVE_PLANS");
  EXPECT_EQ(reserved.plans_capacity, 4u);
  EXPECT_EQ(grown.plans_capacity, 1u);
  ExpectSameOutput(reserved, grown);
}

// The replacer's lean bookkeeping (kept plans of memo hits built in place,
// no probe of an empty map of inexact candidates, AddFold's arena set
// twice a fold) changes nothing printed, summarised or warned, with a
// fold not exact (a warning) among memo hits and with early refusals
// (HILO_REPLACER_LEAN_FOLDS=0: the earlier paths).
TEST_F(ReplacerTest, TheLeanFoldPathsGiveTheSameOutput) {
  const auto [lean, earlier] = FoldLayersOnAndOff("HILO_REPLACER_LEAN_FOLDS");
  EXPECT_EQ(lean.hits, 4);
  ASSERT_EQ(lean.warnings.size(), 1u);
  const auto [lean_refusals, earlier_refusals] = FoldWithRefusals("HILO_REPLACER_LEAN_FOLDS");
  EXPECT_EQ(lean_refusals.early, 2);
  ExpectSameOutput(lean_refusals, earlier_refusals);
}

// Kept plans hold their reshape's shape shared from matching
// (SharedReshapeShape): with weights of two shapes in turns ([32,16] for
// four ids, [64,16] for two), each reshape gets its own weight's shape, and
// the modules print as with a shape per reshape
// (HILO_REPLACER_SHARE_SHAPES=0).
TEST_F(ReplacerTest, KeptReshapeShapesFollowEachWeight) {
  const std::vector<std::string> shared = DecideMixedGroups(nullptr);
  EXPECT_EQ(shared, DecideMixedGroups("HILO_REPLACER_SHARE_SHAPES"));
  const std::string all = absl::StrJoin(shared, "\n");
  EXPECT_THAT(all, HasSubstr("bf16[32,16] reshape(bf16[4,8,16]"));
  EXPECT_THAT(all, HasSubstr("bf16[64,16] reshape(bf16[8,8,16]"));
}

// The plan kept from matching (NeuronLoopedEinsumReplacer::plans_) is used
// only when no earlier expansion changed what the analysis reads. Here the
// second dot gathers the first dot's result (RHS-RS, accepted without a
// weight check), so folding the first reroutes the second's all-gather to
// the new custom-call: the kept plan's shard, the removed first dot, is
// stale and the dot is decided again. Same module as deciding again always
// (HILO_LOOPED_EINSUM_REANALYZE=1, the original's way).
struct ChainedFolds {
  LhsCase t;
  HloInstruction* ag2;
  HloInstruction* dot2;
  ChainedFolds() {
    // dot: bf16[16,8,32]; all-gather it on dim 0 over 4, reshape, dot again.
    ag2 = t.b.AllGather({t.dot}, BF16({64, 8, 32}), 0, Groups({{0, 1, 2, 3}}), "ag2");
    HloInstruction* rs2 = t.b.Reshape(ag2, BF16({64, 256}));
    HloInstruction* y = t.b.Param(2, BF16({8, 64}), "y");
    dot2 = t.b.Dot(y, rs2, BF16({8, 256}), 1, 0, "dot2");
    t.b.Root(dot2);
  }
};

TEST_F(ReplacerTest, AFoldBelowAnEarlierFoldIsDecidedAgain) {
  ChainedFolds c;
  ASSERT_TRUE(VerifyHloModule(*c.t.b.module).ok());
  NeuronLoopedEinsumReplacer pass{PassOptions{}};
  ASSERT_TRUE(*pass.Run(c.t.b.module.get()));
  EXPECT_EQ(pass.candidates().size(), 2u);
  EXPECT_EQ(c.t.b.Count(HloOpcode::kCustomCall), 2);
  EXPECT_EQ(c.t.b.Count(HloOpcode::kDot), 0);
  const absl::Status verified = VerifyHloModule(*c.t.b.module);
  EXPECT_TRUE(verified.ok()) << verified;
  // The second fold reshapes the first fold's custom-call (what the all-gather
  // reads after the first fold), not the removed dot.
  const HloInstruction* root = c.t.b.comp->root_instruction();
  ASSERT_EQ(root->opcode(), HloOpcode::kCustomCall);
  const HloInstruction* shard = root->operand(0)->operand(0);
  EXPECT_EQ(shard->opcode(), HloOpcode::kCustomCall);
  EXPECT_EQ(shard->operand(0)->operand(0), c.t.w);

  ChainedFolds again;
  setenv("HILO_LOOPED_EINSUM_REANALYZE", "1", 1);
  NeuronLoopedEinsumReplacer reanalyzing{PassOptions{}};
  absl::StatusOr<bool> changed = reanalyzing.Run(again.t.b.module.get());
  unsetenv("HILO_LOOPED_EINSUM_REANALYZE");
  ASSERT_TRUE(changed.ok() && *changed);
  EXPECT_EQ(PrintHloModule(*again.t.b.module), PrintHloModule(*c.t.b.module));
  EXPECT_EQ(reanalyzing.Explanations(), pass.Explanations());
}

// Each fold reads only ancestors of its dot (the shard by operand-0 hops,
// the activation an operand), whether from a kept plan (one fold) or decided
// again (ChainedFolds' second fold reshapes the first fold's custom-call):
// the Run vouches for it (touched_made_no_cycle, so the pipeline's touched
// check leaves out the cycle search) and the full check, cycles included,
// agrees; the pipeline gives the same module with HILO_TOUCHED_NO_CYCLE_PROOF=0.
TEST_F(ReplacerTest, EveryFoldReadsOnlyAncestorsOfItsDot) {
  LhsCase one;
  NeuronLoopedEinsumReplacer pass{PassOptions{}};
  ASSERT_TRUE(*pass.Run(one.b.module.get()));
  EXPECT_TRUE(pass.touched_made_no_cycle());
  ChainedFolds c;
  NeuronLoopedEinsumReplacer chained{PassOptions{}};
  ASSERT_TRUE(*chained.Run(c.t.b.module.get()));
  EXPECT_EQ(c.t.b.Count(HloOpcode::kCustomCall), 2);
  EXPECT_TRUE(chained.touched_made_no_cycle());
  EXPECT_TRUE(VerifyHloModule(*c.t.b.module).ok());
  std::vector<std::string> printed;
  for (const char* proof : {"1", "0"}) {
    setenv("HILO_TOUCHED_NO_CYCLE_PROOF", proof, 1);
    ChainedFolds again;
    HloPassPipeline pipeline;
    pipeline.AddPass<NeuronLoopedEinsumReplacer>(PassOptions{});
    absl::StatusOr<bool> changed = pipeline.Run(again.t.b.module.get());
    unsetenv("HILO_TOUCHED_NO_CYCLE_PROOF");
    ASSERT_TRUE(changed.ok()) << changed.status();
    printed.push_back(PrintHloModule(*again.t.b.module));
  }
  EXPECT_EQ(printed[0], printed[1]);
  EXPECT_EQ(printed[0], PrintHloModule(*c.t.b.module));
}

TEST_F(ReplacerTest, TheKeptPlanIsCheckedAlongTheWholeChainTheAnalysisReads) {
  // dot(x, convert(convert(...(p)))): the instruction at position k of
  // operand 1's chain (0 = the operand itself) is replaced by a new one,
  // the only instruction with an id >= its own. Positions below
  // kLoopedEinsumChainRead are read, the next one is not.
  for (int k = 0; k <= kLoopedEinsumChainRead; ++k) {
    Builder b;
    HloInstruction* x = b.Param(0, BF16({16}), "x");
    std::vector<HloInstruction*> chain = {b.Param(1, BF16({16}), "p")};
    for (int i = 0; i < kLoopedEinsumChainRead + 1; ++i) {
      chain.push_back(b.Op(HloOpcode::kConvert, BF16({16}), {chain.back()}));
    }
    HloInstruction* dot = b.Dot(x, chain.back(), BF16({}), 0, 0);
    const size_t n = chain.size();
    HloInstruction* replaced = chain[n - 1 - k];
    HloInstruction* fresh = b.Op(HloOpcode::kConvert, BF16({16}), {replaced->mutable_operand(0)});
    if (k == 0) {
      dot->ReplaceOperandWith(1, fresh);
    } else {
      chain[n - k]->ReplaceOperandWith(0, fresh);
    }
    EXPECT_EQ(LoopedEinsumReadsOnlyIdsBelow(dot, fresh->unique_id()), k == kLoopedEinsumChainRead)
        << "position " << k;
    // Operand 0 is read too.
    dot->ReplaceOperandWith(0, b.Op(HloOpcode::kNegate, BF16({16}), {x}));
    EXPECT_FALSE(LoopedEinsumReadsOnlyIdsBelow(dot, fresh->unique_id() + 1));
  }
}

// For a plan of LHS or LHS-RS, the analysis reads operand 1 itself only
// (the activation), so the check with the matcher stops there on operand 1
// and reads operand 0's whole chain; for the other matchers it is the whole
// check. Here operand 1's chain has a new instruction at position k.
TEST_F(ReplacerTest, TheKeptPlanOfAnLhsMatchReadsTheActivationOnly) {
  for (int k = 0; k < kLoopedEinsumChainRead; ++k) {
    LhsCase t;
    std::vector<HloInstruction*> chain = {t.act};
    for (int i = 0; i < kLoopedEinsumChainRead; ++i) {
      chain.push_back(t.b.Op(HloOpcode::kNegate, BF16({16, 32}), {chain.back()}));
    }
    t.dot->ReplaceOperandWith(1, chain.back());
    const size_t n = chain.size();
    HloInstruction* fresh =
        t.b.Op(HloOpcode::kNegate, BF16({16, 32}), {chain[n - 1 - k]->mutable_operand(0)});
    if (k == 0) {
      t.dot->ReplaceOperandWith(1, fresh);
    } else {
      chain[n - k]->ReplaceOperandWith(0, fresh);
    }
    const int64_t end = fresh->unique_id();
    EXPECT_FALSE(LoopedEinsumReadsOnlyIdsBelow(t.dot, end)) << k;
    EXPECT_EQ(LoopedEinsumReadsOnlyIdsBelow(t.dot, end, LoopedEinsumMatcher::kLhs), k > 0) << k;
    EXPECT_EQ(LoopedEinsumReadsOnlyIdsBelow(t.dot, end, LoopedEinsumMatcher::kLhsRS), k > 0) << k;
    for (LoopedEinsumMatcher other : {LoopedEinsumMatcher::kRhs, LoopedEinsumMatcher::kRhsRS,
                                      LoopedEinsumMatcher::kLhsNxD, LoopedEinsumMatcher::kNone}) {
      EXPECT_FALSE(LoopedEinsumReadsOnlyIdsBelow(t.dot, end, other)) << k;
    }
    // Operand 0's chain is read whole: a new all-gather operand is seen.
    HloInstruction* w2 = t.b.Op(HloOpcode::kNegate, BF16({4, 8, 16}), {t.w});
    t.ag->ReplaceOperandWith(0, w2);
    EXPECT_FALSE(LoopedEinsumReadsOnlyIdsBelow(t.dot, w2->unique_id(), LoopedEinsumMatcher::kLhs));
  }
}

// A fold whose result feeds a later LHS dot's activation through a reshape:
// expanding the first reroutes the reshape (operand 1's chain, position 1)
// to the new custom call. With the short check the second dot keeps its
// plan; the module and explanations are those of deciding again always
// (HILO_LOOPED_EINSUM_REANALYZE=1) and of the whole check
// (HILO_LOOPED_EINSUM_SHORT_ACTIVATION_CHECK=0).
TEST_F(ReplacerTest, AFoldFeedingTheNextActivationKeepsTheNextPlan) {
  auto run = [](const char* name, const char* value) {
    if (name != nullptr) setenv(name, value, 1);
    LhsCase t;
    HloInstruction* act2 = t.b.Reshape(t.dot, BF16({16, 256}));
    HloInstruction* w2 = t.b.Param(2, BF16({4, 8, 16}), "w2");
    HloInstruction* ag2 = t.b.AllGather({w2}, BF16({16, 8, 16}), 0, Groups({{0, 1, 2, 3}}), "ag2");
    t.b.Root(t.b.Dot(ag2, act2, BF16({16, 8, 256}), 2, 0, "dot2"));
    PassOptions options;
    options.record_details = true;
    NeuronLoopedEinsumReplacer pass(options);
    absl::StatusOr<bool> changed = pass.Run(t.b.module.get());
    if (name != nullptr) unsetenv(name);
    EXPECT_TRUE(changed.ok() && *changed);
    std::vector<std::string> seen = pass.Explanations();
    seen.push_back(PrintHloModule(*t.b.module));
    return seen;
  };
  const std::vector<std::string> short_check = run(nullptr, nullptr);
  ASSERT_EQ(short_check.size(), 3u);
  EXPECT_THAT(short_check[1], HasSubstr("fused as LHS"));
  EXPECT_THAT(short_check[2], HasSubstr("reshape(bf16[16,8,32] %custom-call)"));
  EXPECT_EQ(short_check, run("HILO_LOOPED_EINSUM_REANALYZE", "1"));
  EXPECT_EQ(short_check, run("HILO_LOOPED_EINSUM_SHORT_ACTIVATION_CHECK", "0"));
}

// The weight is loop-carried: a get-tuple-element of the while body's
// parameter (converted from f32), gathered and contracted in the body.
TEST_F(ReplacerTest, WeightCarriedThroughAWhileLoop) {
  Builder b;
  const Shape state = Shape::MakeTuple({F32({4, 8, 16}), BF16({16, 32}), BF16({16, 8, 32})});
  HloComputation* body =
      b.module->AddComputation(std::make_unique<HloComputation>("body"));
  HloComputation* cond =
      b.module->AddComputation(std::make_unique<HloComputation>("cond"));
  {
    HloInstruction* p = body->AddInstruction(HloInstruction::CreateParameter(0, state, "p"));
    HloInstruction* w = body->AddInstruction(
        HloInstruction::CreateGetTupleElement(state.tuple_shapes(0), p, 0));
    HloInstruction* x = body->AddInstruction(
        HloInstruction::CreateGetTupleElement(state.tuple_shapes(1), p, 1));
    HloInstruction* acc = body->AddInstruction(
        HloInstruction::CreateGetTupleElement(state.tuple_shapes(2), p, 2));
    HloInstruction* cvt = body->AddInstruction(
        HloInstruction::Create(HloOpcode::kConvert, BF16({4, 8, 16}), {w}));
    HloInstruction* ag = body->AddInstruction(
        HloInstruction::Create(HloOpcode::kAllGather, BF16({16, 8, 16}), {cvt}, "ag"));
    ag->set_dimensions({0});
    ag->set_replica_groups(Groups({{0, 1, 2, 3}}));
    HloInstruction* dot = body->AddInstruction(
        HloInstruction::Create(HloOpcode::kDot, BF16({16, 8, 32}), {ag, x}, "dot"));
    dot->mutable_dot_dimension_numbers()->lhs_contracting_dimensions = {2};
    dot->mutable_dot_dimension_numbers()->rhs_contracting_dimensions = {0};
    HloInstruction* sum = body->AddInstruction(
        HloInstruction::Create(HloOpcode::kAdd, BF16({16, 8, 32}), {acc, dot}));
    body->set_root_instruction(body->AddInstruction(
        HloInstruction::Create(HloOpcode::kTuple, state, {w, x, sum})));
  }
  {
    HloInstruction* p = cond->AddInstruction(HloInstruction::CreateParameter(0, state, "c"));
    (void)p;
    HloInstruction* k = cond->AddInstruction(
        HloInstruction::Create(HloOpcode::kConstant, Shape::MakeScalar(PrimitiveType::PRED), {}));
    k->set_literal_text("false");
    cond->set_root_instruction(k);
  }
  HloInstruction* init = b.Param(0, state, "init");
  HloInstruction* loop = b.Op(HloOpcode::kWhile, state, {init}, "loop");
  loop->SetCalledComputations("condition", {cond});
  loop->SetCalledComputations("body", {body});
  b.Root(loop);
  ASSERT_TRUE(VerifyHloModule(*b.module).ok()) << VerifyHloModule(*b.module);

  NeuronLoopedEinsumReplacer pass{PassOptions{}};
  ASSERT_TRUE(*pass.Run(b.module.get()));
  ASSERT_EQ(pass.candidates().size(), 1u);
  EXPECT_EQ(pass.candidates()[0].computation, "body");
  EXPECT_THAT(pass.candidates()[0].explanation, HasSubstr("from parameter %p"));
  const HloInstruction* sum = body->root_instruction()->operand(2);
  ASSERT_EQ(sum->operand(1)->opcode(), HloOpcode::kCustomCall);
  // W is the convert (the all-gather's operand), reshaped to [512/16, 16].
  EXPECT_EQ(sum->operand(1)->operand(0)->operand(0)->opcode(), HloOpcode::kConvert);
  EXPECT_EQ(b.Count(HloOpcode::kAllGather), 0);
  EXPECT_TRUE(VerifyHloModule(*b.module).ok()) << VerifyHloModule(*b.module);
  EXPECT_FALSE(*pass.Run(b.module.get()));
}

// --- Odd graphs never crash -----------------------------------------------------

TEST_F(ReplacerTest, OddGraphsAreExplainedNotCrashed) {
  {  // the dot reads a tuple-shaped all-gather directly
    Builder b;
    HloInstruction* w = b.Param(0, BF16({4, 8, 16}), "w");
    HloInstruction* tok = b.Param(1, BF16({}), "tok");
    HloInstruction* ag = b.AllGather({w, tok}, Shape::MakeTuple({BF16({16, 8, 16}), BF16({})}), 0);
    HloInstruction* x = b.Param(2, BF16({16, 8}), "x");
    b.Root(b.Dot(ag, x, BF16({16, 8, 8}), 2, 0));
    NeuronLoopedEinsumReplacer pass{PassOptions{}};
    ASSERT_FALSE(*pass.Run(b.module.get()));
    EXPECT_THAT(pass.candidates()[0].reason, HasSubstr("dot operand 0 %ag is not an array"));
  }
  {  // an all-gather without operands, with and without the aggressive gate
    for (bool aggressive : {false, true}) {
      Builder b;
      HloInstruction* ag = b.AllGather({}, BF16({16, 8}), 0);
      HloInstruction* x = b.Param(0, BF16({16, 8}), "x");
      b.Root(b.Dot(x, ag, BF16({16, 16}), 1, 1));
      PassOptions options;
      options.collective_permute_aggressive = aggressive;
      NeuronLoopedEinsumReplacer pass(options);
      ASSERT_FALSE(*pass.Run(b.module.get()));
      EXPECT_THAT(pass.candidates()[0].reason,
                  HasSubstr(aggressive ? "has no operands" : "WeightInRHS"));
    }
  }
  {  // a dot with one operand, contracting dimensions out of range, no dimensions={}
    Builder b;
    HloInstruction* w = b.Param(0, BF16({4, 8, 16}), "w");
    HloInstruction* ag = b.AllGather({w}, BF16({16, 8, 16}), 0);
    ag->set_dimensions({});
    HloInstruction* dot = b.Op(HloOpcode::kDot, BF16({16}), {ag}, "dot");
    dot->mutable_dot_dimension_numbers()->lhs_contracting_dimensions = {7};
    dot->mutable_dot_dimension_numbers()->rhs_contracting_dimensions = {0};
    b.Root(dot);
    NeuronLoopedEinsumReplacer pass{PassOptions{}};
    ASSERT_FALSE(*pass.Run(b.module.get()));
    EXPECT_THAT(pass.candidates()[0].reason, HasSubstr("the dot has 1 operands, not 2"));
  }
  {  // contracting dimension out of range
    Builder b;
    HloInstruction* w = b.Param(0, BF16({4, 8, 16}), "w");
    HloInstruction* ag = b.AllGather({w}, BF16({16, 8, 16}), 0);
    HloInstruction* x = b.Param(1, BF16({16, 8}), "x");
    b.Root(b.Dot(ag, x, BF16({16, 8, 8}), 5, 0));
    NeuronLoopedEinsumReplacer pass{PassOptions{}};
    ASSERT_FALSE(*pass.Run(b.module.get()));
    EXPECT_THAT(pass.candidates()[0].reason, HasSubstr("out of range"));
  }
  {  // a detached dot (no computation, no module): analysis still answers
    Builder b;
    HloInstruction* w = b.Param(0, BF16({4, 8, 16}), "w");
    HloInstruction* ag = b.AllGather({w}, BF16({16, 8, 16}), 0, Groups({}));
    HloInstruction* x = b.Param(1, BF16({16, 8}), "x");
    std::unique_ptr<HloInstruction> dot =
        HloInstruction::Create(HloOpcode::kDot, BF16({16, 8, 8}), {ag, x});
    dot->mutable_dot_dimension_numbers()->lhs_contracting_dimensions = {2};
    dot->mutable_dot_dimension_numbers()->rhs_contracting_dimensions = {0};
    LoopedEinsumPlan plan = AnalyzeLoopedEinsumDot(dot.get(), LoopedEinsumSettings{});
    EXPECT_TRUE(plan.candidate);
    EXPECT_FALSE(plan.fold);
    EXPECT_THAT(plan.reason, HasSubstr("not in the dot's computation"));
    dot->DetachFromOperands();
  }
  EXPECT_FALSE(AnalyzeLoopedEinsumDot(nullptr, LoopedEinsumSettings{}).candidate);
}

// --- Token-threaded end to end (#63 then #64) ----------------------------------

TEST_F(ReplacerTest, TokenThreadedFlowLeavesNoAllGatherThatFedAFusedDot) {
  EnvSandbox::Set(kCollectiveMatmulNxdEnv, "1");
  Builder b;
  HloInstruction* w = b.Param(0, BF16({4, 8, 16}), "w");
  HloInstruction* tok = b.Param(1, BF16({}), "tok");
  HloInstruction* x = b.Param(2, BF16({16, 32}), "x");
  HloInstruction* ag = b.AllGather({w, tok}, Shape::MakeTuple({BF16({16, 8, 16}), BF16({})}), 0);
  HloInstruction* data = b.Gte(ag, 0);
  HloInstruction* token = b.Gte(ag, 1);
  HloInstruction* rs = b.Reshape(data, BF16({128, 16}));
  HloInstruction* dot = b.Dot(rs, x, BF16({128, 32}), 1, 0);
  HloInstruction* root =
      b.Op(HloOpcode::kTuple, Shape::MakeTuple({dot->shape(), token->shape()}), {dot, token});
  b.Root(root);
  ASSERT_TRUE(VerifyHloModule(*b.module).ok()) << VerifyHloModule(*b.module);

  NeuronLoopedEinsumReplacer replacer{PassOptions{}};
  ASSERT_TRUE(*replacer.Run(b.module.get()));
  EXPECT_EQ(replacer.candidates()[0].matcher, "LHS-NxD");
  EXPECT_TRUE(replacer.candidates()[0].exact);
  EXPECT_EQ(b.Count(HloOpcode::kAllGather), 1);  // the token still reads it
  EXPECT_TRUE(VerifyHloModule(*b.module).ok()) << VerifyHloModule(*b.module);

  NeuronLoopedEinsumTokenReplacer token_replacer{PassOptions{}};
  ASSERT_TRUE(*token_replacer.Run(b.module.get()));
  EXPECT_EQ(root->operand(1), tok);
  EXPECT_EQ(b.Count(HloOpcode::kAllGather), 0);
  EXPECT_EQ(b.Count(HloOpcode::kGetTupleElement), 0);
  EXPECT_EQ(root->operand(0)->opcode(), HloOpcode::kCustomCall);
  EXPECT_TRUE(VerifyHloModule(*b.module).ok()) << VerifyHloModule(*b.module);

  EXPECT_FALSE(*replacer.Run(b.module.get()));
  EXPECT_FALSE(*token_replacer.Run(b.module.get()));
}

// --- The named pipeline -----------------------------------------------------------

std::unique_ptr<HloPassPipeline> BuildNamedPipeline(const PassOptions& options) {
  PassRegistry registry;
  RegisterBuiltinPasses(registry);
  EXPECT_TRUE(registry.status().ok()) << registry.status();
  absl::StatusOr<std::unique_ptr<HloPassPipeline>> pipeline =
      registry.BuildPipeline({std::string(kNeuronCollectivePipelineName)}, options);
  EXPECT_TRUE(pipeline.ok()) << pipeline.status();
  return pipeline.ok() ? *std::move(pipeline) : nullptr;
}

TEST_F(ReplacerTest, PipelineRunsTheFivePassesInRegistrationOrder) {
  PassRegistry registry;
  RegisterBuiltinPasses(registry);
  EXPECT_TRUE(registry.HasPass("neuron_looped_einsum_replacer"));
  EXPECT_TRUE(registry.HasPass("neuron_looped_einsum_token_replacer"));
  EXPECT_TRUE(registry.HasPipeline("neuron-collective-pipeline"));
  std::unique_ptr<HloPassPipeline> pipeline = BuildNamedPipeline(PassOptions{});
  ASSERT_NE(pipeline, nullptr);
  std::vector<std::string> names;
  for (int64_t i = 0; i < pipeline->pass_count(); ++i) {
    names.push_back(std::string(pipeline->pass(i)->name()));
  }
  EXPECT_THAT(names, ElementsAre("collective-stream-id-checker", "neuron_looped_einsum_replacer",
                                 "neuron_looped_einsum_token_replacer",
                                 "aws_neuron_collective_stream_id_injector",
                                 "neuron_unique_channel_id_enforcer"));
}

// The injector is skipped when the checker found a stream_id, unless forced.
TEST_F(ReplacerTest, PipelineSkipsTheInjectorWhenStreamIdsArePresent) {
  for (bool present : {false, true}) {
    for (bool force : {false, true}) {
      LhsCase t;
      t.ag->set_channel_id(1);
      t.b.module->set_num_partitions(1);
      HloInstruction* w2 = t.b.Param(2, BF16({4, 8}), "w2");
      HloInstruction* ag2 = t.b.AllGather({w2}, BF16({16, 8}), 0, Groups({{0, 1, 2, 3}}), "ag2");
      ag2->set_channel_id(2);
      if (present) ag2->mutable_frontend_attributes()->Set("stream_id", "1");
      t.b.Root(t.b.Op(HloOpcode::kTuple, Shape::MakeTuple({t.dot->shape(), ag2->shape()}),
                      {t.dot, ag2}));
      PassOptions options;
      options.force_stream_id_injection = force;
      std::unique_ptr<HloPassPipeline> pipeline = BuildNamedPipeline(options);
      ASSERT_NE(pipeline, nullptr);
      absl::StatusOr<bool> changed = pipeline->Run(t.b.module.get());
      ASSERT_TRUE(changed.ok()) << changed.status();
      const std::vector<nlohmann::json>& entries = pipeline->report_entries();
      ASSERT_EQ(entries.size(), 5u);
      EXPECT_EQ(entries[1]["name"], "neuron_looped_einsum_replacer");
      EXPECT_EQ(entries[1]["fused"], 1);
      const nlohmann::json& injector = entries[3];
      EXPECT_EQ(injector["name"], "aws_neuron_collective_stream_id_injector");
      const bool skipped = injector.contains("skipped") && injector["skipped"].is_string();
      EXPECT_EQ(skipped, present && !force) << "present=" << present << " force=" << force;
      const std::string* stream = ag2->frontend_attributes().Find("stream_id");
      ASSERT_NE(stream, nullptr);
      if (present && !force) {
        EXPECT_EQ(*stream, "1");  // left as the framework set it
      }
    }
  }
}

}  // namespace
}  // namespace hilo

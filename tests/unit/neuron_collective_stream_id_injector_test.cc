// NeuronCollectiveStreamIdInjector (seed 001, #81): exemplar discovery,
// the {"0","1"} stream space, and every quirk the seed marks CERTAIN.
#include "hilo/passes/neuron_collective_stream_id_injector.h"

#include <algorithm>
#include <memory>
#include <regex>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "hilo/ir/hlo_computation.h"
#include "hilo/ir/hlo_module.h"
#include "hilo/analysis/hlo_verifier.h"
#include "hilo/pass/pass_options.h"
#include "hilo/text/parser.h"
#include "hilo/text/printer.h"

namespace hilo {
namespace {

using ::testing::HasSubstr;

const ReplicaGroups kTp = ReplicaGroups::Explicit({{0, 1, 2, 3}, {4, 5, 6, 7}});
const ReplicaGroups kFsdp = ReplicaGroups::Explicit({{0, 4}, {1, 5}, {2, 6}, {3, 7}});
const ReplicaGroups kOther = ReplicaGroups::Explicit({{0, 1, 2, 3, 4, 5, 6, 7}});

class Builder {
 public:
  explicit Builder(HloModule* module, std::string name, bool entry = false) {
    comp_ = module->AddComputation(std::make_unique<HloComputation>(std::move(name)), entry);
    param_ = comp_->AddInstruction(
        HloInstruction::CreateParameter(0, Shape::MakeArray(PrimitiveType::F32, {8})));
  }
  HloComputation* comp() const { return comp_; }
  HloInstruction* Collective(HloOpcode op, std::string name, std::optional<ReplicaGroups> groups,
                             std::string collective_type = "",
                             PrimitiveType type = PrimitiveType::F32) {
    auto inst = HloInstruction::Create(op, Shape::MakeArray(type, {8}), {param_}, std::move(name));
    inst->set_replica_groups(std::move(groups));
    if (!collective_type.empty()) {
      inst->mutable_frontend_attributes()->Set("collective_type", collective_type);
    }
    return comp_->AddInstruction(std::move(inst));
  }

 private:
  HloComputation* comp_;
  HloInstruction* param_;
};

std::string StreamOf(const HloInstruction* inst) {
  const std::string* v = inst->frontend_attributes().Find("stream_id");
  return v == nullptr ? "<none>" : *v;
}

absl::StatusOr<bool> RunInjector(HloModule* module, NeuronCollectiveStreamIdInjector* pass) {
  return pass->Run(module);
}

TEST(InjectorTest, Name) {
  NeuronCollectiveStreamIdInjector pass{PassOptions{}};
  EXPECT_EQ(pass.name(), "aws_neuron_collective_stream_id_injector");
}

TEST(InjectorTest, TwoStreamsByReplicaGroups) {
  HloModule module("m");
  Builder b(&module, "entry", true);
  auto* tp = b.Collective(HloOpcode::kReduceScatter, "tp", kTp, "tp_reduce_scatter");
  auto* fsdp = b.Collective(HloOpcode::kAllGather, "fsdp", kFsdp, "fsdp_all_gather");
  // The collective's own collective_type is irrelevant in scan 3: an
  // untagged all-reduce with FSDP groups goes to stream 1, a collective
  // tagged fsdp with TP groups to stream 0.
  auto* untagged_fsdp_groups = b.Collective(HloOpcode::kAllReduce, "ar1", kFsdp);
  auto* fsdp_tag_tp_groups = b.Collective(HloOpcode::kAllGather, "ag2", kTp, "fsdp_all_gather");
  auto* other = b.Collective(HloOpcode::kAllToAll, "a2a", kOther);
  NeuronCollectiveStreamIdInjector pass{PassOptions{}};
  auto changed = RunInjector(&module, &pass);
  ASSERT_TRUE(changed.ok());
  EXPECT_TRUE(*changed);
  EXPECT_EQ(StreamOf(tp), "0");
  EXPECT_EQ(StreamOf(fsdp), "1");
  EXPECT_EQ(StreamOf(untagged_fsdp_groups), "1");
  EXPECT_EQ(StreamOf(fsdp_tag_tp_groups), "0");
  EXPECT_EQ(StreamOf(other), "0") << "matching neither exemplar is stream 0";
}

TEST(InjectorTest, StreamSpaceIsZeroOrOne) {
  HloModule module("m");
  Builder b(&module, "entry", true);
  b.Collective(HloOpcode::kAllGather, "tp", kTp, "tp_all_gather");
  b.Collective(HloOpcode::kReduceScatter, "fsdp", kFsdp, "fsdp_reduce_scatter");
  for (int i = 0; i < 20; ++i) {
    b.Collective(HloOpcode::kAllReduce, "x" + std::to_string(i),
                 ReplicaGroups::Explicit({{i % 8}, {(i + 1) % 8}}));
  }
  NeuronCollectiveStreamIdInjector pass{PassOptions{}};
  ASSERT_TRUE(pass.Run(&module).ok());
  for (const HloInstruction* inst : b.comp()->instructions()) {
    if (inst->opcode() == HloOpcode::kParameter) continue;
    EXPECT_THAT(StreamOf(inst), ::testing::AnyOf("0", "1")) << inst->name();
  }
}

TEST(InjectorTest, NoExemplarReturnsFalseButStillStamps) {
  HloModule module("m");
  Builder b(&module, "entry", true);
  auto* ar = b.Collective(HloOpcode::kAllReduce, "ar", kTp);
  auto* ag = b.Collective(HloOpcode::kAllGather, "ag", kFsdp, "something_else");
  NeuronCollectiveStreamIdInjector pass{PassOptions{}};
  auto changed = pass.Run(&module);
  ASSERT_TRUE(changed.ok());
  EXPECT_FALSE(*changed) << "Run returns true only when an exemplar was found";
  EXPECT_EQ(StreamOf(ar), "0");
  EXPECT_EQ(StreamOf(ag), "0");
  EXPECT_TRUE(pass.ReportDetails()["tp_exemplar"].is_null());
  EXPECT_TRUE(pass.ReportDetails()["fsdp_exemplar"].is_null());
  EXPECT_EQ(pass.ReportDetails()["stamped"]["0"], nlohmann::json({"ar", "ag"}));
  EXPECT_EQ(pass.ReportDetails()["stamped"]["1"], nlohmann::json::array());
  EXPECT_EQ(pass.ReportDetails()["overwritten"], nlohmann::json::array());
}

TEST(InjectorTest, ExemplarFoundReturnsTrueEvenWhenNothingChanges) {
  HloModule module("m");
  Builder b(&module, "entry", true);
  b.Collective(HloOpcode::kAllGather, "tp", kTp, "tp_all_gather");
  NeuronCollectiveStreamIdInjector pass{PassOptions{}};
  ASSERT_TRUE(*pass.Run(&module));
  auto again = pass.Run(&module);
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(*again);
}

TEST(InjectorTest, AllFourCollectiveTypeValues) {
  for (const char* tp_type : {"tp_reduce_scatter", "tp_all_gather"}) {
    for (const char* fsdp_type : {"fsdp_reduce_scatter", "fsdp_all_gather"}) {
      HloModule module("m");
      Builder b(&module, "entry", true);
      b.Collective(HloOpcode::kAllReduce, "tp", kTp, tp_type);
      b.Collective(HloOpcode::kAllReduce, "fsdp", kFsdp, fsdp_type);
      auto* probe = b.Collective(HloOpcode::kAllReduce, "probe", kFsdp);
      NeuronCollectiveStreamIdInjector pass{PassOptions{}};
      ASSERT_TRUE(*pass.Run(&module));
      ASSERT_TRUE(pass.tp_exemplar().has_value());
      ASSERT_TRUE(pass.fsdp_exemplar().has_value());
      EXPECT_EQ(pass.tp_exemplar()->collective_type, tp_type);
      EXPECT_EQ(pass.fsdp_exemplar()->collective_type, fsdp_type);
      EXPECT_EQ(StreamOf(probe), "1");
    }
  }
  // Near misses are not exemplars.
  for (const char* type : {"tp_all_reduce", "TP_ALL_GATHER", "fsdp_all_to_all", "tp_all_gather ",
                           "dp_all_gather"}) {
    HloModule module("m");
    Builder b(&module, "entry", true);
    b.Collective(HloOpcode::kAllGather, "c", kTp, type);
    NeuronCollectiveStreamIdInjector pass{PassOptions{}};
    EXPECT_FALSE(*pass.Run(&module)) << type;
  }
}

TEST(InjectorTest, IntegerTypedSkippedInDiscoveryButStamped) {
  HloModule module("m");
  Builder b(&module, "entry", true);
  // An s32 TP-tagged collective comes first; it must not become the exemplar.
  auto* int_tp = b.Collective(HloOpcode::kAllGather, "int_tp", kOther, "tp_all_gather",
                              PrimitiveType::S32);
  auto* fsdp = b.Collective(HloOpcode::kAllGather, "fsdp", kOther, "fsdp_all_gather");
  NeuronCollectiveStreamIdInjector pass{PassOptions{}};
  ASSERT_TRUE(*pass.Run(&module));
  EXPECT_FALSE(pass.tp_exemplar().has_value());
  ASSERT_TRUE(pass.fsdp_exemplar().has_value());
  EXPECT_EQ(pass.fsdp_exemplar()->instruction, "fsdp");
  // group0 is empty, so kOther matches group1: both get "1", the integer one
  // included (scan 3 stamps regardless of element type).
  EXPECT_EQ(StreamOf(int_tp), "1");
  EXPECT_EQ(StreamOf(fsdp), "1");
}

TEST(InjectorTest, IntegerOnlyModuleHasNoExemplar) {
  HloModule module("m");
  Builder b(&module, "entry", true);
  auto* c = b.Collective(HloOpcode::kAllReduce, "c", kTp, "tp_reduce_scatter", PrimitiveType::U8);
  NeuronCollectiveStreamIdInjector pass{PassOptions{}};
  EXPECT_FALSE(*pass.Run(&module));
  EXPECT_EQ(StreamOf(c), "0");
}

TEST(InjectorTest, MixedTupleShapeIsNotAllIntegers) {
  HloModule module("m");
  Builder b(&module, "entry", true);
  auto* c = b.Collective(HloOpcode::kAllReduce, "c", kFsdp, "fsdp_all_gather");
  *c->mutable_shape() = Shape::MakeTuple({Shape::MakeArray(PrimitiveType::S32, {2}),
                                          Shape::MakeArray(PrimitiveType::BF16, {2})});
  NeuronCollectiveStreamIdInjector pass{PassOptions{}};
  EXPECT_TRUE(*pass.Run(&module));
  EXPECT_TRUE(pass.fsdp_exemplar().has_value());
}

TEST(InjectorTest, LaterComputationOverwritesExemplar) {
  HloModule module("m");
  Builder first(&module, "first");
  auto* a = first.Collective(HloOpcode::kAllGather, "a", kTp, "tp_all_gather");
  Builder second(&module, "second", true);
  auto* fsdp = second.Collective(HloOpcode::kReduceScatter, "fsdp", kTp, "fsdp_reduce_scatter");
  auto* b = second.Collective(HloOpcode::kAllGather, "b", kOther, "tp_all_gather");
  NeuronCollectiveStreamIdInjector pass{PassOptions{}};
  ASSERT_TRUE(*pass.Run(&module));
  ASSERT_TRUE(pass.tp_exemplar().has_value());
  EXPECT_EQ(pass.tp_exemplar()->computation, "second");
  EXPECT_EQ(pass.tp_exemplar()->instruction, "b");
  // group0 = kOther (from "second"), group1 = kTp: "a" (kTp) is now FSDP.
  EXPECT_EQ(StreamOf(a), "1");
  EXPECT_EQ(StreamOf(fsdp), "1");
  EXPECT_EQ(StreamOf(b), "0");
}

TEST(InjectorTest, FirstInPostOrderWinsWithinAComputation) {
  HloModule module("m");
  Builder b(&module, "entry", true);
  // Written order: used, unused, tuple(used). Post order starts from the
  // instructions nobody uses, in written order: unused first.
  auto* used = b.Collective(HloOpcode::kAllGather, "used", kTp, "tp_all_gather");
  auto* unused = b.Collective(HloOpcode::kAllGather, "unused", kOther, "tp_all_gather");
  auto tuple = HloInstruction::Create(HloOpcode::kTuple, Shape::MakeTuple({used->shape()}), {used});
  b.comp()->set_root_instruction(b.comp()->AddInstruction(std::move(tuple)));
  {
    auto post = b.comp()->MakeInstructionPostOrder();
    auto pos = [&](const HloInstruction* i) { return std::find(post.begin(), post.end(), i) - post.begin(); };
    ASSERT_LT(pos(unused), pos(used)) << "test premise: post order differs from written order";
  }
  NeuronCollectiveStreamIdInjector pass{PassOptions{}};
  ASSERT_TRUE(*pass.Run(&module));
  EXPECT_EQ(pass.tp_exemplar()->instruction, "unused");
  EXPECT_EQ(StreamOf(unused), "0");
  // group1 is empty, kTp is neither: "0".
  EXPECT_EQ(StreamOf(used), "0");
}

TEST(InjectorTest, PostOrderFirstWhenTheUserIsWrittenFirst) {
  HloModule module("m");
  Builder b(&module, "entry", true);
  auto* user = b.Collective(HloOpcode::kAllGather, "user", kOther, "fsdp_all_gather");
  auto* operand = b.Collective(HloOpcode::kAllGather, "operand", kFsdp, "fsdp_all_gather");
  user->ReplaceOperandWith(0, operand);
  b.comp()->set_root_instruction(user);
  NeuronCollectiveStreamIdInjector pass{PassOptions{}};
  ASSERT_TRUE(*pass.Run(&module));
  EXPECT_EQ(pass.fsdp_exemplar()->instruction, "operand");
  EXPECT_EQ(StreamOf(operand), "1");
  EXPECT_EQ(StreamOf(user), "0");
}

TEST(InjectorTest, IotaAndExplicitGroupsAreEqual) {
  HloModule module("m");
  Builder b(&module, "entry", true);
  b.Collective(HloOpcode::kAllGather, "tp", ReplicaGroups::Iota({2, 4, {8}, {}}), "tp_all_gather");
  b.Collective(HloOpcode::kAllGather, "fsdp", ReplicaGroups::Iota({4, 2, {2, 4}, {1, 0}}),
               "fsdp_all_gather");
  auto* tp_explicit = b.Collective(HloOpcode::kAllReduce, "tp_explicit", kTp);
  auto* fsdp_explicit = b.Collective(HloOpcode::kAllReduce, "fsdp_explicit", kFsdp);
  auto* reordered =
      b.Collective(HloOpcode::kAllReduce, "reordered", ReplicaGroups::Explicit({{4, 5, 6, 7}, {0, 1, 2, 3}}));
  NeuronCollectiveStreamIdInjector pass{PassOptions{}};
  ASSERT_TRUE(*pass.Run(&module));
  EXPECT_EQ(StreamOf(tp_explicit), "0");
  EXPECT_EQ(StreamOf(fsdp_explicit), "1");
  EXPECT_EQ(StreamOf(reordered), "0") << "group order matters; neither exemplar";
  EXPECT_EQ(pass.ReportDetails()["tp_exemplar"]["replica_groups"], "[2,4]<=[8]");
  EXPECT_EQ(pass.ReportDetails()["fsdp_exemplar"]["replica_groups"], "[4,2]<=[2,4]T(1,0)");
}

TEST(InjectorTest, MissingReplicaGroupsCountAsEmpty) {
  // No exemplar: both are the empty list; a collective without groups
  // equals group0 -> "0".
  {
    HloModule module("m");
    Builder b(&module, "entry", true);
    auto* c = b.Collective(HloOpcode::kAllReduce, "c", std::nullopt);
    NeuronCollectiveStreamIdInjector pass{PassOptions{}};
    ASSERT_FALSE(*pass.Run(&module));
    EXPECT_EQ(StreamOf(c), "0");
    EXPECT_TRUE(pass.Warnings().empty());
    EXPECT_THAT(pass.Explanations(),
                ::testing::ElementsAre(HasSubstr(
                    "entry/c: stream_id=\"0\" (replica groups are empty, as is the TP exemplar "
                    "(none found))")));
  }
  // A TP exemplar but no FSDP one: group1 stays empty, so collectives with
  // no groups (or `{}`) equal it and get "1" -- the original's behaviour,
  // reported as a warning.
  {
    HloModule module("m");
    Builder b(&module, "entry", true);
    b.Collective(HloOpcode::kAllGather, "tp", kTp, "tp_all_gather");
    auto* none = b.Collective(HloOpcode::kAllReduce, "none", std::nullopt);
    auto* empty = b.Collective(HloOpcode::kAllReduce, "empty", ReplicaGroups());
    NeuronCollectiveStreamIdInjector pass{PassOptions{}};
    ASSERT_TRUE(*pass.Run(&module));
    EXPECT_EQ(StreamOf(none), "1");
    EXPECT_EQ(StreamOf(empty), "1");
    ASSERT_EQ(pass.Warnings().size(), 1u);
    EXPECT_THAT(pass.Warnings()[0], HasSubstr("2 collective(s) with empty replica_groups"));
    EXPECT_THAT(pass.Explanations(),
                ::testing::Contains(HasSubstr(
                    "entry/none: stream_id=\"1\" (replica groups are empty, as is the FSDP "
                    "exemplar (none found))")));
  }
  // An exemplar without groups: group0 = {} and a groupless collective is "0".
  {
    HloModule module("m");
    Builder b(&module, "entry", true);
    b.Collective(HloOpcode::kAllGather, "tp", std::nullopt, "tp_all_gather");
    b.Collective(HloOpcode::kAllGather, "fsdp", kFsdp, "fsdp_all_gather");
    auto* none = b.Collective(HloOpcode::kAllReduce, "none", std::nullopt);
    NeuronCollectiveStreamIdInjector pass{PassOptions{}};
    ASSERT_TRUE(*pass.Run(&module));
    EXPECT_EQ(StreamOf(none), "0");
    EXPECT_EQ(pass.ReportDetails()["tp_exemplar"]["replica_groups"], "{}");
  }
}

TEST(InjectorTest, OverwritesStreamIdKeepsOtherKeysCreatesAttributes) {
  HloModule module("m");
  Builder b(&module, "entry", true);
  b.Collective(HloOpcode::kAllGather, "tp", kTp, "tp_all_gather");
  auto* had_stream = b.Collective(HloOpcode::kAllReduce, "had_stream", kTp);
  had_stream->mutable_frontend_attributes()->Set("stream_id", "7");
  had_stream->mutable_frontend_attributes()->Set("zzz", "keep");
  had_stream->mutable_frontend_attributes()->Set("aaa", "keep too");
  auto* bare = b.Collective(HloOpcode::kReduceScatter, "bare", kOther);
  ASSERT_TRUE(bare->frontend_attributes().empty());
  NeuronCollectiveStreamIdInjector pass{PassOptions{}};
  ASSERT_TRUE(*pass.Run(&module));
  EXPECT_EQ(StreamOf(had_stream), "0");
  EXPECT_EQ(*had_stream->frontend_attributes().Find("zzz"), "keep");
  EXPECT_EQ(*had_stream->frontend_attributes().Find("aaa"), "keep too");
  EXPECT_EQ(had_stream->frontend_attributes().size(), 3u);
  EXPECT_EQ(StreamOf(bare), "0");
  EXPECT_EQ(bare->frontend_attributes().size(), 1u);
  const nlohmann::json report = pass.ReportDetails();
  EXPECT_EQ(report["stamped"], nlohmann::json({{"0", {"tp", "had_stream", "bare"}},
                                               {"1", nlohmann::json::array()}}));
  EXPECT_EQ(report["overwritten"],
            nlohmann::json::array({{{"instruction", "had_stream"},
                                    {"previous_stream_id", "7"},
                                    {"stream_id", "0"}}}));
}

TEST(InjectorTest, StampsEveryTypedOpAndNothingElse) {
  HloModule module("m");
  Builder b(&module, "entry", true);
  std::vector<HloInstruction*> typed, untyped;
  for (HloOpcode op : {HloOpcode::kAllGather, HloOpcode::kAllGatherStart, HloOpcode::kAllReduce,
                       HloOpcode::kAllReduceStart, HloOpcode::kAllToAll,
                       HloOpcode::kCollectiveBroadcast, HloOpcode::kRaggedAllToAll,
                       HloOpcode::kReduceScatter}) {
    typed.push_back(b.Collective(op, std::string(HloOpcodeString(op)), kFsdp));
  }
  for (HloOpcode op : {HloOpcode::kCollectivePermute, HloOpcode::kCollectivePermuteStart,
                       HloOpcode::kSend, HloOpcode::kRecv, HloOpcode::kAllReduceDone,
                       HloOpcode::kCustomCall}) {
    // Even tagged, these are not typed collectives: neither exemplar nor stamped.
    untyped.push_back(b.Collective(op, std::string(HloOpcodeString(op)), kTp, "tp_all_gather"));
  }
  b.Collective(HloOpcode::kAllGather, "fsdp_exemplar", kFsdp, "fsdp_all_gather");
  NeuronCollectiveStreamIdInjector pass{PassOptions{}};
  ASSERT_TRUE(*pass.Run(&module));
  EXPECT_FALSE(pass.tp_exemplar().has_value());
  for (auto* inst : typed) EXPECT_EQ(StreamOf(inst), "1") << inst->name();
  for (auto* inst : untyped) EXPECT_EQ(StreamOf(inst), "<none>") << inst->name();
}

// The pass tells the pipeline it changes nothing but frontend attributes
// (so the module is not verified again for its sake): the module before
// and after, each without its frontend attributes, prints the same.
TEST(InjectorTest, ChangesNothingButFrontendAttributes) {
  HloModule module("m");
  Builder b(&module, "entry", true);
  b.Collective(HloOpcode::kAllGather, "tp", kTp, "tp_all_gather");
  b.Collective(HloOpcode::kReduceScatter, "fsdp", kFsdp, "fsdp_reduce_scatter");
  HloInstruction* last = b.Collective(HloOpcode::kAllReduce, "other", kOther);
  b.comp()->set_root_instruction(last);
  // The printed module without its `frontend_attributes={...}` (the
  // values here have no braces).
  auto without_attributes = [](const std::string& text) {
    return std::regex_replace(text, std::regex(", frontend_attributes=\\{[^}]*\\}"), "");
  };
  const std::string before = PrintHloModule(module);
  NeuronCollectiveStreamIdInjector pass{PassOptions{}};
  EXPECT_EQ(pass.change_scope(), HloPassInterface::ChangeScope::kFrontendAttributesOnly);
  ASSERT_TRUE(*pass.Run(&module));
  const std::string after = PrintHloModule(module);
  EXPECT_NE(after, before);
  EXPECT_EQ(without_attributes(after), without_attributes(before));
}

TEST(InjectorTest, SkipWhenStreamIdsPresent) {
  auto build = [](HloModule* module) {
    Builder b(module, "entry", true);
    b.Collective(HloOpcode::kAllGather, "tp", kTp, "tp_all_gather");
    auto* pre = b.Collective(HloOpcode::kAllReduce, "pre", kOther);
    pre->mutable_frontend_attributes()->Set("stream_id", "1");
    return b.comp();
  };
  {
    HloModule module("m");
    HloComputation* comp = build(&module);
    NeuronCollectiveStreamIdInjector pass(PassOptions{}, /*skip_when_stream_ids_present=*/true);
    auto changed = pass.Run(&module);
    ASSERT_TRUE(changed.ok());
    EXPECT_FALSE(*changed);
    EXPECT_TRUE(pass.skipped());
    EXPECT_THAT(pass.ReportDetails()["skipped"].get<std::string>(), HasSubstr("stream_id"));
    for (auto* inst : comp->instructions()) {
      if (inst->name() == "pre") {
        EXPECT_EQ(StreamOf(inst), "1");
      }
      if (inst->name() == "tp") {
        EXPECT_EQ(StreamOf(inst), "<none>");
      }
    }
  }
  {
    HloModule module("m");
    HloComputation* comp = build(&module);
    NeuronCollectiveStreamIdInjector pass{PassOptions{}};  // default: no skipping
    ASSERT_TRUE(*pass.Run(&module));
    EXPECT_FALSE(pass.skipped());
    EXPECT_FALSE(pass.ReportDetails().contains("skipped"));
    for (auto* inst : comp->instructions()) {
      if (inst->name() == "pre") {
        EXPECT_EQ(StreamOf(inst), "0");
      }
    }
  }
  // The flag only skips when a stream id is there.
  {
    HloModule module("m");
    Builder b(&module, "entry", true);
    auto* tp = b.Collective(HloOpcode::kAllGather, "tp", kTp, "tp_all_gather");
    NeuronCollectiveStreamIdInjector pass(PassOptions{}, true);
    ASSERT_TRUE(*pass.Run(&module));
    EXPECT_FALSE(pass.skipped());
    EXPECT_EQ(StreamOf(tp), "0");
  }
}

TEST(InjectorTest, ExplanationsNameEveryStamp) {
  HloModule module("m");
  Builder b(&module, "entry", true);
  b.Collective(HloOpcode::kAllGather, "tp", kTp, "tp_all_gather");
  b.Collective(HloOpcode::kAllGather, "fsdp", kFsdp, "fsdp_all_gather");
  b.Collective(HloOpcode::kAllGather, "neither", kOther);
  NeuronCollectiveStreamIdInjector pass{PassOptions{}};
  ASSERT_TRUE(*pass.Run(&module));
  EXPECT_THAT(pass.Explanations(),
              ::testing::ElementsAre(HasSubstr("entry/tp: stream_id=\"0\" (replica groups equal the TP"),
                                     HasSubstr("entry/fsdp: stream_id=\"1\" (replica groups equal the FSDP"),
                                     HasSubstr("entry/neither: stream_id=\"0\" (replica groups match neither")));
}

}  // namespace
}  // namespace hilo

// --- From HLO text -------------------------------------------------------------

namespace hilo {
namespace {

TEST(InjectorTextTest, PostOrderDiscoveryWrittenOrderStamping) {
  // Written order: %used then %unused. Post order starts from the
  // instructions without users, in written order, so %unused (no user) comes
  // before %used (used by the root tuple): %unused is the TP exemplar.
  auto parsed = ParseHloModule(R"(
HloModule m

ENTRY %main (p: f32[8]) -> (f32[16], f32[8]) {
  %p = f32[8]{0} parameter(0)
  %used = f32[16]{0} all-gather(f32[8]{0} %p), replica_groups={{0,1},{2,3}}, dimensions={0}, frontend_attributes={collective_type="tp_all_gather"}
  %unused = f32[32]{0} all-gather(f32[8]{0} %p), replica_groups=[1,4]<=[4], dimensions={0}, frontend_attributes={collective_type="tp_all_gather"}
  %other = f32[8]{0} negate(f32[8]{0} %p)
  ROOT %t = (f32[16]{0}, f32[8]{0}) tuple(%used, %other)
}
)");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  std::unique_ptr<HloModule> module = *std::move(parsed);
  NeuronCollectiveStreamIdInjector pass{PassOptions{}};
  ASSERT_TRUE(*pass.Run(module.get()));
  ASSERT_TRUE(pass.tp_exemplar().has_value());
  EXPECT_EQ(pass.tp_exemplar()->instruction, "unused");
  const std::string printed = PrintHloModule(*module);
  EXPECT_THAT(printed, HasSubstr("replica_groups=[1,4]<=[4], dimensions={0}, "
                                 "frontend_attributes={collective_type=\"tp_all_gather\","
                                 "stream_id=\"0\"}"));
  // %used matches neither (group1 is empty): "0" as well; the report lists
  // both stamps in written order.
  EXPECT_EQ(pass.ReportDetails()["stamped"]["0"], nlohmann::json({"used", "unused"}));
  EXPECT_TRUE(VerifyHloModule(*module).ok()) << VerifyHloModule(*module);
}

}  // namespace
}  // namespace hilo

namespace hilo {
namespace {

// Discovery looks at the computations from the last one backwards and stops
// classifying a computation once it has seen two candidates of each kind
// it still needs: each kind must still come from the last computation that
// has one, and from the first in post order there.
TEST(InjectorTest, EachKindFromTheLastComputationThatHasOne) {
  HloModule module("m");
  Builder first(&module, "first");
  first.Collective(HloOpcode::kAllGather, "tp_first", kOther, "tp_all_gather");
  first.Collective(HloOpcode::kAllGather, "fsdp_first", kOther, "fsdp_all_gather");
  Builder second(&module, "second");
  // Two TP candidates (the post order decides), then a third the early stop
  // never classifies, then an FSDP one that must not be taken from here...
  auto* used = second.Collective(HloOpcode::kAllGather, "used", kOther, "tp_all_gather");
  auto* unused = second.Collective(HloOpcode::kAllGather, "unused", kTp, "tp_reduce_scatter");
  second.Collective(HloOpcode::kAllGather, "third", kOther, "tp_all_gather");
  second.Collective(HloOpcode::kAllGather, "fsdp_second", kOther, "fsdp_all_gather");
  auto tuple = HloInstruction::Create(HloOpcode::kTuple, Shape::MakeTuple({used->shape()}), {used});
  second.comp()->set_root_instruction(second.comp()->AddInstruction(std::move(tuple)));
  // ...because the last computation has one, and no TP candidate.
  Builder third(&module, "third", true);
  third.Collective(HloOpcode::kAllGather, "int_tp", kOther, "tp_all_gather", PrimitiveType::S32);
  auto* fsdp = third.Collective(HloOpcode::kReduceScatter, "fsdp", kFsdp, "fsdp_reduce_scatter");
  NeuronCollectiveStreamIdInjector pass{PassOptions{}};
  ASSERT_TRUE(*pass.Run(&module));
  ASSERT_TRUE(pass.tp_exemplar().has_value());
  EXPECT_EQ(pass.tp_exemplar()->computation, "second");
  EXPECT_EQ(pass.tp_exemplar()->instruction, "unused");
  EXPECT_EQ(pass.tp_exemplar()->collective_type, "tp_reduce_scatter");
  ASSERT_TRUE(pass.fsdp_exemplar().has_value());
  EXPECT_EQ(pass.fsdp_exemplar()->computation, "third");
  EXPECT_EQ(pass.fsdp_exemplar()->instruction, "fsdp");
  EXPECT_EQ(StreamOf(unused), "0");
  EXPECT_EQ(StreamOf(used), "0");  // kOther: neither exemplar
  EXPECT_EQ(StreamOf(fsdp), "1");
}

}  // namespace
}  // namespace hilo

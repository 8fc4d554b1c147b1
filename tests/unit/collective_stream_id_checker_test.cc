// CollectiveStreamIdChecker: a read-only presence detector whose Run always
// returns false (seed 001, #58; self-verification item 3).
#include "hilo/passes/collective_stream_id_checker.h"

#include <memory>
#include <string>

#include "gtest/gtest.h"
#include "hilo/ir/hlo_computation.h"
#include "hilo/ir/hlo_module.h"
#include "hilo/pass/pass_options.h"

namespace hilo {
namespace {

struct Fixture {
  HloModule module{"m"};
  HloComputation* entry = nullptr;
  HloInstruction* param = nullptr;

  Fixture() {
    entry = module.AddComputation(std::make_unique<HloComputation>("entry"), true);
    param = entry->AddInstruction(
        HloInstruction::CreateParameter(0, Shape::MakeArray(PrimitiveType::F32, {8}), "p"));
  }
  HloInstruction* Add(HloOpcode op, std::string name) {
    auto inst = HloInstruction::Create(op, Shape::MakeArray(PrimitiveType::F32, {8}), {param},
                                       std::move(name));
    return entry->AddInstruction(std::move(inst));
  }
  // Everything the checker could touch, as one string.
  std::string Snapshot() const {
    std::string out;
    for (const HloComputation* c : module.computations()) {
      for (const HloInstruction* i : c->instructions()) {
        out.append(i->name().data(), i->name().size());
        for (const auto& [k, v] : i->frontend_attributes().entries()) out += "|" + k + "=" + v;
        out += i->channel_id().has_value() ? std::to_string(*i->channel_id()) : "-";
        out += ";";
      }
    }
    return out;
  }
};

TEST(CollectiveStreamIdCheckerTest, Name) {
  CollectiveStreamIdChecker checker{PassOptions{}};
  EXPECT_EQ(checker.name(), "collective-stream-id-checker");
}

TEST(CollectiveStreamIdCheckerTest, NoCollectivesMeansAbsent) {
  Fixture f;
  f.Add(HloOpcode::kNegate, "n");
  CollectiveStreamIdChecker checker{PassOptions{}};
  auto result = checker.Run(&f.module);
  ASSERT_TRUE(result.ok());
  EXPECT_FALSE(*result);
  EXPECT_FALSE(checker.stream_id_present());
  EXPECT_EQ(checker.ReportDetails(), nlohmann::json({{"stream_id_present", false}}));
}

TEST(CollectiveStreamIdCheckerTest, FindsStreamIdOnEveryOpOfItsSet) {
  for (HloOpcode op : {HloOpcode::kAllGather, HloOpcode::kAllGatherStart, HloOpcode::kAllReduce,
                       HloOpcode::kAllReduceStart, HloOpcode::kAllToAll,
                       HloOpcode::kCollectiveBroadcast, HloOpcode::kRaggedAllToAll,
                       HloOpcode::kReduceScatter}) {
    Fixture f;
    f.Add(HloOpcode::kAllReduce, "plain");
    HloInstruction* c = f.Add(op, "tagged");
    c->mutable_frontend_attributes()->Set("stream_id", "1");
    const std::string before = f.Snapshot();
    CollectiveStreamIdChecker checker{PassOptions{}};
    auto result = checker.Run(&f.module);
    ASSERT_TRUE(result.ok());
    EXPECT_FALSE(*result) << "the checker always returns false";
    EXPECT_TRUE(checker.stream_id_present()) << HloOpcodeString(op);
    EXPECT_EQ(checker.ReportDetails()["stream_id_present"], true);
    EXPECT_EQ(f.Snapshot(), before) << "the checker changed the module";
  }
}

TEST(CollectiveStreamIdCheckerTest, IgnoresOpsOutsideItsSet) {
  // collective-permute, send, recv and non-collectives are outside the
  // checker's predicate (C): a stream_id on them is not reported.
  for (HloOpcode op : {HloOpcode::kCollectivePermute, HloOpcode::kCollectivePermuteStart,
                       HloOpcode::kSend, HloOpcode::kRecv, HloOpcode::kSendDone,
                       HloOpcode::kAllReduceDone, HloOpcode::kCustomCall, HloOpcode::kAdd}) {
    Fixture f;
    HloInstruction* c = f.Add(op, "tagged");
    c->mutable_frontend_attributes()->Set("stream_id", "0");
    CollectiveStreamIdChecker checker{PassOptions{}};
    auto result = checker.Run(&f.module);
    ASSERT_TRUE(result.ok());
    EXPECT_FALSE(*result);
    EXPECT_FALSE(checker.stream_id_present()) << HloOpcodeString(op);
  }
}

TEST(CollectiveStreamIdCheckerTest, OtherKeysAreNotStreamIds) {
  Fixture f;
  HloInstruction* c = f.Add(HloOpcode::kAllGather, "ag");
  c->mutable_frontend_attributes()->Set("collective_type", "tp_all_gather");
  c->mutable_frontend_attributes()->Set("stream_ids", "0");
  c->mutable_frontend_attributes()->Set("Stream_id", "0");
  CollectiveStreamIdChecker checker{PassOptions{}};
  ASSERT_TRUE(checker.Run(&f.module).ok());
  EXPECT_FALSE(checker.stream_id_present());
}

TEST(CollectiveStreamIdCheckerTest, LooksInEveryComputation) {
  Fixture f;
  auto* other = f.module.AddComputation(std::make_unique<HloComputation>("other"));
  auto* p = other->AddInstruction(
      HloInstruction::CreateParameter(0, Shape::MakeArray(PrimitiveType::F32, {8})));
  auto ar = HloInstruction::Create(HloOpcode::kAllReduce, Shape::MakeArray(PrimitiveType::F32, {8}),
                                   {p});
  ar->mutable_frontend_attributes()->Set("stream_id", "");  // presence, not value
  other->AddInstruction(std::move(ar));
  CollectiveStreamIdChecker checker{PassOptions{}};
  ASSERT_TRUE(checker.Run(&f.module).ok());
  EXPECT_TRUE(checker.stream_id_present());
  EXPECT_TRUE(CollectiveStreamIdChecker::AnyCollectiveHasStreamId(f.module));
}

TEST(CollectiveStreamIdCheckerTest, ResultIsPerRun) {
  Fixture f;
  HloInstruction* c = f.Add(HloOpcode::kAllReduce, "ar");
  c->mutable_frontend_attributes()->Set("stream_id", "0");
  CollectiveStreamIdChecker checker{PassOptions{}};
  ASSERT_TRUE(checker.Run(&f.module).ok());
  EXPECT_TRUE(checker.stream_id_present());
  c->mutable_frontend_attributes()->Remove("stream_id");
  ASSERT_TRUE(checker.Run(&f.module).ok());
  EXPECT_FALSE(checker.stream_id_present());
}

}  // namespace
}  // namespace hilo

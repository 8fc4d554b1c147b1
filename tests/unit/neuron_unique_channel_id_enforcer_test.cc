// NeuronUniqueChannelIdEnforcer (seed 001, #82): first-seen wins, nullopt is
// a value, fresh ids from NextChannelId inserted back; the two hazards and
// --unique-channel-ids-skip-send-recv.
#include "hilo/passes/neuron_unique_channel_id_enforcer.h"

#include <memory>
#include <optional>
#include <set>
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
using ::testing::IsEmpty;
using ::testing::SizeIs;

class Builder {
 public:
  Builder(HloModule* module, std::string name, bool entry = false) {
    comp_ = module->AddComputation(std::make_unique<HloComputation>(std::move(name)), entry);
    param_ = comp_->AddInstruction(
        HloInstruction::CreateParameter(0, Shape::MakeArray(PrimitiveType::F32, {8})));
  }
  HloComputation* comp() const { return comp_; }
  HloInstruction* Op(HloOpcode op, std::string name, std::optional<int64_t> channel_id,
                     std::vector<HloInstruction*> operands = {}) {
    if (operands.empty()) operands = {param_};
    auto inst = HloInstruction::Create(op, Shape::MakeArray(PrimitiveType::F32, {8}), operands,
                                       std::move(name));
    inst->set_channel_id(channel_id);
    return comp_->AddInstruction(std::move(inst));
  }
  // send + send-done sharing `id`, recv + recv-done sharing `id`.
  std::pair<HloInstruction*, HloInstruction*> SendPair(std::string name, std::optional<int64_t> id) {
    auto* send = Op(HloOpcode::kSend, name, id);
    auto* done = Op(HloOpcode::kSendDone, name + "-done", id, {send});
    return {send, done};
  }
  std::pair<HloInstruction*, HloInstruction*> RecvPair(std::string name, std::optional<int64_t> id) {
    auto* recv = Op(HloOpcode::kRecv, name, id);
    auto* done = Op(HloOpcode::kRecvDone, name + "-done", id, {recv});
    return {recv, done};
  }

 private:
  HloComputation* comp_;
  HloInstruction* param_;
};

absl::StatusOr<bool> Enforce(HloModule* module, bool skip_send_recv = false,
                             NeuronUniqueChannelIdEnforcer** out = nullptr) {
  static std::unique_ptr<NeuronUniqueChannelIdEnforcer> last;
  PassOptions options;
  options.unique_channel_ids_skip_send_recv = skip_send_recv;
  last = std::make_unique<NeuronUniqueChannelIdEnforcer>(options);
  if (out != nullptr) *out = last.get();
  return last->Run(module);
}

TEST(EnforcerTest, Name) {
  NeuronUniqueChannelIdEnforcer pass{PassOptions{}};
  EXPECT_EQ(pass.name(), "neuron_unique_channel_id_enforcer");
}

TEST(EnforcerTest, EmptyModuleAndUniqueIdsAreUnchanged) {
  HloModule empty("m");
  EXPECT_FALSE(*Enforce(&empty));
  HloModule module("m");
  Builder b(&module, "entry", true);
  auto* a = b.Op(HloOpcode::kAllReduce, "a", 1);
  auto* g = b.Op(HloOpcode::kAllGather, "g", 2);
  auto* n = b.Op(HloOpcode::kAllToAll, "n", std::nullopt);  // the only nullopt: no collision
  NeuronUniqueChannelIdEnforcer* pass;
  auto changed = Enforce(&module, false, &pass);
  ASSERT_TRUE(changed.ok());
  EXPECT_FALSE(*changed);
  EXPECT_EQ(a->channel_id(), 1);
  EXPECT_EQ(g->channel_id(), 2);
  EXPECT_EQ(n->channel_id(), std::nullopt);
  EXPECT_THAT(pass->ReportDetails()["renumbered"], IsEmpty());
}

TEST(EnforcerTest, FirstSeenWinsLaterCollisionsRenumbered) {
  HloModule module("m");
  Builder b(&module, "entry", true);
  auto* a = b.Op(HloOpcode::kAllReduce, "a", 1);
  auto* c = b.Op(HloOpcode::kReduceScatter, "c", 1);
  auto* d = b.Op(HloOpcode::kAllGather, "d", 2);
  auto* e = b.Op(HloOpcode::kAllToAll, "e", 1);
  auto* f = b.Op(HloOpcode::kCollectivePermute, "f", 2);
  NeuronUniqueChannelIdEnforcer* pass;
  ASSERT_TRUE(*Enforce(&module, false, &pass));
  EXPECT_EQ(a->channel_id(), 1);
  EXPECT_EQ(c->channel_id(), 3) << "NextChannelId = max(2) + 1";
  EXPECT_EQ(d->channel_id(), 2);
  EXPECT_EQ(e->channel_id(), 4);
  EXPECT_EQ(f->channel_id(), 5);
  const nlohmann::json r = pass->ReportDetails()["renumbered"];
  ASSERT_THAT(r, SizeIs(3));
  EXPECT_EQ(r[0]["instruction"], "c");
  EXPECT_EQ(r[0]["old_channel_id"], 1);
  EXPECT_EQ(r[0]["new_channel_id"], 3);
  EXPECT_EQ(r[2]["instruction"], "f");
  EXPECT_EQ(r[2]["opcode"], "collective-permute");
  EXPECT_EQ(pass->ReportDetails()["next_channel_id"], 3);
}

TEST(EnforcerTest, NulloptIdsCollide) {
  HloModule module("m");
  Builder b(&module, "entry", true);
  auto* a = b.Op(HloOpcode::kAllReduce, "a", std::nullopt);
  auto* c = b.Op(HloOpcode::kAllReduce, "c", std::nullopt);
  auto* d = b.Op(HloOpcode::kAllGather, "d", std::nullopt);
  NeuronUniqueChannelIdEnforcer* pass;
  ASSERT_TRUE(*Enforce(&module, false, &pass));
  EXPECT_EQ(a->channel_id(), std::nullopt) << "the first one keeps having no id";
  // New ids are inserted back into the set: c and d never share one.
  EXPECT_EQ(c->channel_id(), 1);
  EXPECT_EQ(d->channel_id(), 2);
  const nlohmann::json r = pass->ReportDetails()["renumbered"];
  ASSERT_THAT(r, SizeIs(2));
  EXPECT_TRUE(r[0]["old_channel_id"].is_null());
  EXPECT_EQ(r[0]["new_channel_id"], 1);
  // No partitions given: no group-mode warning.
  EXPECT_THAT(pass->Warnings(), IsEmpty());
}

TEST(EnforcerTest, NewIdsStartAboveEveryChannelInstruction) {
  HloModule module("m");
  Builder b(&module, "entry", true);
  // Not IsCollective, but channel instructions: they raise NextChannelId and
  // are not themselves renumbered or entered in the set.
  auto* bcast = b.Op(HloOpcode::kCollectiveBroadcast, "bcast", 40);
  auto* ags = b.Op(HloOpcode::kAllGatherStart, "ags", 1);
  auto* a = b.Op(HloOpcode::kAllReduce, "a", 1);
  auto* c = b.Op(HloOpcode::kAllReduce, "c", 1);
  ASSERT_TRUE(*Enforce(&module));
  EXPECT_EQ(bcast->channel_id(), 40);
  EXPECT_EQ(ags->channel_id(), 1) << "all-gather-start is outside IsCollective";
  EXPECT_EQ(a->channel_id(), 1);
  EXPECT_EQ(c->channel_id(), 41);
}

TEST(EnforcerTest, RecvDoneRaisesNextChannelId) {
  HloModule module("m");
  Builder b(&module, "entry", true);
  auto* recv = b.Op(HloOpcode::kRecv, "recv", 90);
  b.Op(HloOpcode::kRecvDone, "recv-done", 99, {recv});
  auto* a = b.Op(HloOpcode::kAllReduce, "a", 1);
  auto* c = b.Op(HloOpcode::kAllReduce, "c", 1);
  ASSERT_TRUE(*Enforce(&module));
  EXPECT_EQ(a->channel_id(), 1);
  EXPECT_EQ(c->channel_id(), 100);
}

TEST(EnforcerTest, ModuleOrderThenWrittenOrderNotPostOrder) {
  HloModule module("m");
  Builder first(&module, "first");
  auto* x = first.Op(HloOpcode::kAllReduce, "x", 5);
  Builder second(&module, "second", true);
  // Written: user before operand. Post order would visit the operand first.
  auto* user = second.Op(HloOpcode::kAllReduce, "user", 6);
  auto* operand = second.Op(HloOpcode::kAllReduce, "operand", 6);
  user->ReplaceOperandWith(0, operand);
  auto* y = second.Op(HloOpcode::kAllGather, "y", 5);
  ASSERT_TRUE(*Enforce(&module));
  EXPECT_EQ(x->channel_id(), 5) << "the earlier computation wins";
  EXPECT_EQ(y->channel_id(), 8);
  EXPECT_EQ(user->channel_id(), 6) << "written order, not post order";
  EXPECT_EQ(operand->channel_id(), 7);
}

TEST(EnforcerTest, Deterministic) {
  auto build_and_run = []() {
    HloModule module("m");
    Builder b(&module, "entry", true);
    std::vector<HloInstruction*> ops;
    for (int i = 0; i < 50; ++i) {
      ops.push_back(b.Op(i % 2 ? HloOpcode::kAllReduce : HloOpcode::kAllGather,
                         "op" + std::to_string(i),
                         i % 3 == 0 ? std::nullopt : std::optional<int64_t>(i % 7)));
    }
    EXPECT_TRUE(*Enforce(&module));
    std::vector<std::optional<int64_t>> ids;
    for (auto* op : ops) ids.push_back(op->channel_id());
    return ids;
  };
  auto first = build_and_run();
  EXPECT_EQ(first, build_and_run());
  // And unique (the first nullopt may stay nullopt).
  std::set<std::optional<int64_t>> unique(first.begin(), first.end());
  EXPECT_EQ(unique.size(), first.size());
}

TEST(EnforcerTest, SendRecvPairIsSplitAndWarned) {
  HloModule module("m");
  Builder b(&module, "entry", true);
  auto [send, send_done] = b.SendPair("send", 1);
  auto [recv, recv_done] = b.RecvPair("recv", 1);
  NeuronUniqueChannelIdEnforcer* pass;
  ASSERT_TRUE(*Enforce(&module, false, &pass));
  EXPECT_EQ(send->channel_id(), 1);
  EXPECT_EQ(recv->channel_id(), 2) << "IsCollective includes recv: it collides with the send";
  EXPECT_EQ(recv_done->channel_id(), 1) << "done ops are not IsCollective: left behind";
  EXPECT_EQ(send_done->channel_id(), 1);
  ASSERT_THAT(pass->Warnings(), SizeIs(1));
  EXPECT_THAT(pass->Warnings()[0], HasSubstr("recv recv in entry renumbered from channel_id=1 to 2"));
  EXPECT_THAT(pass->Warnings()[0], HasSubstr("recv-done recv-done (channel_id=1)"));
  EXPECT_THAT(pass->Warnings()[0], HasSubstr("--unique-channel-ids-skip-send-recv"));
  EXPECT_EQ(pass->ReportDetails()["warnings"], nlohmann::json(pass->Warnings()));
}

TEST(EnforcerTest, SkipSendRecvLeavesThemAlone) {
  HloModule module("m");
  Builder b(&module, "entry", true);
  auto [send, send_done] = b.SendPair("send", 1);
  auto [recv, recv_done] = b.RecvPair("recv", 1);
  auto [send2, send2_done] = b.SendPair("send2", std::nullopt);
  auto [recv2, recv2_done] = b.RecvPair("recv2", std::nullopt);
  auto* a = b.Op(HloOpcode::kAllReduce, "a", std::nullopt);
  NeuronUniqueChannelIdEnforcer* pass;
  auto changed = Enforce(&module, true, &pass);
  ASSERT_TRUE(changed.ok());
  EXPECT_FALSE(*changed);
  EXPECT_EQ(send->channel_id(), 1);
  EXPECT_EQ(recv->channel_id(), 1);
  EXPECT_EQ(send2->channel_id(), std::nullopt);
  EXPECT_EQ(recv2->channel_id(), std::nullopt);
  EXPECT_EQ(a->channel_id(), std::nullopt) << "send/recv do not enter the set";
  EXPECT_THAT(pass->Warnings(), IsEmpty());
  EXPECT_EQ(pass->ReportDetails()["skip_send_recv"], true);
}

TEST(EnforcerTest, SkipSendRecvReservesTheirIds) {
  // Without the flag the first seen (the all-reduce) keeps id 1 and the send
  // is renumbered; with it the send keeps 1 and the all-reduce moves.
  for (bool skip : {false, true}) {
    HloModule module("m");
    Builder b(&module, "entry", true);
    auto* a = b.Op(HloOpcode::kAllReduce, "a", 1);
    auto [send, send_done] = b.SendPair("send", 1);
    ASSERT_TRUE(*Enforce(&module, skip));
    if (skip) {
      EXPECT_EQ(send->channel_id(), 1);
      EXPECT_EQ(a->channel_id(), 2);
    } else {
      EXPECT_EQ(a->channel_id(), 1);
      EXPECT_EQ(send->channel_id(), 2);
    }
  }
}

TEST(EnforcerTest, GroupModeWarningOnlyWithSeveralPartitions) {
  for (std::optional<int64_t> partitions : {std::optional<int64_t>(), std::optional<int64_t>(1),
                                            std::optional<int64_t>(4)}) {
    HloModule module("m");
    module.set_num_partitions(partitions);
    Builder b(&module, "entry", true);
    b.Op(HloOpcode::kAllReduce, "ar0", std::nullopt);
    b.Op(HloOpcode::kAllReduce, "ar1", std::nullopt);
    auto* global = b.Op(HloOpcode::kAllGather, "ag_global", std::nullopt);
    global->set_use_global_device_ids(true);
    b.Op(HloOpcode::kAllToAll, "a2a", std::nullopt);
    b.Op(HloOpcode::kAllReduce, "with_id", 3);
    b.Op(HloOpcode::kAllReduce, "with_id_dup", 3);  // had an id: no mode change
    NeuronUniqueChannelIdEnforcer* pass;
    ASSERT_TRUE(*Enforce(&module, false, &pass));
    if (partitions.value_or(1) == 1) {
      EXPECT_THAT(pass->Warnings(), IsEmpty());
      continue;
    }
    ASSERT_THAT(pass->Warnings(), SizeIs(3));
    EXPECT_THAT(pass->Warnings()[0],
                HasSubstr("all-reduce ar1 in entry had no channel_id and now has channel_id=4: "
                          "with num_partitions=4 its group mode changes from cross_replica to "
                          "cross_replica_and_partition"));
    EXPECT_THAT(pass->Warnings()[1], HasSubstr("ag_global"));
    EXPECT_THAT(pass->Warnings()[1], HasSubstr("to flattened_id"));
    EXPECT_THAT(pass->Warnings()[2], HasSubstr("a2a"));
    EXPECT_THAT(pass->Warnings()[2], HasSubstr("to cross_partition"));
  }
}

// Issue 16 (4): with one partition, a channel-less collective-permute or
// all-to-all that gets a channel_id switches to cross_partition: its pairs
// or groups now name partitions, not the replicas. Warned whatever
// num_partitions says; the all-reduce/all-gather modes name the same devices
// with one partition and are not warned. One device in all: nothing changes.
TEST(EnforcerTest, GroupModeWarningWithOnePartitionAndSeveralReplicas) {
  for (std::optional<int64_t> replicas :
       {std::optional<int64_t>(), std::optional<int64_t>(1), std::optional<int64_t>(4)}) {
    for (std::optional<int64_t> partitions : {std::optional<int64_t>(), std::optional<int64_t>(1)}) {
      HloModule module("m");
      module.set_replica_count(replicas);
      module.set_num_partitions(partitions);
      Builder b(&module, "entry", true);
      b.Op(HloOpcode::kAllReduce, "ar0", std::nullopt);
      b.Op(HloOpcode::kAllReduce, "ar1", std::nullopt);
      b.Op(HloOpcode::kCollectivePermute, "cp", std::nullopt);
      b.Op(HloOpcode::kAllToAll, "a2a", std::nullopt);
      b.Op(HloOpcode::kAllToAll, "a2a_id", 7);
      b.Op(HloOpcode::kAllToAll, "a2a_id_dup", 7);  // had an id: no mode change
      NeuronUniqueChannelIdEnforcer* pass;
      ASSERT_TRUE(*Enforce(&module, false, &pass));
      if (replicas.value_or(1) == 1) {
        EXPECT_THAT(pass->Warnings(), IsEmpty());
        continue;
      }
      ASSERT_THAT(pass->Warnings(), SizeIs(2));
      EXPECT_EQ(pass->Warnings()[0],
                "collective-permute cp in entry had no channel_id and now has channel_id=9: with "
                "replica_count=4 and num_partitions=1 its group mode changes from cross_replica to "
                "cross_partition: its source_target_pairs now name partitions (there is 1) "
                "instead of the 4 replicas, so the devices that take part change");
      EXPECT_THAT(pass->Warnings()[1], HasSubstr("all-to-all a2a in entry"));
      EXPECT_THAT(pass->Warnings()[1], HasSubstr("its replica_groups now name partitions"));
      EXPECT_EQ(pass->ReportDetails()["warnings"].size(), 2u);
    }
  }
}

TEST(EnforcerTest, ExhaustedIdsAreAnErrorNotAnOverflow) {
  {
    HloModule module("m");
    Builder b(&module, "entry", true);
    b.Op(HloOpcode::kAllReduce, "a", INT64_MAX);
    b.Op(HloOpcode::kAllReduce, "c", INT64_MAX);
    auto result = Enforce(&module);
    ASSERT_FALSE(result.ok());
    EXPECT_THAT(std::string(result.status().message()),
                HasSubstr("neuron_unique_channel_id_enforcer: no fresh channel_id for instruction c"));
  }
  {
    HloModule module("m");
    Builder b(&module, "entry", true);
    b.Op(HloOpcode::kAllReduce, "a", INT64_MAX - 1);
    auto* c = b.Op(HloOpcode::kAllReduce, "c", INT64_MAX - 1);
    b.Op(HloOpcode::kAllReduce, "d", INT64_MAX - 1);
    auto result = Enforce(&module);
    ASSERT_FALSE(result.ok());
    EXPECT_EQ(c->channel_id(), INT64_MAX);
  }
}

TEST(EnforcerTest, OnlyIsCollectiveOpsAreConsidered) {
  HloModule module("m");
  Builder b(&module, "entry", true);
  std::vector<HloInstruction*> outside;
  for (HloOpcode op : {HloOpcode::kAllGatherStart, HloOpcode::kAllReduceStart,
                       HloOpcode::kCollectiveBroadcast, HloOpcode::kCollectivePermuteStart,
                       HloOpcode::kRaggedAllToAll, HloOpcode::kSendDone, HloOpcode::kRecvDone,
                       HloOpcode::kCustomCall}) {
    outside.push_back(b.Op(op, std::string(HloOpcodeString(op)), 1));
  }
  auto* ar = b.Op(HloOpcode::kAllReduce, "ar", 1);
  EXPECT_FALSE(*Enforce(&module));
  for (auto* inst : outside) EXPECT_EQ(inst->channel_id(), 1) << inst->name();
  EXPECT_EQ(ar->channel_id(), 1);
}

}  // namespace
}  // namespace hilo

// --- From HLO text, with the verifier -----------------------------------------

namespace hilo {
namespace {

constexpr char kSendRecvModule[] = R"(
HloModule send_recv

ENTRY %main (p: f32[8]) -> f32[8] {
  %p = f32[8]{0} parameter(0)
  %tok = token[] after-all()
  %send = (f32[8]{0}, u32[], token[]) send(f32[8]{0} %p, token[] %tok), channel_id=5
  %send-done = token[] send-done((f32[8]{0}, u32[], token[]) %send), channel_id=5
  %recv = (f32[8]{0}, u32[], token[]) recv(token[] %tok), channel_id=5
  %recv-done = (f32[8]{0}, token[]) recv-done((f32[8]{0}, u32[], token[]) %recv), channel_id=5
  ROOT %data = f32[8]{0} get-tuple-element((f32[8]{0}, token[]) %recv-done), index=0
}
)";

TEST(EnforcerWithVerifierTest, VerifierRejectsASplitSendRecvPair) {
  auto parsed = ParseHloModule(kSendRecvModule);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  std::unique_ptr<HloModule> module = *std::move(parsed);
  ASSERT_TRUE(VerifyHloModule(*module).ok());
  NeuronUniqueChannelIdEnforcer pass{PassOptions{}};
  auto changed = pass.Run(module.get());
  ASSERT_TRUE(changed.ok());
  EXPECT_TRUE(*changed);
  ASSERT_THAT(pass.Warnings(), SizeIs(1));
  EXPECT_THAT(pass.Warnings()[0], HasSubstr("recv recv in main renumbered from channel_id=5 to 6"));
  const absl::Status verified = VerifyHloModule(*module);
  ASSERT_FALSE(verified.ok());
  EXPECT_THAT(std::string(verified.message()), HasSubstr("%recv-done"));
  EXPECT_THAT(std::string(verified.message()), HasSubstr("channel_id 5 does not match channel_id 6"));
}

TEST(EnforcerWithVerifierTest, SkipSendRecvKeepsTheModuleValid) {
  auto parsed = ParseHloModule(kSendRecvModule);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  std::unique_ptr<HloModule> module = *std::move(parsed);
  const std::string before = PrintHloModule(*module);
  PassOptions options;
  options.unique_channel_ids_skip_send_recv = true;
  NeuronUniqueChannelIdEnforcer pass(options);
  auto changed = pass.Run(module.get());
  ASSERT_TRUE(changed.ok());
  EXPECT_FALSE(*changed);
  EXPECT_EQ(PrintHloModule(*module), before);
  EXPECT_TRUE(VerifyHloModule(*module).ok()) << VerifyHloModule(*module);
}

TEST(EnforcerWithVerifierTest, GroupModeChangeCanInvalidateShapes) {
  // replica_groups={} without a channel: all 4 replicas, so 2 -> 8. With a
  // channel_id and 2 partitions the group spans 8 devices: 8 -> 16 expected.
  auto parsed = ParseHloModule(R"(
HloModule m, replica_count=4, num_partitions=2

ENTRY %main (p: f32[2]) -> (f32[8], f32[8]) {
  %p = f32[2]{0} parameter(0)
  %ag0 = f32[8]{0} all-gather(f32[2]{0} %p), replica_groups={}, dimensions={0}
  %ag1 = f32[8]{0} all-gather(f32[2]{0} %p), replica_groups={}, dimensions={0}
  ROOT %t = (f32[8]{0}, f32[8]{0}) tuple(%ag0, %ag1)
}
)");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  std::unique_ptr<HloModule> module = *std::move(parsed);
  ASSERT_TRUE(VerifyHloModule(*module).ok()) << VerifyHloModule(*module);
  NeuronUniqueChannelIdEnforcer pass{PassOptions{}};
  ASSERT_TRUE(*pass.Run(module.get()));
  ASSERT_THAT(pass.Warnings(), SizeIs(1));
  EXPECT_THAT(pass.Warnings()[0],
              HasSubstr("all-gather ag1 in main had no channel_id and now has channel_id=1: with "
                        "num_partitions=2 its group mode changes from cross_replica to "
                        "cross_replica_and_partition"));
  const absl::Status verified = VerifyHloModule(*module);
  ASSERT_FALSE(verified.ok());
  EXPECT_THAT(std::string(verified.message()), HasSubstr("instruction %ag1:"));
}

}  // namespace
}  // namespace hilo

namespace hilo {
namespace {

// The seen-id set keeps small ids in a bitmap and the others (negative,
// far beyond the count of collectives) in a hash set: duplicates must be
// found on both sides, and a fresh id never equals either.
TEST(EnforcerTest, DuplicatesOutsideTheDenseRangeAreFound) {
  HloModule module("m");
  Builder b(&module, "entry", true);
  auto* a = b.Op(HloOpcode::kAllReduce, "a", -5);
  auto* c = b.Op(HloOpcode::kAllReduce, "c", -5);
  auto* d = b.Op(HloOpcode::kAllGather, "d", 3);
  auto* e = b.Op(HloOpcode::kAllGather, "e", 3);
  auto* f = b.Op(HloOpcode::kAllToAll, "f", std::nullopt);
  auto* g = b.Op(HloOpcode::kAllToAll, "g", std::nullopt);
  ASSERT_TRUE(*Enforce(&module));
  EXPECT_EQ(a->channel_id(), -5);
  EXPECT_EQ(c->channel_id(), 4);
  EXPECT_EQ(d->channel_id(), 3);
  EXPECT_EQ(e->channel_id(), 5);
  EXPECT_EQ(f->channel_id(), std::nullopt);
  EXPECT_EQ(g->channel_id(), 6);

  HloModule sparse("m");
  Builder s(&sparse, "entry", true);
  auto* h = s.Op(HloOpcode::kAllReduce, "h", int64_t{1} << 40);
  auto* i = s.Op(HloOpcode::kAllReduce, "i", int64_t{1} << 40);
  auto* j = s.Op(HloOpcode::kAllGather, "j", 7);
  auto* k = s.Op(HloOpcode::kAllGather, "k", 7);
  ASSERT_TRUE(*Enforce(&sparse));
  EXPECT_EQ(h->channel_id(), int64_t{1} << 40);
  EXPECT_EQ(i->channel_id(), (int64_t{1} << 40) + 1);
  EXPECT_EQ(j->channel_id(), 7);
  EXPECT_EQ(k->channel_id(), (int64_t{1} << 40) + 2);
}

}  // namespace
}  // namespace hilo

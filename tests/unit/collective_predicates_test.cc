// The collective predicates against the seed's bitmask formulas, evaluated
// literally (byte arithmetic as the disassembly does it) over every opcode of
// the specification's table (hilo's copy in hlo_opcode.h); NextChannelId;
// ReplicaGroupsMatcher.
#include "hilo/analysis/collective_predicates.h"

#include <algorithm>
#include <cstdlib>
#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "hilo/ir/hlo_computation.h"
#include "hilo/ir/hlo_module.h"
#include "hilo/pass/pass_options.h"
#include "hilo/passes/collective_stream_id_checker.h"
#include "hilo/passes/neuron_collective_stream_id_injector.h"
#include "hilo/passes/neuron_unique_channel_id_enforcer.h"

namespace hilo {
namespace {

struct OpcodeRow {
  uint8_t byte;
  std::string text;
};

// Every opcode of the specification's table, as hilo's own copy of it
// (hlo_opcode.h; hlo_opcode_test checks it against
// shared/spec/hlo-opcodes.tsv), so this test needs no shared folder.
std::vector<OpcodeRow> ReadOpcodeTable() {
  std::vector<OpcodeRow> rows;
  for (int byte = 0; byte < kSpecOpcodeCount; ++byte) {
    rows.push_back({static_cast<uint8_t>(byte),
                    std::string(HloOpcodeString(static_cast<HloOpcode>(byte)))});
  }
  return rows;
}

bool Bt64(uint64_t mask, unsigned bit) { return (mask >> (bit & 63)) & 1; }

// Predicate A, neuron::IsCollective @0x1f7e010.
bool SeedPredicateA(uint8_t op) {
  if (op == 7) return true;
  if (op <= 0x1D) {
    if (op <= 3) return false;
    return (uint64_t{0x20000410} >> op) & 1;
  }
  uint8_t r = static_cast<uint8_t>(op - 0x53);  // sub $0x53,%ecx; cmp $0x14,%cl
  if (r >= 0x14) return false;
  return (uint64_t{0x80011} >> r) & 1;
}

// Predicate B, hlo_query::NextChannelId @0x8ab1ac0. `recv_done_by_bytes`
// selects between the byte-level reading of `cmp $0x54 jbe; cmp $0x52 ja`
// (0x52 < op <= 0x54) and the seed's pseudo-code line `op == 0x53`.
bool SeedPredicateB(uint8_t op, bool recv_done_by_bytes) {
  if (op == 7) return true;
  if (op <= 0xA) {
    if (op <= 3) return false;
    return Bt64(0x650, op);
  }
  uint8_t r = static_cast<uint8_t>(op - 0x1C);  // lea -0x1c(%rax),%r12d; cmp $0x3b,%r12b
  if (r <= 0x3B && Bt64(0x810000000000001ULL, r)) return true;
  if ((op & ~2u) == 0x1D) return true;
  if (recv_done_by_bytes) {
    if (op <= 0x54 && op > 0x52) return true;
  } else {
    if (op == 0x53) return true;
  }
  if (static_cast<uint8_t>(op - 0x66) <= 1) return true;
  return false;
}

// Predicate C, the checker #58 @0x1e8c800.
bool SeedPredicateC(uint8_t op) {
  if (op == 7) return true;
  if (op <= 0xA) {
    if (op <= 3) return false;
    return Bt64(0x650, op);
  }
  uint8_t r = static_cast<uint8_t>(op - 0x1C);  // sub $0x1c,%eax; cmp $0x3b,%al
  return r <= 0x3B && Bt64(0x810000000000001ULL, r);
}

template <typename Pred>
std::set<std::string> Select(const std::vector<OpcodeRow>& rows, Pred pred) {
  std::set<std::string> out;
  for (const OpcodeRow& row : rows) {
    if (pred(row)) out.insert(row.text);
  }
  return out;
}

template <typename Pred>
std::set<int> SelectBytes(const std::vector<OpcodeRow>& rows, Pred pred) {
  std::set<int> out;
  for (const OpcodeRow& row : rows) {
    if (pred(row)) out.insert(row.byte);
  }
  return out;
}

class CollectivePredicatesTableTest : public ::testing::Test {
 protected:
  void SetUp() override {
    rows_ = ReadOpcodeTable();
    ASSERT_EQ(rows_.size(), 123u);
  }
  std::vector<OpcodeRow> rows_;
};

TEST_F(CollectivePredicatesTableTest, IsCollectiveIsSeedPredicateA) {
  auto seed = Select(rows_, [](const OpcodeRow& r) { return SeedPredicateA(r.byte); });
  auto named = Select(rows_, [](const OpcodeRow& r) {
    return IsCollective(static_cast<HloOpcode>(r.byte));
  });
  EXPECT_EQ(named, seed);
  EXPECT_EQ(named, (std::set<std::string>{"all-gather", "all-reduce", "all-to-all",
                                          "collective-permute", "recv", "reduce-scatter",
                                          "send"}));
  // The byte set the seed states.
  EXPECT_EQ(SelectBytes(rows_, [](const OpcodeRow& r) { return SeedPredicateA(r.byte); }),
            (std::set<int>{0x4, 0x7, 0xa, 0x1d, 0x53, 0x57, 0x66}));
}

TEST_F(CollectivePredicatesTableTest, IsChannelInstructionIsSeedPredicateBByteLevel) {
  auto bytes = Select(rows_, [](const OpcodeRow& r) { return SeedPredicateB(r.byte, true); });
  auto named = Select(rows_, [](const OpcodeRow& r) {
    return IsChannelInstruction(static_cast<HloOpcode>(r.byte));
  });
  EXPECT_EQ(named, bytes);
  EXPECT_EQ(named,
            (std::set<std::string>{"all-gather", "all-gather-start", "all-reduce",
                                   "all-reduce-start", "all-to-all", "collective-broadcast",
                                   "collective-permute", "collective-permute-start",
                                   "ragged-all-to-all", "recv", "recv-done", "reduce-scatter",
                                   "send", "send-done"}));
}

// The recv-done decision: the seed's pseudo-code (`op == 0x53`) and its
// disassembly (`cmp $0x54 jbe; cmp $0x52 ja`) differ by exactly recv-done;
// IsChannelInstruction follows the disassembly (and XLA's
// HloChannelInstruction, which includes recv-done).
TEST_F(CollectivePredicatesTableTest, RecvDoneDecision) {
  auto bytes = Select(rows_, [](const OpcodeRow& r) { return SeedPredicateB(r.byte, true); });
  auto pseudo = Select(rows_, [](const OpcodeRow& r) { return SeedPredicateB(r.byte, false); });
  std::set<std::string> difference;
  for (const std::string& s : bytes) {
    if (!pseudo.contains(s)) difference.insert(s);
  }
  EXPECT_EQ(difference, std::set<std::string>{"recv-done"});
  for (const std::string& s : pseudo) EXPECT_TRUE(bytes.contains(s)) << s;
  // The seed's stated byte set is the pseudo-code reading.
  EXPECT_EQ(SelectBytes(rows_, [](const OpcodeRow& r) { return SeedPredicateB(r.byte, false); }),
            (std::set<int>{0x4, 0x6, 0x7, 0x9, 0xa, 0x1c, 0x1d, 0x1f, 0x50, 0x53, 0x57, 0x66,
                           0x67}));
  EXPECT_TRUE(IsChannelInstruction(HloOpcode::kRecvDone));
}

TEST_F(CollectivePredicatesTableTest, CheckerSetIsSeedPredicateC) {
  auto seed = Select(rows_, [](const OpcodeRow& r) { return SeedPredicateC(r.byte); });
  auto named = Select(rows_, [](const OpcodeRow& r) {
    return IsStreamIdCheckedCollective(static_cast<HloOpcode>(r.byte));
  });
  EXPECT_EQ(named, seed);
  EXPECT_EQ(named, (std::set<std::string>{"all-gather", "all-gather-start", "all-reduce",
                                          "all-reduce-start", "all-to-all",
                                          "collective-broadcast", "ragged-all-to-all",
                                          "reduce-scatter"}));
  EXPECT_EQ(SelectBytes(rows_, [](const OpcodeRow& r) { return SeedPredicateC(r.byte); }),
            (std::set<int>{0x4, 0x6, 0x7, 0x9, 0xa, 0x1c, 0x50, 0x57}));
}

TEST_F(CollectivePredicatesTableTest, TypedSetIsTheReplicaGroupCarriers) {
  for (const OpcodeRow& row : rows_) {
    const HloOpcode op = static_cast<HloOpcode>(row.byte);
    EXPECT_EQ(IsTypedCollective(op), IsStreamIdCheckedCollective(op)) << row.text;
    auto inst = HloInstruction::Create(op, Shape::MakeArray(PrimitiveType::F32, {2}));
    EXPECT_EQ(IsTypedCollective(*inst), inst->IsCollectiveWithReplicaGroups()) << row.text;
  }
}

// The masks are predicate-specific: applying IsCollective's masks with the
// other predicates' rebase (or no rebase) selects a different set.
TEST_F(CollectivePredicatesTableTest, MasksAreNotInterchangeable) {
  auto a = SelectBytes(rows_, [](const OpcodeRow& r) { return SeedPredicateA(r.byte); });
  auto c = SelectBytes(rows_, [](const OpcodeRow& r) { return SeedPredicateC(r.byte); });
  EXPECT_NE(a, c);
  auto a_without_rebase = SelectBytes(rows_, [](const OpcodeRow& r) {
    uint8_t op = r.byte;
    if (op == 7) return true;
    if (op <= 0x1D) return op > 3 && ((uint64_t{0x20000410} >> op) & 1);
    return Bt64(0x80011, op);
  });
  EXPECT_NE(a, a_without_rebase);
}

// --- NextChannelId --------------------------------------------------------

HloInstruction* Add(HloComputation* c, HloOpcode op, std::optional<int64_t> channel_id,
                    std::vector<HloInstruction*> operands = {}) {
  auto inst = HloInstruction::Create(op, Shape::MakeArray(PrimitiveType::F32, {4}), operands);
  inst->set_channel_id(channel_id);
  return c->AddInstruction(std::move(inst));
}

TEST(NextChannelIdTest, EmptyModuleIsOne) {
  HloModule module("m");
  EXPECT_EQ(NextChannelId(module), 1);
  auto* entry = module.AddComputation(std::make_unique<HloComputation>("e"), true);
  entry->AddInstruction(
      HloInstruction::CreateParameter(0, Shape::MakeArray(PrimitiveType::F32, {4})));
  EXPECT_EQ(NextChannelId(module), 1);
}

TEST(NextChannelIdTest, OnePastTheLargestAcrossComputations) {
  HloModule module("m");
  auto* a = module.AddComputation(std::make_unique<HloComputation>("a"));
  auto* b = module.AddComputation(std::make_unique<HloComputation>("b"), true);
  Add(a, HloOpcode::kAllReduce, 7);
  Add(a, HloOpcode::kAllGather, std::nullopt);
  Add(b, HloOpcode::kCollectivePermuteStart, 12);
  Add(b, HloOpcode::kReduceScatter, 3);
  EXPECT_EQ(NextChannelId(module), 13);
}

TEST(NextChannelIdTest, NegativeAndZeroIdsKeepTheFloor) {
  HloModule module("m");
  auto* a = module.AddComputation(std::make_unique<HloComputation>("a"), true);
  Add(a, HloOpcode::kAllReduce, -5);
  Add(a, HloOpcode::kAllReduce, 0);
  EXPECT_EQ(NextChannelId(module), 1);
}

TEST(NextChannelIdTest, CountsOnlyChannelInstructions) {
  HloModule module("m");
  auto* a = module.AddComputation(std::make_unique<HloComputation>("a"), true);
  // Ops outside the channel set are ignored even if an id was set on them.
  Add(a, HloOpcode::kAllReduceDone, 100);
  Add(a, HloOpcode::kCustomCall, 200);
  Add(a, HloOpcode::kAllGatherDone, 300);
  EXPECT_EQ(NextChannelId(module), 1);
  Add(a, HloOpcode::kSendDone, 40);
  EXPECT_EQ(NextChannelId(module), 41);
  // recv-done is a channel instruction (the recv-done decision).
  Add(a, HloOpcode::kRecvDone, 50);
  EXPECT_EQ(NextChannelId(module), 51);
  Add(a, HloOpcode::kRaggedAllToAll, 60);
  EXPECT_EQ(NextChannelId(module), 61);
  Add(a, HloOpcode::kCollectiveBroadcast, 70);
  EXPECT_EQ(NextChannelId(module), 71);
}

TEST(NextChannelIdTest, SaturatesAtInt64Max) {
  HloModule module("m");
  auto* a = module.AddComputation(std::make_unique<HloComputation>("a"), true);
  Add(a, HloOpcode::kAllReduce, INT64_MAX);
  EXPECT_EQ(NextChannelId(module), INT64_MAX);
}

// --- The channel generation and ScanCollectives --------------------------

TEST(ChannelGenerationTest, ChangesExactlyWithChannelInstructionsAndComputations) {
  HloModule module("m");
  const uint64_t fresh = module.channel_generation();
  HloModule other("other");
  EXPECT_NE(other.channel_generation(), fresh) << "two modules share a generation";
  auto* a = module.AddComputation(std::make_unique<HloComputation>("a"), true);
  uint64_t g = module.channel_generation();
  EXPECT_NE(g, fresh) << "adding a computation";
  // Every opcode once: the generation moves exactly when a channel
  // instruction is added, the removal count exactly when one is removed.
  uint64_t removals = module.channel_removals();
  for (int byte = 0; byte < kHloOpcodeCount; ++byte) {
    const HloOpcode op = static_cast<HloOpcode>(byte);
    if (op == HloOpcode::kParameter) continue;  // removing one is not allowed
    SCOPED_TRACE(HloOpcodeString(op));
    HloInstruction* inst = Add(a, op, std::nullopt);
    EXPECT_EQ(module.channel_generation() != g, IsChannelInstruction(op)) << "added";
    EXPECT_EQ(module.channel_removals(), removals) << "added";
    g = module.channel_generation();
    ASSERT_TRUE(a->RemoveInstruction(inst).ok());
    EXPECT_EQ(module.channel_generation(), g) << "removed";
    EXPECT_EQ(module.channel_removals() != removals, IsChannelInstruction(op)) << "removed";
    removals = module.channel_removals();
  }
  // Attributes do not select or move an instruction.
  HloInstruction* ar = Add(a, HloOpcode::kAllReduce, 1);
  g = module.channel_generation();
  ar->set_channel_id(9);
  ar->mutable_frontend_attributes()->Set(kStreamIdAttribute, "1");
  EXPECT_EQ(module.channel_generation(), g);
  // A computation built outside the module moves it once, when added.
  auto detached = std::make_unique<HloComputation>("b");
  Add(detached.get(), HloOpcode::kAllGather, std::nullopt);
  EXPECT_EQ(module.channel_generation(), g);
  HloComputation* b = module.AddComputation(std::move(detached));
  EXPECT_NE(module.channel_generation(), g);
  g = module.channel_generation();
  module.RemoveComputation(b);
  EXPECT_NE(module.channel_generation(), g);
  // A bulk load notes its instructions once, at its end.
  g = module.channel_generation();
  module.BeginBulkLoad();
  auto named = HloInstruction::Create(HloOpcode::kAllToAll, Shape::MakeArray(PrimitiveType::F32, {4}), {});
  named->SetNameUnchecked("loaded");
  a->AddInstruction(std::move(named));
  module.EndBulkLoad();
  EXPECT_NE(module.channel_generation(), g);
}

// `scan` as names: channel, typed, and the typed_begin offsets.
std::string Describe(const CollectiveScan& scan) {
  std::string out = "channel:";
  for (const HloInstruction* i : scan.channel) out += " " + std::string(i->name());
  out += " typed:";
  for (const HloInstruction* i : scan.typed) out += " " + std::string(i->name());
  out += " begin:";
  for (size_t c = 0; c < scan.typed_begin.size(); ++c) {
    out += " " + std::to_string(scan.channel_begin[c]) + "/" + std::to_string(scan.typed_begin[c]);
  }
  return out;
}

TEST(ScanCollectivesTest, KeptWhileUnchangedAndSeesEveryStructuralChange) {
  HloModule module("m");
  auto* a = module.AddComputation(std::make_unique<HloComputation>("a"));
  auto* e = module.AddComputation(std::make_unique<HloComputation>("e"), true);
  HloInstruction* ar = Add(a, HloOpcode::kAllReduce, 1);
  Add(a, HloOpcode::kAdd, std::nullopt);
  HloInstruction* send = Add(e, HloOpcode::kSend, 2);
  Add(e, HloOpcode::kReduceScatter, 3);
  auto first = ScanCollectives(module);
  EXPECT_EQ(Describe(*first), Describe(SweepCollectives(module)));
  EXPECT_EQ(Describe(*first), "channel: all-reduce send reduce-scatter typed: all-reduce "
                              "reduce-scatter begin: 0/0 1/1 3/2");
  // Unchanged, or changed only in what is not a channel instruction or an
  // attribute: the same sweep.
  Add(e, HloOpcode::kMultiply, std::nullopt);
  send->set_channel_id(5);
  EXPECT_EQ(ScanCollectives(module).get(), first.get());
  // Another module in between does not confuse the two.
  HloModule other("other");
  other.AddComputation(std::make_unique<HloComputation>("o"), true);
  EXPECT_TRUE(ScanCollectives(other)->channel.empty());
  EXPECT_EQ(Describe(*ScanCollectives(module)), Describe(*first));
  // A channel instruction added, one removed, a computation added: each seen.
  Add(e, HloOpcode::kAllGather, std::nullopt);
  EXPECT_EQ(Describe(*ScanCollectives(module)),
            "channel: all-reduce send reduce-scatter all-gather typed: all-reduce reduce-scatter "
            "all-gather begin: 0/0 1/1 4/3");
  ASSERT_TRUE(a->RemoveInstruction(ar).ok());
  EXPECT_EQ(Describe(*ScanCollectives(module)),
            "channel: send reduce-scatter all-gather typed: reduce-scatter all-gather begin: "
            "0/0 0/0 3/2");
  auto* c = module.AddComputation(std::make_unique<HloComputation>("c"));
  Add(c, HloOpcode::kCollectivePermute, 4);
  EXPECT_EQ(Describe(*ScanCollectives(module)),
            "channel: send reduce-scatter all-gather collective-permute typed: reduce-scatter "
            "all-gather begin: 0/0 0/0 3/2 4/2");
  EXPECT_EQ(Describe(*ScanCollectives(module)), Describe(SweepCollectives(module)));
  // Removals only (the replacer's way): the kept scan minus the removed,
  // the same as a sweep; with a removal in each of two computations, and a
  // non-channel removal that changes nothing.
  HloInstruction* ag = e->instruction_slots()[3];
  ASSERT_EQ(ag->opcode(), HloOpcode::kAllGather);
  const auto before = ScanCollectives(module);
  HloInstruction* mul = e->instruction_slots()[2];
  ASSERT_EQ(mul->opcode(), HloOpcode::kMultiply);
  ASSERT_TRUE(e->RemoveInstruction(mul).ok());
  EXPECT_EQ(ScanCollectives(module).get(), before.get());
  ASSERT_TRUE(e->RemoveInstruction(ag).ok());
  ASSERT_TRUE(c->RemoveInstruction(c->instruction_slots()[0]).ok());
  EXPECT_EQ(Describe(*ScanCollectives(module)),
            "channel: send reduce-scatter typed: reduce-scatter begin: 0/0 0/0 2/1 2/1");
  EXPECT_EQ(Describe(*ScanCollectives(module)), Describe(SweepCollectives(module)));
  EXPECT_EQ(Describe(*before), "channel: send reduce-scatter all-gather collective-permute typed: "
                               "reduce-scatter all-gather begin: 0/0 0/0 3/2 4/2");
  // A scan given out stays as it was after a later one replaces it.
  EXPECT_EQ(first->channel.size(), 3u);
}

// The pipeline's way: the checker's sweep is kept, a collective is added
// before the injector and the enforcer run, and both see it.
TEST(ScanCollectivesTest, PassesSeeACollectiveAddedBetweenThem) {
  HloModule module("m");
  auto* e = module.AddComputation(std::make_unique<HloComputation>("e"), true);
  Add(e, HloOpcode::kAllReduce, 1);
  PassOptions options;
  CollectiveStreamIdChecker checker(options);
  ASSERT_TRUE(checker.Run(&module).ok());
  EXPECT_FALSE(checker.stream_id_present());
  const auto kept = ScanCollectives(module);
  HloInstruction* added = Add(e, HloOpcode::kAllGather, 1);
  NeuronCollectiveStreamIdInjector injector(options, /*skip_when_stream_ids_present=*/false);
  ASSERT_TRUE(injector.Run(&module).ok());
  EXPECT_TRUE(added->frontend_attributes().Contains(kStreamIdAttribute));
  NeuronUniqueChannelIdEnforcer enforcer(options);
  ASSERT_TRUE(enforcer.Run(&module).ok());
  EXPECT_EQ(added->channel_id(), std::optional<int64_t>(2));
  // And the checker, run again, sees the stream ids the injector stamped.
  ASSERT_TRUE(checker.Run(&module).ok());
  EXPECT_TRUE(checker.stream_id_present());
  EXPECT_EQ(kept->channel.size(), 1u);
}

TEST(ScanCollectivesTest, SwitchSweepsEveryTime) {
  HloModule module("m");
  auto* a = module.AddComputation(std::make_unique<HloComputation>("a"), true);
  Add(a, HloOpcode::kAllReduce, 1);
  setenv("HILO_COLLECTIVE_SCAN_CACHE", "0", 1);
  auto x = ScanCollectives(module);
  auto y = ScanCollectives(module);
  unsetenv("HILO_COLLECTIVE_SCAN_CACHE");
  EXPECT_NE(x.get(), y.get());
  EXPECT_EQ(Describe(*x), Describe(*y));
  EXPECT_EQ(ScanCollectives(module).get(), ScanCollectives(module).get());
}

// --- WalkPostOrderUntil ----------------------------------------------------

std::vector<const HloInstruction*> Walk(const HloComputation& c) {
  std::vector<const HloInstruction*> out;
  WalkPostOrderUntil(c, [&](const HloInstruction* i) {
    out.push_back(i);
    return false;
  });
  return out;
}

std::vector<const HloInstruction*> PostOrder(const HloComputation& c) {
  auto p = c.MakeInstructionPostOrder();
  return {p.begin(), p.end()};
}

TEST(WalkPostOrderUntilTest, SameOrderAsMakeInstructionPostOrder) {
  HloModule module("m");
  auto* c = module.AddComputation(std::make_unique<HloComputation>("c"), true);
  const Shape s = Shape::MakeArray(PrimitiveType::F32, {4});
  auto* p0 = c->AddInstruction(HloInstruction::CreateParameter(0, s));
  auto* p1 = c->AddInstruction(HloInstruction::CreateParameter(1, s));
  // A user written before its operand.
  auto* late_user = c->AddInstruction(HloInstruction::Create(HloOpcode::kNegate, s, {p0}));
  auto* a = c->AddInstruction(HloInstruction::Create(HloOpcode::kAdd, s, {p1, p0}));
  late_user->ReplaceOperandWith(0, a);
  auto* dead = c->AddInstruction(HloInstruction::Create(HloOpcode::kAllReduce, s, {p1}));
  auto* b = c->AddInstruction(HloInstruction::Create(HloOpcode::kMultiply, s, {a, late_user}));
  // Control dependency: dead2 before b.
  auto* dead2 = c->AddInstruction(HloInstruction::Create(HloOpcode::kAllGather, s, {p0}));
  dead2->AddControlDependencyTo(b);
  // A cycle only reachable through itself.
  auto* x = c->AddInstruction(HloInstruction::Create(HloOpcode::kNegate, s, {p0}));
  auto* y = c->AddInstruction(HloInstruction::Create(HloOpcode::kNegate, s, {x}));
  x->ReplaceOperandWith(0, y);
  auto* root = c->AddInstruction(HloInstruction::Create(HloOpcode::kTuple, Shape::MakeTuple({s, s}), {b, dead}));
  c->set_root_instruction(root);
  // A hole: a removed instruction.
  auto* removed = c->AddInstruction(HloInstruction::Create(HloOpcode::kNegate, s, {p1}));
  ASSERT_TRUE(c->RemoveInstruction(removed).ok());
  ASSERT_EQ(Walk(*c), PostOrder(*c));
  ASSERT_EQ(Walk(*c).size(), 10u);
  // Stopping: the walk ends at the first instruction `visit` accepts.
  int calls = 0;
  const HloInstruction* first_collective = nullptr;
  WalkPostOrderUntil(*c, [&](const HloInstruction* i) {
    ++calls;
    if (i->opcode() == HloOpcode::kAllReduce || i->opcode() == HloOpcode::kAllGather) {
      first_collective = i;
      return true;
    }
    return false;
  });
  const auto order = PostOrder(*c);
  auto first = std::find_if(order.begin(), order.end(), [](const HloInstruction* i) {
    return i->opcode() == HloOpcode::kAllReduce || i->opcode() == HloOpcode::kAllGather;
  });
  ASSERT_NE(first, order.end());
  EXPECT_EQ(first_collective, *first);
  EXPECT_EQ(calls, first - order.begin() + 1);
}

// --- ReplicaGroupsMatcher ---------------------------------------------------

TEST(ReplicaGroupsMatcherTest, AgreesWithReplicaGroupsEqual) {
  std::vector<ReplicaGroups> all = {
      ReplicaGroups(),
      ReplicaGroups::Explicit({{0, 1, 2, 3}, {4, 5, 6, 7}}),
      ReplicaGroups::Explicit({{0, 1, 2, 3, 4, 5, 6, 7}}),
      ReplicaGroups::Explicit({{0, 2, 4, 6}, {1, 3, 5, 7}}),
      ReplicaGroups::Explicit({{4, 5, 6, 7}, {0, 1, 2, 3}}),
      ReplicaGroups::Iota({2, 4, {8}, {}}),
      ReplicaGroups::Iota({1, 8, {8}, {}}),
      ReplicaGroups::Iota({2, 4, {4, 2}, {1, 0}}),
      ReplicaGroups::Iota({2, 4, {2, 4}, {}}),
      ReplicaGroups::Iota({3, 4, {8}, {}}),  // inconsistent: does not expand
      ReplicaGroups::Iota({4, 2, {8}, {}}),  // same ids, other group shape
      ReplicaGroups::Iota({2, 4, {2, 2, 2}, {0, 2, 1}}),  // {{0,2,1,3},{4,6,5,7}}
      ReplicaGroups::Raw("mesh[a=2]"),
      ReplicaGroups::Raw("mesh[b=2]"),
  };
  int equal_pairs = 0;
  for (const ReplicaGroups& a : all) {
    ReplicaGroupsMatcher matcher(a);
    for (const ReplicaGroups& b : all) {
      EXPECT_EQ(matcher.Matches(b), ReplicaGroupsEqual(a, b)) << a.ToString() << " vs "
                                                              << b.ToString();
      // Again, now from the memo.
      EXPECT_EQ(matcher.Matches(b), ReplicaGroupsEqual(a, b)) << a.ToString() << " vs "
                                                              << b.ToString();
      equal_pairs += matcher.Matches(b);
    }
  }
  // Each of the 14 with itself, plus the iota/explicit equalities both ways:
  // [2,4]<=[8] = [2,4]<=[2,4] = {{0..3},{4..7}}, [1,8]<=[8] = {{0..7}},
  // [2,4]<=[4,2]T(1,0) = {{0,2,4,6},{1,3,5,7}}.
  EXPECT_EQ(equal_pairs, 14 + 6 + 2 + 2);
}

TEST(ReplicaGroupsOrEmptyTest, MissingAttributeIsEmptyExplicit) {
  auto inst = HloInstruction::Create(HloOpcode::kAllReduce, Shape::MakeArray(PrimitiveType::F32, {2}));
  EXPECT_TRUE(ReplicaGroupsOrEmpty(*inst).empty());
  EXPECT_TRUE(ReplicaGroupsEqual(ReplicaGroupsOrEmpty(*inst), ReplicaGroups::Explicit({})));
  inst->set_replica_groups(ReplicaGroups::Explicit({{0, 1}}));
  EXPECT_EQ(ReplicaGroupsOrEmpty(*inst).explicit_groups().size(), 1u);
}

}  // namespace
}  // namespace hilo

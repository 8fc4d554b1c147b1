// Tests of VerifyHloModule: every check, with a module that passes and one
// that fails it. Modules are built with the IR API so that states the text
// format can not express (detached users, foreign operands) are covered too.
#include "hilo/analysis/hlo_verifier.h"

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "hilo/ir/hlo_computation.h"
#include "hilo/ir/hlo_instruction.h"
#include "hilo/ir/hlo_module.h"
#include "hilo/text/parser.h"

namespace hilo {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::StartsWith;

// "f32[2,<=3]" -> Shape (arrays, token[] only; tuples via MakeTuple).
Shape Sh(absl::string_view text) {
  size_t open = text.find('[');
  auto type = StringToPrimitiveType(text.substr(0, open));
  EXPECT_TRUE(type.has_value()) << text;
  Shape shape = Shape::MakeArray(type.value_or(PrimitiveType::F32), {});
  if (*type == PrimitiveType::TOKEN) return Shape::MakeToken();
  absl::string_view dims = text.substr(open + 1, text.size() - open - 2);
  if (dims.empty()) return shape;
  for (absl::string_view d : absl::StrSplit(dims, ',')) {
    bool dynamic = absl::ConsumePrefix(&d, "<=");
    if (d == "?") {
      shape.add_dimension(kUnboundedSize, true);
      continue;
    }
    int64_t size = 0;
    EXPECT_TRUE(absl::SimpleAtoi(d, &size)) << text;
    shape.add_dimension(size, dynamic);
  }
  return shape;
}
Shape Tup(std::vector<Shape> elements) { return Shape::MakeTuple(std::move(elements)); }

struct TestModule {
  std::unique_ptr<HloModule> module = std::make_unique<HloModule>("m");
  HloComputation* main =
      module->AddComputation(std::make_unique<HloComputation>("main"), /*is_entry=*/true);

  HloComputation* Comp(const std::string& name) {
    return module->AddComputation(std::make_unique<HloComputation>(name));
  }
  HloInstruction* Param(int64_t n, Shape shape, HloComputation* c = nullptr,
                        std::string name = "") {
    if (name.empty()) name = "p" + std::to_string(n);
    return (c ? c : main)->AddInstruction(
        HloInstruction::CreateParameter(n, std::move(shape), std::move(name)));
  }
  HloInstruction* Op(HloOpcode op, Shape shape, std::vector<HloInstruction*> operands,
                     std::string name = "", HloComputation* c = nullptr) {
    return (c ? c : main)->AddInstruction(
        HloInstruction::Create(op, std::move(shape), operands, std::move(name)));
  }
  // Makes `inst` the root of its computation.
  HloInstruction* Root(HloInstruction* inst) {
    inst->parent()->set_root_instruction(inst);
    return inst;
  }
  absl::Status Verify() const { return VerifyHloModule(*module); }
};

void ExpectOk(const TestModule& m) {
  absl::Status s = m.Verify();
  EXPECT_TRUE(s.ok()) << s;
}

// The error names the computation and instruction and contains `what`.
void ExpectError(const TestModule& m, absl::string_view comp, absl::string_view inst,
                 absl::string_view what) {
  absl::Status s = m.Verify();
  ASSERT_FALSE(s.ok()) << "expected an error containing: " << what;
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(s.message()),
              StartsWith(absl::StrCat("in computation %", comp, ", instruction %", inst, ": ")));
  EXPECT_THAT(std::string(s.message()), HasSubstr(std::string(what)));
}

// A scalar add computation for to_apply.
HloComputation* AddComputation(TestModule& m, const std::string& name = "sum") {
  HloComputation* c = m.Comp(name);
  HloInstruction* a = m.Param(0, Sh("f32[]"), c, name + ".a");
  HloInstruction* b = m.Param(1, Sh("f32[]"), c, name + ".b");
  m.Root(m.Op(HloOpcode::kAdd, Sh("f32[]"), {a, b}, name + ".add", c));
  return c;
}

// ---------------------------------------------------------------------------
// Structure

TEST(VerifierStructureTest, SimpleModulePasses) {
  TestModule m;
  HloInstruction* p = m.Param(0, Sh("f32[2]"));
  HloInstruction* q = m.Param(1, Sh("f32[2]"));
  m.Root(m.Op(HloOpcode::kAdd, Sh("f32[2]"), {p, q}));
  ExpectOk(m);
}

TEST(VerifierStructureTest, NoEntryComputation) {
  HloModule module("m");
  module.AddComputation(std::make_unique<HloComputation>("c"));
  absl::Status s = VerifyHloModule(module);
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(std::string(s.message()), HasSubstr("no entry computation"));
}

TEST(VerifierStructureTest, EntryComputationNotInModule) {
  TestModule m;
  m.Root(m.Param(0, Sh("f32[]")));
  HloComputation foreign("foreign");
  m.module->set_entry_computation(&foreign);
  absl::Status s = m.Verify();
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(std::string(s.message()), HasSubstr("not one of its computations"));
}

TEST(VerifierStructureTest, EmptyComputationAndMissingRoot) {
  {
    TestModule m;
    absl::Status s = m.Verify();
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.message(), "in computation %main: computation has no instructions");
  }
  {
    TestModule m;
    m.Param(0, Sh("f32[]"));
    absl::Status s = m.Verify();
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.message(), "in computation %main: computation has no root instruction");
  }
  {
    TestModule m;
    m.Param(0, Sh("f32[]"));
    HloComputation* other = m.Comp("other");
    HloInstruction* o = m.Root(m.Param(0, Sh("f32[]"), other, "o"));
    m.main->set_root_instruction(o);
    absl::Status s = m.Verify();
    ASSERT_FALSE(s.ok());
    EXPECT_THAT(std::string(s.message()), HasSubstr("root instruction %o is not in this"));
  }
}

TEST(VerifierStructureTest, DetachedUserIsReported) {
  TestModule m;
  HloInstruction* p = m.Root(m.Param(0, Sh("f32[]")));
  // A pass created a user and never added it to the computation.
  std::unique_ptr<HloInstruction> stray =
      HloInstruction::Create(HloOpcode::kNegate, Sh("f32[]"), {p}, "stray");
  ExpectError(m, "main", "p0", "%stray is listed as a user but does not use it");
  stray->DetachFromOperands();
  ExpectOk(m);
}

TEST(VerifierStructureTest, ManyUsersOfTwoValuesAreEachCheckedOnTheirOwn) {
  // Two parameters read by the same 40 instructions (more users than the
  // direct search takes): the users of each are checked for repeats on
  // their own, so what the check of %p0's users marked must be gone when
  // %p1's are checked, or every user of %p1 would be "listed twice".
  TestModule m;
  HloInstruction* a = m.Param(0, Sh("f32[]"));
  HloInstruction* b = m.Param(1, Sh("f32[]"));
  std::vector<HloInstruction*> sums;
  for (int i = 0; i < 40; ++i) sums.push_back(m.Op(HloOpcode::kAdd, Sh("f32[]"), {a, b}));
  HloInstruction* t = m.Op(HloOpcode::kTuple, Tup({}), {});
  for (HloInstruction* sum : sums) t->AppendOperand(sum);
  t->mutable_shape()->mutable_tuple_shapes()->assign(sums.size(), Sh("f32[]"));
  m.Root(t);
  ExpectOk(m);
  // A detached user (no unique id) among many is still reported, wherever
  // it is in the list, and the next run is clean again.
  std::unique_ptr<HloInstruction> stray =
      HloInstruction::Create(HloOpcode::kNegate, Sh("f32[]"), {b}, "stray");
  ExpectError(m, "main", "p1", "%stray is listed as a user but does not use it");
  stray->DetachFromOperands();
  ExpectOk(m);
  HloInstruction* c = m.Param(2, Sh("f32[]"));
  std::unique_ptr<HloInstruction> first =
      HloInstruction::Create(HloOpcode::kNegate, Sh("f32[]"), {c}, "first");
  for (int i = 0; i < 20; ++i) t->AppendOperand(m.Op(HloOpcode::kNegate, Sh("f32[]"), {c}));
  t->mutable_shape()->mutable_tuple_shapes()->assign(t->operand_count(), Sh("f32[]"));
  ExpectError(m, "main", "p2", "%first is listed as a user but does not use it");
  first->DetachFromOperands();
  ExpectOk(m);
}

TEST(VerifierStructureTest, OperandFromAnotherComputation) {
  TestModule m;
  HloComputation* other = m.Comp("other");
  HloInstruction* o = m.Root(m.Param(0, Sh("f32[]"), other, "o"));
  HloInstruction* p = m.Param(0, Sh("f32[]"));
  m.Root(m.Op(HloOpcode::kAdd, Sh("f32[]"), {p, o}, "bad"));
  ExpectError(m, "main", "bad", "operand 1 %o is in computation %other, not in %main");
}

TEST(VerifierStructureTest, ControlSuccessorInAnotherComputation) {
  TestModule m;
  HloComputation* other = m.Comp("other");
  HloInstruction* o = m.Root(m.Param(0, Sh("f32[]"), other, "o"));
  HloInstruction* p = m.Root(m.Param(0, Sh("f32[]")));
  p->AddControlDependencyTo(o);
  ExpectError(m, "main", "p0", "control successor %o is not in the same computation");
}

TEST(VerifierStructureTest, NamesUniqueInModule) {
  TestModule m;
  HloInstruction* p = m.Param(0, Sh("f32[]"));
  HloComputation* other = m.Comp("other");
  HloInstruction* o = m.Root(m.Param(0, Sh("f32[]"), other, "o"));
  m.Root(p);
  ExpectOk(m);
  o->SetNameUnchecked("p0");
  ExpectError(m, "other", "p0", "instruction name is used more than once in the module");
}

// A parsed module's names are checked against the module's name index
// (HloModule::IndexedInstruction) while every instruction is found there as
// itself; an instruction renamed behind the index's back switches to the
// verifier's own set, which still names the second of two equal names.
TEST(VerifierStructureTest, NamesOfAParsedModuleUniqueWithTheModulesIndex) {
  const char* kText = R"(HloModule m
sum {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}
ENTRY main {
  a = f32[] parameter(0)
  ROOT r = f32[] call(a, a), to_apply=sum
})";
  for (const char* renamed : {"x", "a"}) {
    auto module = ParseHloModule(kText);
    ASSERT_TRUE(module.ok()) << module.status();
    HloModule& m = **module;
    HloComputation* sum = m.GetComputationWithName("sum");
    HloComputation* main = m.entry_computation();
    ASSERT_NE(sum, nullptr);
    EXPECT_EQ(m.IndexedInstruction("y"), sum->parameter_instruction(1));
    EXPECT_EQ(m.IndexedInstruction("nope"), nullptr);
    EXPECT_TRUE(VerifyHloModule(m).ok()) << VerifyHloModule(m);
    // An instruction a pass adds is indexed too: still no fallback needed.
    HloInstruction* added = main->AddInstruction(
        HloInstruction::Create(HloOpcode::kNegate, Sh("f32[]"), {main->parameter_instruction(0)}));
    EXPECT_EQ(m.IndexedInstruction(added->name()), added);
    EXPECT_TRUE(VerifyHloModule(m).ok()) << VerifyHloModule(m);
    if (absl::string_view(renamed) == "x") {
      // The first instruction is renamed to a later one's name: the error
      // is at the later one, as with the verifier's own set.
      sum->parameter_instruction(0)->SetNameUnchecked("a");
      absl::Status s = VerifyHloModule(m);
      EXPECT_THAT(std::string(s.message()),
                  StartsWith("in computation %main, instruction %a: instruction name is used "
                             "more than once in the module"));
    } else {
      main->parameter_instruction(0)->SetNameUnchecked("y");
      absl::Status s = VerifyHloModule(m);
      EXPECT_THAT(std::string(s.message()),
                  StartsWith("in computation %main, instruction %y: instruction name is used "
                             "more than once in the module"));
    }
  }
}

TEST(VerifierStructureTest, ParameterNumbers) {
  {
    TestModule m;
    m.Param(1, Sh("f32[]"));
    m.Root(m.Param(0, Sh("f32[]")));
    ExpectOk(m);
  }
  {
    TestModule m;
    m.Root(m.Param(1, Sh("f32[]")));
    ExpectError(m, "main", "p1", "parameter number 1 is out of range: the computation has 1");
  }
  {
    TestModule m;
    m.Param(0, Sh("f32[]"), nullptr, "a");
    m.Param(2, Sh("f32[]"), nullptr, "gap");
    m.Root(m.Param(3, Sh("f32[]"), nullptr, "c"));
    ExpectError(m, "main", "c",
                "parameter number 3 is out of range: the computation has 3 parameter(s), "
                "numbered 0..2 (number 1 is missing)");
  }
  {
    TestModule m;
    m.Param(0, Sh("f32[]"), nullptr, "a");
    m.Root(m.Param(0, Sh("f32[]"), nullptr, "b"));
    ExpectError(m, "main", "b", "parameter number 0 is also used by %a");
  }
  {
    TestModule m;
    m.Root(m.Param(-1, Sh("f32[]"), nullptr, "neg"));
    ExpectError(m, "main", "neg", "parameter number -1 is negative");
  }
}

TEST(VerifierStructureTest, Arity) {
  TestModule m;
  HloInstruction* p = m.Param(0, Sh("f32[]"));
  m.Root(m.Op(HloOpcode::kAdd, Sh("f32[]"), {p}, "add1"));
  ExpectError(m, "main", "add1", "add takes 2 operand(s) but has 1");
}

TEST(VerifierStructureTest, AsyncUpdateLateBindingOperands) {
  TestModule m;
  HloInstruction* a = m.Param(0, Sh("f32[4]"));
  HloInstruction* b = m.Param(1, Sh("f32[4]"));
  Shape state = Tup({Tup({Sh("f32[4]")}), Sh("f32[4]"), Sh("s32[]")});
  HloInstruction* start = m.Op(HloOpcode::kAsyncStart, state, {a}, "start");
  HloInstruction* update = m.Op(HloOpcode::kAsyncUpdate, state, {start, b}, "update");
  m.Root(m.Op(HloOpcode::kAsyncDone, Sh("f32[4]"), {update}, "done"));
  ExpectOk(m);
  update->DetachFromOperands();
  ExpectError(m, "main", "update", "async-update needs the async value as its first operand");
}

TEST(VerifierStructureTest, CalledComputationsMustBelongToTheModule) {
  TestModule m;
  HloComputation* sum = AddComputation(m);
  HloInstruction* p = m.Param(0, Sh("f32[8]"));
  HloInstruction* ar = m.Root(m.Op(HloOpcode::kAllReduce, Sh("f32[8]"), {p}, "ar"));
  ar->SetCalledComputations("to_apply", {sum});
  ExpectOk(m);
  HloComputation foreign("foreign");
  ar->SetCalledComputations("to_apply", {&foreign});
  ExpectError(m, "main", "ar", "to_apply=%foreign is not a computation of this module");
  ar->SetCalledComputations("to_apply", {nullptr});
  ExpectError(m, "main", "ar", "to_apply names a computation that does not exist");
  ar->SetCalledComputations("to_apply", {m.main});
  ExpectError(m, "main", "ar", "to_apply calls its own computation %main");
}

TEST(VerifierStructureTest, OperandCycle) {
  TestModule m;
  HloInstruction* p = m.Param(0, Sh("f32[]"));
  HloInstruction* a = m.Op(HloOpcode::kAdd, Sh("f32[]"), {p}, "a");
  HloInstruction* c = m.Op(HloOpcode::kNegate, Sh("f32[]"), {a}, "c");
  a->AppendOperand(c);
  m.Root(m.Op(HloOpcode::kCopy, Sh("f32[]"), {c}, "r"));
  absl::Status s = m.Verify();
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(std::string(s.message()), HasSubstr("is on a cycle (through operands"));
}

// `r = add(a, b)` with `a` and `b` two negations of parameter `p`.
struct TwoBranchModule : TestModule {
  HloInstruction* p = Param(0, Sh("f32[]"));
  HloInstruction* a = Op(HloOpcode::kNegate, Sh("f32[]"), {p}, "a");
  HloInstruction* b = Op(HloOpcode::kNegate, Sh("f32[]"), {p}, "b");
  HloInstruction* r = Root(Op(HloOpcode::kAdd, Sh("f32[]"), {a, b}, "r"));
};

TEST(VerifierStructureTest, ControlCycle) {
  TwoBranchModule m;
  HloInstruction* a = m.a;
  HloInstruction* b = m.b;
  a->AddControlDependencyTo(b);
  ExpectOk(m);
  b->AddControlDependencyTo(a);
  absl::Status s = m.Verify();
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(std::string(s.message()), HasSubstr("is on a cycle (through a control edge"));
}

TEST(VerifierStructureTest, DeepChainAndWideFanoutVerify) {
  TestModule m;
  HloInstruction* p = m.Param(0, Sh("f32[]"));
  HloInstruction* prev = p;
  for (int i = 0; i < 100000; ++i) prev = m.Op(HloOpcode::kNegate, Sh("f32[]"), {prev});
  std::vector<HloInstruction*> fan;
  for (int i = 0; i < 20000; ++i) fan.push_back(m.Op(HloOpcode::kAbs, Sh("f32[]"), {p}));
  HloInstruction* t = m.Op(HloOpcode::kTuple, Tup({}), {});
  for (HloInstruction* f : fan) t->AppendOperand(f);
  t->mutable_shape()->mutable_tuple_shapes()->assign(fan.size(), Sh("f32[]"));
  m.Root(m.Op(HloOpcode::kTuple, Tup({Sh("f32[]"), t->shape()}), {prev, t}));
  ExpectOk(m);
}

// ---------------------------------------------------------------------------
// Order of reports. Phase 1 walks each computation once, running several
// kinds of checks together; what it reports must not depend on that: the
// parameter checks, then the checks of each instruction on its own, then the
// user and control-predecessor checks, each kind in list order.

// Removes the edges a test's detached instructions left on the module's.
void Detach(std::vector<std::unique_ptr<HloInstruction>>& strays) {
  for (auto& stray : strays) {
    stray->DetachFromOperands();
    stray->DropAllControlDependencies();
  }
}

TEST(VerifierOrderTest, ParametersBeforeEarlierInstructions) {
  TestModule m;
  HloInstruction* p = m.Param(0, Sh("f32[]"));
  m.Op(HloOpcode::kNegate, Sh("f32[]"), {p, p}, "bad_arity");
  HloInstruction* dup = m.Op(HloOpcode::kNegate, Sh("f32[]"), {p}, "dup");
  HloInstruction* q = m.Param(1, Sh("f32[]"), nullptr, "q");
  m.Root(p);
  q->set_parameter_number(5);
  ExpectError(m, "main", "q", "parameter number 5 is out of range");
  dup->SetNameUnchecked("p0");
  ExpectError(m, "main", "q", "parameter number 5 is out of range");
  q->set_parameter_number(1);
  ExpectError(m, "main", "bad_arity", "negate takes 1 operand(s) but has 2");
}

TEST(VerifierOrderTest, InstructionChecksBeforeEarlierUserChecks) {
  TestModule m;
  HloInstruction* p = m.Param(0, Sh("f32[]"));
  HloInstruction* a = m.Op(HloOpcode::kNegate, Sh("f32[]"), {p}, "a");
  m.Root(m.Op(HloOpcode::kNegate, Sh("f32[]"), {a}, "r"));
  std::vector<std::unique_ptr<HloInstruction>> strays;
  strays.push_back(HloInstruction::Create(HloOpcode::kNegate, Sh("f32[]"), {p}, "stray"));
  ExpectError(m, "main", "p0", "%stray is listed as a user but does not use it");
  // A later instruction's own problem outranks the user problem of p0.
  m.Op(HloOpcode::kAdd, Sh("f32[]"), {a}, "late");
  ExpectError(m, "main", "late", "add takes 2 operand(s) but has 1");
  Detach(strays);
}

TEST(VerifierOrderTest, UserAndPredecessorChecksInListOrder) {
  for (bool earlier_is_user : {false, true}) {
    TestModule m;
    HloInstruction* p = m.Param(0, Sh("f32[]"));
    HloInstruction* a = m.Op(HloOpcode::kNegate, Sh("f32[]"), {p}, "a");
    HloInstruction* b = m.Op(HloOpcode::kNegate, Sh("f32[]"), {a}, "b");
    m.Root(m.Op(HloOpcode::kNegate, Sh("f32[]"), {b}, "r"));
    std::vector<std::unique_ptr<HloInstruction>> strays;
    HloInstruction* with_user = earlier_is_user ? a : b;
    HloInstruction* with_pred = earlier_is_user ? b : a;
    strays.push_back(HloInstruction::Create(HloOpcode::kNegate, Sh("f32[]"), {with_user}, "su"));
    strays.push_back(HloInstruction::Create(HloOpcode::kNegate, Sh("f32[]"), {}, "sp"));
    strays.back()->AddControlDependencyTo(with_pred);
    if (earlier_is_user) {
      ExpectError(m, "main", "a", "%su is listed as a user but does not use it");
    } else {
      // The predecessor check waits for the end of the walk, yet comes first.
      ExpectError(m, "main", "a", "control predecessor %sp does not list it as a control "
                                  "successor");
    }
    // On one instruction, its users are checked before its predecessors.
    strays.back()->AddControlDependencyTo(with_user);
    if (!earlier_is_user) {
      ExpectError(m, "main", "a", "control predecessor %sp does not list it");
    } else {
      ExpectError(m, "main", "a", "%su is listed as a user");
    }
    Detach(strays);
    ExpectOk(m);
  }
}

TEST(VerifierOrderTest, UsersWithManyOperandsAreCheckedAfterTheWalk) {
  // Each parameter's user `t` comes after it and has more operands than a
  // direct search covers: its edges are only known once the walk reaches it.
  TestModule m;
  std::vector<HloInstruction*> params;
  std::vector<Shape> shapes;
  for (int i = 0; i < 20; ++i) {
    params.push_back(m.Param(i, Sh("f32[]")));
    shapes.push_back(Sh("f32[]"));
  }
  HloInstruction* t = m.Root(m.Op(HloOpcode::kTuple, Tup(shapes), params, "t"));
  ExpectOk(m);
  std::vector<std::unique_ptr<HloInstruction>> strays;
  strays.push_back(HloInstruction::Create(HloOpcode::kTuple, Tup(shapes), params, "wide_stray"));
  ExpectError(m, "main", "p0", "%wide_stray is listed as a user but does not use it");
  Detach(strays);
  strays.clear();
  strays.push_back(HloInstruction::Create(HloOpcode::kNegate, Sh("f32[]"), {}, "sp"));
  strays.back()->AddControlDependencyTo(t);
  ExpectError(m, "main", "t", "control predecessor %sp does not list it");
  Detach(strays);
  ExpectOk(m);
}

TEST(VerifierOrderTest, StructureOfEveryComputationBeforeShapes) {
  TestModule m;
  HloInstruction* p = m.Param(0, Sh("f32[4]"));
  m.Root(m.Op(HloOpcode::kReshape, Sh("f32[5]"), {p}, "bad_reshape"));
  HloComputation* other = m.Comp("other");
  HloInstruction* o = m.Param(0, Sh("f32[]"), other, "o");
  HloInstruction* x = m.Op(HloOpcode::kAdd, Sh("f32[]"), {o, o}, "x", other);
  HloInstruction* y = m.Op(HloOpcode::kNegate, Sh("f32[]"), {x}, "y", other);
  m.Root(y);
  ExpectError(m, "main", "bad_reshape", "changes the element count");
  o->set_parameter_number(3);
  ExpectError(m, "other", "o", "parameter number 3 is out of range");
  o->set_parameter_number(0);
  x->ReplaceOperandWith(1, y);  // a cycle, found in phase 2: still before the shapes
  ExpectError(m, "other", "x", "is on a cycle (through operands from %y)");
}

// The verifier remembers the shape checks that passed (ShapeMemo): an
// instruction alike to one checked before (same opcode, same shared Shape
// objects) but for one attribute the check reads is still checked.
TEST(VerifierShapeMemoTest, AlikeInstructionsDifferingInOneAttributeAreBothChecked) {
  struct Case {
    const char* valid;    // checked first
    const char* invalid;  // the same but for one attribute
    const char* error;
  };
  const Case cases[] = {
      {"f32[4,4]{1,0} transpose(p44), dimensions={1,0}",
       "f32[4,4]{1,0} transpose(p44), dimensions={0,0}", "is not a permutation"},
      {"f32[4,8]{1,0} broadcast(p4), dimensions={0}",
       "f32[4,8]{1,0} broadcast(p4), dimensions={1}", "operand dimension 0 has size 4"},
      {"f32[4]{0} get-tuple-element(t), index=0", "f32[4]{0} get-tuple-element(t), index=1",
       "is not element 1"},
      {"f32[4,4]{1,0} dot(p48, p84), lhs_contracting_dims={1}, rhs_contracting_dims={0}",
       "f32[4,4]{1,0} dot(p48, p84), lhs_contracting_dims={1}, rhs_contracting_dims={1}",
       "lhs contracting dimension 1 has size 8"},
      {"f32[8,8]{1,0} all-gather(p48), replica_groups={{0,1}}, dimensions={0}",
       "f32[8,8]{1,0} all-gather(p48), replica_groups={{0,1}}, dimensions={1}",
       "differs from operand 0"},
      {"f32[8,8]{1,0} all-gather(p48), replica_groups={{0,1}}, dimensions={0}",
       "f32[8,8]{1,0} all-gather(p48), replica_groups={{0,1,2}}, dimensions={0}",
       "should have size 4 * 3"},
      {"f32[8,8]{1,0} all-gather(p48), replica_groups={{0,1}}, dimensions={0}",
       "f32[8,8]{1,0} all-gather(p48), channel_id=1, replica_groups={{0,1}}, dimensions={0}",
       "should have size 4 * 4"},
  };
  for (const Case& c : cases) {
    const std::string text = absl::StrCat(R"(HloModule m, num_partitions=2
ENTRY main {
  p44 = f32[4,4]{1,0} parameter(0)
  p4 = f32[4]{0} parameter(1)
  p48 = f32[4,8]{1,0} parameter(2)
  p84 = f32[8,4]{1,0} parameter(3)
  t = (f32[4]{0}, f32[8]{0}) parameter(4)
  a = )", c.valid, "\n  b = ", c.valid, "\n  ROOT bad = ", c.invalid, "\n}\n");
    auto module = ParseHloModule(text);
    ASSERT_TRUE(module.ok()) << module.status();
    absl::Status s = VerifyHloModule(**module);
    EXPECT_THAT(std::string(s.message()),
                AllOf(StartsWith("in computation %main, instruction %bad: "), HasSubstr(c.error)))
        << text;
  }
}

TEST(VerifierOrderTest, ShapesInListOrderAcrossDeferredCallers) {
  // The check of a while or call reads the computations it calls, so it
  // waits for phase 3; shape errors are still reported in list order.
  for (HloOpcode caller : {HloOpcode::kWhile, HloOpcode::kCall}) {
    for (bool reshape_first : {false, true}) {
      TestModule m;
      HloComputation* cond = m.Comp("cond");
      HloComputation* body = m.Comp("body");
      HloInstruction* cp = m.Param(0, Sh("f32[2]"), cond, "cp");
      m.Root(m.Op(HloOpcode::kCompare, Sh("pred[]"), {cp, cp}, "lt", cond));
      m.Param(0, Sh("f32[2]"), body, "bp");
      m.Root(m.Op(HloOpcode::kConstant, Sh("f32[3]"), {}, "c3", body));  // not the loop's shape
      HloInstruction* init = m.Param(0, Sh("f32[2]"), nullptr, "init");
      HloInstruction* x = m.Param(1, Sh("f32[4]"), nullptr, "x");
      if (reshape_first) m.Op(HloOpcode::kReshape, Sh("f32[5]"), {x}, "bad_reshape");
      HloInstruction* call = m.Root(m.Op(caller, Sh("f32[2]"), {init}, "caller"));
      if (caller == HloOpcode::kWhile) {
        call->SetCalledComputations("condition", {cond});
        call->SetCalledComputations("body", {body});
      } else {
        call->SetCalledComputations("to_apply", {body});
      }
      if (!reshape_first) m.Op(HloOpcode::kReshape, Sh("f32[5]"), {x}, "bad_reshape");
      if (reshape_first) {
        ExpectError(m, "main", "bad_reshape", "changes the element count");
      } else {
        ExpectError(m, "main", "caller", " %body returns f32[3] but f32[2] is expected");
      }
      // The body's structure is checked before the caller's check reads its root.
      body->set_root_instruction(nullptr);
      EXPECT_EQ(m.Verify().message(),
                "in computation %body: computation has no root instruction");
    }
  }
}

// A caller whose callees come before it in the module is checked in the
// walk instead of in phase 3; the first shape error in list order is still
// the one reported, and a callee's broken structure still comes first.
TEST(VerifierOrderTest, ShapesInListOrderWithCalleesFirst) {
  for (bool reshape_first : {false, true}) {
    auto module = std::make_unique<HloModule>("m");
    HloComputation* body = module->AddComputation(std::make_unique<HloComputation>("body"));
    HloComputation* main =
        module->AddComputation(std::make_unique<HloComputation>("main"), /*is_entry=*/true);
    body->AddInstruction(HloInstruction::CreateParameter(0, Sh("f32[2]"), "bp"));
    body->set_root_instruction(body->AddInstruction(
        HloInstruction::Create(HloOpcode::kConstant, Sh("f32[3]"), {}, "c3")));
    HloInstruction* init = main->AddInstruction(HloInstruction::CreateParameter(0, Sh("f32[2]"), "init"));
    HloInstruction* x = main->AddInstruction(HloInstruction::CreateParameter(1, Sh("f32[4]"), "x"));
    auto reshape = [&] {
      main->AddInstruction(HloInstruction::Create(HloOpcode::kReshape, Sh("f32[5]"), {x}, "bad_reshape"));
    };
    if (reshape_first) reshape();
    HloInstruction* call = main->AddInstruction(
        HloInstruction::Create(HloOpcode::kCall, Sh("f32[2]"), {init}, "caller"));
    call->SetCalledComputations("to_apply", {body});
    main->set_root_instruction(call);
    if (!reshape_first) reshape();
    absl::Status s = VerifyHloModule(*module);
    if (reshape_first) {
      EXPECT_THAT(std::string(s.message()), HasSubstr("%bad_reshape: "));
      EXPECT_THAT(std::string(s.message()), HasSubstr("changes the element count"));
    } else {
      EXPECT_THAT(std::string(s.message()),
                  HasSubstr("%caller: to_apply %body returns f32[3] but f32[2] is expected"));
    }
    body->set_root_instruction(nullptr);
    EXPECT_EQ(VerifyHloModule(*module).message(),
              "in computation %body: computation has no root instruction");
  }
}

TEST(VerifierOrderTest, RepeatedNameFoundFarDownALongList) {
  TestModule m;
  HloInstruction* prev = m.Param(0, Sh("f32[]"));
  std::vector<HloInstruction*> chain;
  for (int i = 0; i < 100; ++i) {
    prev = m.Op(HloOpcode::kNegate, Sh("f32[]"), {prev}, absl::StrCat("n", i));
    chain.push_back(prev);
  }
  m.Root(prev);
  ExpectOk(m);
  // Names are hashed a few instructions ahead of their check: repeats at
  // the start, in the middle and at the end of the list.
  for (int i : {1, 2, 3, 4, 5, 70, 99}) {
    chain[i]->SetNameUnchecked("n0");
    ExpectError(m, "main", "n0", "instruction name is used more than once in the module");
    chain[i]->SetNameUnchecked(absl::StrCat("n", i));
    ExpectOk(m);
  }
}

TEST(VerifierOrderTest, UseBeforeDefinitionIsNotACycle) {
  // Operands and control predecessors with larger unique ids than their user:
  // the cheap proof of acyclicity does not apply and the full search runs.
  TwoBranchModule m;
  HloInstruction* a = m.a;
  HloInstruction* b = m.b;
  a->ReplaceOperandWith(0, b);
  ExpectOk(m);
  b->AddControlDependencyTo(m.main->root_instruction());
  HloInstruction* c = m.Op(HloOpcode::kNegate, Sh("f32[]"), {m.p}, "c");
  c->AddControlDependencyTo(b);
  ExpectOk(m);
  b->ReplaceOperandWith(0, a);
  ExpectError(m, "main", "a", "is on a cycle (through operands from %b)");
}

// ---------------------------------------------------------------------------
// While, conditional, call

struct WhileModule : TestModule {
  HloComputation* cond = Comp("cond");
  HloComputation* body = Comp("body");
  HloInstruction* init = nullptr;
  HloInstruction* loop = nullptr;
  HloInstruction* cond_root = nullptr;
  HloInstruction* body_root = nullptr;
  HloInstruction* body_param = nullptr;
  HloInstruction* cond_param = nullptr;

  WhileModule() {
    Shape s = Tup({Sh("s32[]"), Sh("f32[4]")});
    cond_param = Param(0, s, cond, "cp");
    HloInstruction* i = Op(HloOpcode::kGetTupleElement, Sh("s32[]"), {cond_param}, "ci", cond);
    i->set_tuple_index(0);
    cond_root = Root(Op(HloOpcode::kCompare, Sh("pred[]"), {i, i}, "lt", cond));
    body_param = Param(0, s, body, "bp");
    body_root = Root(Op(HloOpcode::kCopy, s, {body_param}, "next", body));
    init = Param(0, s, main, "init");
    loop = Root(Op(HloOpcode::kWhile, s, {init}, "loop"));
    loop->SetCalledComputations("condition", {cond});
    loop->SetCalledComputations("body", {body});
  }
};

TEST(VerifierWhileTest, ValidLoop) {
  WhileModule m;
  ExpectOk(m);
}

TEST(VerifierWhileTest, BodyParameterDiffers) {
  WhileModule m;
  *m.body_param->mutable_shape() = Tup({Sh("s32[]"), Sh("f32[5]")});
  *m.body_root->mutable_shape() = Tup({Sh("s32[]"), Sh("f32[5]")});
  ExpectError(m, "main", "loop", "body %body parameter 0 has shape (s32[], f32[5]) but is passed "
                                 "(s32[], f32[4])");
}

TEST(VerifierWhileTest, BodyRootDiffers) {
  WhileModule m;
  HloInstruction* other = m.Root(m.Op(HloOpcode::kTuple, Tup({Sh("s32[]")}), {}, "t", m.body));
  HloInstruction* i = m.Op(HloOpcode::kGetTupleElement, Sh("s32[]"), {m.body_param}, "bi", m.body);
  i->set_tuple_index(0);
  other->AppendOperand(i);
  ExpectError(m, "main", "loop", "body %body returns (s32[]) but (s32[], f32[4]) is expected");
}

TEST(VerifierWhileTest, ConditionMustReturnPred) {
  WhileModule m;
  *m.cond_root->mutable_shape() = Sh("pred[1]");
  ExpectError(m, "main", "loop", "condition %cond must return pred[], returns pred[1]");
}

TEST(VerifierWhileTest, ConditionParameterAndWhileShape) {
  {
    WhileModule m;
    *m.cond_param->mutable_shape() = Tup({Sh("s32[]")});
    ExpectError(m, "main", "loop", "condition %cond parameter 0 has shape (s32[])");
  }
  {
    WhileModule m;
    *m.loop->mutable_shape() = Tup({Sh("s32[]"), Sh("f32[3]")});
    ExpectError(m, "main", "loop", "while returns (s32[], f32[3]) but its initial value is");
  }
  {
    WhileModule m;
    m.loop->SetCalledComputations("body", {});
    ExpectError(m, "main", "loop", "while needs exactly one condition and one body");
  }
}

struct ConditionalModule : TestModule {
  HloComputation* b0 = Comp("b0");
  HloComputation* b1 = Comp("b1");
  HloInstruction* sel = nullptr;
  HloInstruction* cond = nullptr;
  HloInstruction* b1_root = nullptr;

  ConditionalModule() {
    Root(Param(0, Sh("f32[2]"), b0, "x0"));
    HloInstruction* y = Param(0, Sh("s32[3]"), b1, "y1");
    b1_root = Root(Op(HloOpcode::kConvert, Sh("f32[3]"), {y}, "c1", b1));
    b1_root->mutable_shape()->set_dimensions(0, 2);
    sel = Param(0, Sh("s32[]"), main, "sel");
    HloInstruction* a = Param(1, Sh("f32[2]"), main, "a");
    HloInstruction* b = Param(2, Sh("s32[3]"), main, "b");
    cond = Root(Op(HloOpcode::kConditional, Sh("f32[2]"), {sel, a, b}, "cond"));
    cond->SetCalledComputations("branch_computations", {b0, b1}, /*braced=*/true);
  }
};

TEST(VerifierConditionalTest, Signatures) {
  {
    ConditionalModule m;
    // b1's root converts s32[3] to f32[2]: a convert error, found first.
    ExpectError(m, "b1", "c1", "convert must keep the dimensions");
    *m.b1_root->mutable_shape() = Sh("f32[3]");
    ExpectError(m, "main", "cond", "branch 1 %b1 returns f32[3] but f32[2] is expected");
  }
  {
    ConditionalModule m;
    HloInstruction* y = m.b1->parameter_instruction(0);
    *y->mutable_shape() = Sh("s32[2]");
    *m.b1_root->mutable_shape() = Sh("f32[2]");
    ExpectError(m, "main", "cond", "branch 1 %b1 parameter 0 has shape s32[2] but is passed "
                                   "s32[3]");
  }
  {
    ConditionalModule m;
    HloInstruction* y = m.b1->parameter_instruction(0);
    *y->mutable_shape() = Sh("s32[2]");
    *m.b1_root->mutable_shape() = Sh("f32[2]");
    *m.cond->mutable_operand(2)->mutable_shape() = Sh("s32[2]");
    ExpectOk(m);
    *m.sel->mutable_shape() = Sh("pred[]");
    ExpectError(m, "main", "cond", "branch selector must be s32[], got pred[]");
    // pred selector with true/false computations.
    m.cond->ClearCalledComputations();
    m.cond->SetCalledComputations("true_computation", {m.b0});
    m.cond->SetCalledComputations("false_computation", {m.b1});
    ExpectOk(m);
    m.cond->SetCalledComputations("false_computation", {});
    ExpectError(m, "main", "cond", "needs both true_computation and false_computation");
  }
  {
    ConditionalModule m;
    m.cond->SetCalledComputations("branch_computations", {m.b0}, true);
    ExpectError(m, "main", "cond", "conditional with 1 branches needs 2 operands, has 3");
  }
}

TEST(VerifierCallTest, Signature) {
  TestModule m;
  HloComputation* callee = m.Comp("callee");
  HloInstruction* x = m.Param(0, Sh("f32[2]"), callee, "x");
  m.Root(m.Op(HloOpcode::kNegate, Sh("f32[2]"), {x}, "nx", callee));
  HloInstruction* a = m.Param(0, Sh("f32[2]"));
  HloInstruction* call = m.Root(m.Op(HloOpcode::kCall, Sh("f32[2]"), {a}, "call"));
  call->SetCalledComputations("to_apply", {callee});
  ExpectOk(m);
  call->AppendOperand(a);
  ExpectError(m, "main", "call", "to_apply %callee takes 1 parameter(s) but is passed 2");
}

// ---------------------------------------------------------------------------
// Tuples and get-tuple-element

TEST(VerifierTupleTest, GetTupleElement) {
  TestModule m;
  HloInstruction* p = m.Param(0, Tup({Sh("f32[2]"), Sh("s32[]")}));
  HloInstruction* g = m.Root(m.Op(HloOpcode::kGetTupleElement, Sh("s32[]"), {p}, "g"));
  g->set_tuple_index(1);
  ExpectOk(m);
  g->set_tuple_index(2);
  ExpectError(m, "main", "g", "tuple index 2 is out of range for (f32[2], s32[]) (2 element(s))");
  g->set_tuple_index(-1);
  ExpectError(m, "main", "g", "tuple index -1 is out of range");
  g->set_tuple_index(0);
  ExpectError(m, "main", "g", "shape s32[] is not element 0 of (f32[2], s32[]), which is f32[2]");
  // Layouts do not matter.
  *g->mutable_shape() = Shape::MakeArrayWithLayout(PrimitiveType::F32, {2}, {0});
  ExpectOk(m);
}

TEST(VerifierTupleTest, GetTupleElementOfNonTuple) {
  TestModule m;
  HloInstruction* p = m.Param(0, Sh("f32[2]"));
  HloInstruction* g = m.Root(m.Op(HloOpcode::kGetTupleElement, Sh("f32[2]"), {p}, "g"));
  g->set_tuple_index(0);
  ExpectError(m, "main", "g", "operand %p0 is not a tuple: f32[2]");
}

TEST(VerifierTupleTest, Tuple) {
  TestModule m;
  HloInstruction* a = m.Param(0, Sh("f32[2]"));
  HloInstruction* b = m.Param(1, Sh("token[]"));
  HloInstruction* t = m.Root(m.Op(HloOpcode::kTuple, Tup({Sh("f32[2]"), Sh("token[]")}), {a, b}, "t"));
  ExpectOk(m);
  *t->mutable_shape() = Tup({Sh("f32[2]"), Sh("f32[]")});
  ExpectError(m, "main", "t", "element 1 has shape f32[] but operand %p1 has shape token[]");
  *t->mutable_shape() = Tup({Sh("f32[2]")});
  ExpectError(m, "main", "t", "a tuple of 2 operand(s) must have a tuple shape");
  *t->mutable_shape() = Tup({});
  t->DetachFromOperands();
  ExpectOk(m);  // the empty tuple
}

// ---------------------------------------------------------------------------
// Dot

struct DotModule : TestModule {
  HloInstruction* dot = nullptr;
  DotModule(absl::string_view lhs, absl::string_view rhs, absl::string_view out,
            std::vector<int64_t> lb, std::vector<int64_t> rb, std::vector<int64_t> lc,
            std::vector<int64_t> rc) {
    HloInstruction* l = Param(0, Sh(lhs));
    HloInstruction* r = Param(1, Sh(rhs));
    dot = Root(Op(HloOpcode::kDot, Sh(out), {l, r}, "dot.3"));
    *dot->mutable_dot_dimension_numbers() = {lb, rb, lc, rc};
  }
};

TEST(VerifierDotTest, Valid) {
  ExpectOk(DotModule("f32[2,128]", "f32[128,64]", "f32[2,64]", {}, {}, {1}, {0}));
  ExpectOk(DotModule("bf16[4,2,8]", "bf16[4,8,3]", "f32[4,2,3]", {0}, {0}, {2}, {1}));
  // Batch dimension not leading in the operands; free dims keep their order.
  ExpectOk(DotModule("f32[5,4,6]", "f32[6,7,4]", "f32[4,5,7]", {1}, {2}, {2}, {0}));
  // Outer product (no contraction) and vector dot.
  ExpectOk(DotModule("f32[3]", "f32[4]", "f32[3,4]", {}, {}, {}, {}));
  ExpectOk(DotModule("f32[3]", "f32[3]", "f32[]", {}, {}, {0}, {0}));
  // Dynamic dims are not compared.
  ExpectOk(DotModule("f32[<=8,128]", "f32[128,64]", "f32[8,64]", {}, {}, {1}, {0}));
}

TEST(VerifierDotTest, ContractingSizesDisagree) {
  DotModule m("f32[2,128]", "f32[64,32]", "f32[2,32]", {}, {}, {1}, {0});
  absl::Status s = m.Verify();
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(),
            "in computation %main, instruction %dot.3: lhs contracting dimension 1 has size 128 "
            "but rhs contracting dimension 0 has size 64");
}

TEST(VerifierDotTest, Errors) {
  ExpectError(DotModule("f32[4,2,8]", "f32[3,8,3]", "f32[4,2,3]", {0}, {0}, {2}, {1}), "main",
              "dot.3", "lhs batch dimension 0 has size 4 but rhs batch dimension 0 has size 3");
  ExpectError(DotModule("f32[2,8]", "f32[8,3]", "f32[2,3]", {}, {}, {2}, {0}), "main", "dot.3",
              "lhs contracting dimension 2 is out of range for rank 2");
  ExpectError(DotModule("f32[2,8]", "f32[8,3]", "f32[2,3]", {}, {}, {1}, {-1}), "main", "dot.3",
              "rhs contracting dimension -1 is out of range");
  ExpectError(DotModule("f32[8,8]", "f32[8,8]", "f32[8]", {0}, {0}, {0}, {1}), "main", "dot.3",
              "lhs dimension 0 is named more than once");
  ExpectError(DotModule("f32[4,2,8]", "f32[4,8,3]", "f32[4,2,3]", {0}, {}, {2}, {1}), "main",
              "dot.3", "lhs has 1 batch dimension(s) but rhs has 0");
  ExpectError(DotModule("f32[2,8]", "f32[8,3]", "f32[2,3]", {}, {}, {1}, {}), "main", "dot.3",
              "lhs has 1 contracting dimension(s) but rhs has 0");
  ExpectError(DotModule("f32[2,8]", "f32[8,3]", "f32[2,3,1]", {}, {}, {1}, {0}), "main", "dot.3",
              "result f32[2,3,1] has rank 3 but");
  ExpectError(DotModule("f32[2,8]", "f32[8,3]", "f32[3,2]", {}, {}, {1}, {0}), "main", "dot.3",
              "result dimension 0 has size 3 but lhs dimension 0 has size 2");
  ExpectError(DotModule("f32[4,2,8]", "f32[4,8,3]", "f32[4,2,5]", {0}, {0}, {2}, {1}), "main",
              "dot.3", "result dimension 2 has size 5 but rhs dimension 2 has size 3");
}

TEST(VerifierDotTest, TupleOperand) {
  TestModule m;
  HloInstruction* l = m.Param(0, Tup({Sh("f32[2]")}));
  HloInstruction* r = m.Param(1, Sh("f32[2]"));
  m.Root(m.Op(HloOpcode::kDot, Sh("f32[]"), {l, r}, "d"));
  ExpectError(m, "main", "d", "lhs operand must be an array, got (f32[2])");
}

TEST(VerifierDotTest, ChecksDoNotCarryOverBetweenDots) {
  // The verifier reuses one dot's dimension bookkeeping for the next: a dot
  // of lower rank after one of higher rank must see none of its marks.
  TestModule m;
  HloInstruction* a = m.Param(0, Sh("f32[2,3,4]"));
  HloInstruction* b = m.Param(1, Sh("f32[2,4,5]"));
  HloInstruction* c = m.Param(2, Sh("f32[3,4]"));
  HloInstruction* d = m.Param(3, Sh("f32[4,6]"));
  HloInstruction* big = m.Op(HloOpcode::kDot, Sh("f32[2,3,5]"), {a, b}, "big");
  *big->mutable_dot_dimension_numbers() = {{0}, {0}, {2}, {1}};
  HloInstruction* small = m.Op(HloOpcode::kDot, Sh("f32[3,6]"), {c, d}, "small");
  *small->mutable_dot_dimension_numbers() = {{}, {}, {1}, {0}};
  m.Root(m.Op(HloOpcode::kTuple, Tup({big->shape(), small->shape()}), {big, small}, "t"));
  ExpectOk(m);  // lhs dimension 0 of `small` is free although it was a batch dim of `big`
  *small->mutable_shape() = Sh("f32[3,7]");
  ExpectError(m, "main", "small", "result dimension 1 has size 7 but rhs dimension 1 has size 6");
  *small->mutable_shape() = Sh("f32[3,6]");
  *small->mutable_dot_dimension_numbers() = {{}, {}, {1, 1}, {0, 1}};
  ExpectError(m, "main", "small", "lhs dimension 1 is named more than once");
  *small->mutable_dot_dimension_numbers() = {{}, {}, {1}, {0}};
  *big->mutable_dot_dimension_numbers() = {{0}, {0}, {2, 2}, {1, 2}};
  ExpectError(m, "main", "big", "lhs dimension 2 is named more than once");
}

// ---------------------------------------------------------------------------
// Reshape, convert, broadcast, transpose

TEST(VerifierShapeOpsTest, Reshape) {
  TestModule m;
  HloInstruction* p = m.Param(0, Sh("f32[4,6]"));
  HloInstruction* r = m.Root(m.Op(HloOpcode::kReshape, Sh("f32[2,12]"), {p}, "r"));
  ExpectOk(m);
  *r->mutable_shape() = Sh("f32[5,5]");
  ExpectError(m, "main", "r", "reshape of f32[4,6] (24 elements) to f32[5,5] (25 elements)");
  *r->mutable_shape() = Sh("s32[24]");
  ExpectError(m, "main", "r", "reshape changes the element type from f32 to s32");
  // With a dynamic dimension the element count is not certain.
  *r->mutable_shape() = Sh("f32[<=30]");
  ExpectOk(m);
  *r->mutable_shape() = Tup({});
  ExpectError(m, "main", "r", "result must be an array");
}

TEST(VerifierShapeOpsTest, Convert) {
  TestModule m;
  HloInstruction* p = m.Param(0, Sh("f32[4,6]"));
  HloInstruction* c = m.Root(m.Op(HloOpcode::kConvert, Sh("bf16[4,6]"), {p}, "c"));
  ExpectOk(m);
  *c->mutable_shape() = Sh("bf16[6,4]");
  ExpectError(m, "main", "c", "convert must keep the dimensions: operand f32[4,6], result "
                              "bf16[6,4]");
  *c->mutable_shape() = Sh("bf16[4]");
  ExpectError(m, "main", "c", "convert must keep the dimensions");
}

TEST(VerifierShapeOpsTest, Elementwise) {
  TestModule m;
  HloInstruction* p = m.Param(0, Sh("f32[4,<=6]"));
  HloInstruction* q = m.Param(1, Sh("f32[4,6]"));
  HloInstruction* cmp = m.Op(HloOpcode::kCompare, Sh("pred[4,6]"), {p, q}, "cmp");
  HloInstruction* add = m.Root(m.Op(HloOpcode::kAdd, Sh("f32[4,6]"), {p, q}, "add"));
  ExpectOk(m);  // compare gives pred; a bounded dimension stands for any size up to it
  *add->mutable_shape() = Sh("f32[4,7]");  // only the static operand can be wrong here
  ExpectError(m, "main", "add",
              "add is elementwise: operand 1 f32[4,6] and result f32[4,7] must have the same "
              "dimensions");
  *add->mutable_shape() = Sh("f32[4,6]");
  *cmp->mutable_shape() = Sh("pred[24]");
  ExpectError(m, "main", "cmp", "compare is elementwise");
  *cmp->mutable_shape() = Sh("pred[4,6]");
  ExpectOk(m);

  // Unary: abs of a complex gives its float type; a scalar operand does not
  // stand for an array.
  TestModule u;
  HloInstruction* z = u.Param(0, Sh("c64[3]"));
  HloInstruction* s = u.Param(1, Sh("f32[]"));
  u.Op(HloOpcode::kAbs, Sh("f32[3]"), {z}, "abs");
  HloInstruction* neg = u.Root(u.Op(HloOpcode::kNegate, Sh("f32[]"), {s}, "neg"));
  ExpectOk(u);
  *neg->mutable_shape() = Sh("f32[1]");
  ExpectError(u, "main", "neg", "negate is elementwise: operand 0 f32[] and result f32[1]");
  *neg->mutable_shape() = Tup({Sh("f32[]")});
  ExpectError(u, "main", "neg", "result must be an array");
  *neg->mutable_shape() = Sh("f32[]");
  *s->mutable_shape() = Tup({Sh("f32[]")});
  ExpectError(u, "main", "neg", "operand 0 must be an array, got (f32[])");
}

TEST(VerifierShapeOpsTest, SelectAndClampTakeScalarsWhereXlaDoes) {
  TestModule m;
  HloInstruction* pred = m.Param(0, Sh("pred[4]"));
  HloInstruction* scalar_pred = m.Param(1, Sh("pred[]"));
  HloInstruction* a = m.Param(2, Sh("f32[4]"));
  HloInstruction* lo = m.Param(3, Sh("f32[]"));
  HloInstruction* sel = m.Op(HloOpcode::kSelect, Sh("f32[4]"), {pred, a, a}, "sel");
  m.Op(HloOpcode::kSelect, Sh("f32[4]"), {scalar_pred, a, a}, "sel_scalar");
  HloInstruction* clamp = m.Root(m.Op(HloOpcode::kClamp, Sh("f32[4]"), {lo, a, lo}, "clamp"));
  ExpectOk(m);
  *pred->mutable_shape() = Sh("pred[5]");
  ExpectError(m, "main", "sel", "select is elementwise: operand 0 pred[5] and result f32[4]");
  *pred->mutable_shape() = Sh("pred[4]");
  *sel->mutable_shape() = Sh("f32[]");  // the predicate may be a scalar, not the result
  ExpectError(m, "main", "sel", "select is elementwise: operand 0 pred[4] and result f32[]");
  *sel->mutable_shape() = Sh("f32[4]");
  *lo->mutable_shape() = Sh("f32[2]");
  ExpectError(m, "main", "clamp", "clamp is elementwise: operand 0 f32[2] and result f32[4]");
  *lo->mutable_shape() = Sh("f32[]");
  ExpectOk(m);
  (void)clamp;
}

TEST(VerifierShapeOpsTest, Broadcast) {
  TestModule m;
  HloInstruction* p = m.Param(0, Sh("f32[3]"));
  HloInstruction* b = m.Root(m.Op(HloOpcode::kBroadcast, Sh("f32[2,3]"), {p}, "b"));
  b->set_dimensions({1});
  ExpectOk(m);
  b->set_dimensions({0});
  ExpectError(m, "main", "b", "operand dimension 0 has size 3 but result dimension 0 it maps to "
                              "has size 2");
  b->set_dimensions({2});
  ExpectError(m, "main", "b", "dimensions[0]=2 is out of range for result f32[2,3]");
  b->set_dimensions({0, 1});
  ExpectError(m, "main", "b", "dimensions={0,1} has 2 entries but the operand f32[3] has rank 1");
  b->set_dimensions({1});
  *b->mutable_shape() = Sh("s32[2,3]");
  ExpectError(m, "main", "b", "broadcast changes the element type from f32 to s32");
}

TEST(VerifierShapeOpsTest, MixedPrecisionOption) {
  TestModule m;
  HloInstruction* p = m.Param(0, Sh("f64[3]"));
  HloInstruction* b = m.Root(m.Op(HloOpcode::kBroadcast, Sh("f32[2,3]"), {p}, "b"));
  b->set_dimensions({1});
  ExpectOk(m);  // floating-point precision may differ by default
  HloVerifierOptions exact;
  exact.allow_mixed_precision = false;
  absl::Status s = VerifyHloModule(*m.module, exact);
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(std::string(s.message()), HasSubstr("broadcast changes the element type from f64 to f32"));
  // Integer and floating point never mix.
  *b->mutable_shape() = Sh("s64[2,3]");
  ExpectError(m, "main", "b", "broadcast changes the element type from f64 to s64");
  // The same rule inside tuples.
  TestModule t;
  HloInstruction* x = t.Param(0, Sh("bf16[2]"));
  HloInstruction* tup = t.Root(t.Op(HloOpcode::kTuple, Tup({Sh("f32[2]")}), {x}, "tup"));
  ExpectOk(t);
  EXPECT_FALSE(VerifyHloModule(*t.module, exact).ok());
  *tup->mutable_shape() = Tup({Sh("s16[2]")});
  ExpectError(t, "main", "tup", "element 0 has shape s16[2] but operand %p0 has shape bf16[2]");
}

TEST(VerifierShapeOpsTest, BroadcastOfScalarWithoutDimensions) {
  TestModule m;
  HloInstruction* p = m.Param(0, Sh("f32[]"));
  m.Root(m.Op(HloOpcode::kBroadcast, Sh("f32[2,3]"), {p}, "b"));
  ExpectOk(m);
}

TEST(VerifierShapeOpsTest, Transpose) {
  TestModule m;
  HloInstruction* p = m.Param(0, Sh("f32[2,3,4]"));
  HloInstruction* t = m.Root(m.Op(HloOpcode::kTranspose, Sh("f32[4,2,3]"), {p}, "t"));
  t->set_dimensions({2, 0, 1});
  ExpectOk(m);
  t->set_dimensions({2, 0, 0});
  ExpectError(m, "main", "t", "dimensions={2,0,0} is not a permutation");
  t->set_dimensions({2, 0});
  ExpectError(m, "main", "t", "must be a permutation of the operand's 3 dimensions");
  t->set_dimensions({0, 1, 2});
  ExpectError(m, "main", "t", "result dimension 0 has size 4 but operand dimension 0 has size 2");
  t->set_dimensions({2, 0, 3});
  ExpectError(m, "main", "t", "is not a permutation");
}

TEST(VerifierShapeOpsTest, TransposeChecksDoNotCarryOver) {
  TestModule m;
  HloInstruction* p = m.Param(0, Sh("f32[2,3,4]"));
  HloInstruction* q = m.Param(1, Sh("f32[5,6]"));
  HloInstruction* t3 = m.Op(HloOpcode::kTranspose, Sh("f32[4,2,3]"), {p}, "t3");
  t3->set_dimensions({2, 0, 1});
  HloInstruction* t2 = m.Op(HloOpcode::kTranspose, Sh("f32[6,5]"), {q}, "t2");
  t2->set_dimensions({1, 0});
  m.Root(m.Op(HloOpcode::kTuple, Tup({t3->shape(), t2->shape()}), {t3, t2}, "t"));
  ExpectOk(m);
  t2->set_dimensions({1, 1});
  ExpectError(m, "main", "t2", "dimensions={1,1} is not a permutation");
}

// ---------------------------------------------------------------------------
// Collectives

struct CollectiveModule : TestModule {
  HloInstruction* op = nullptr;
  CollectiveModule(HloOpcode opcode, std::vector<Shape> operands, Shape out) {
    std::vector<HloInstruction*> params;
    for (size_t i = 0; i < operands.size(); ++i) params.push_back(Param(i, operands[i]));
    op = Root(Op(opcode, std::move(out), params, "coll"));
    if (opcode == HloOpcode::kAllReduce) op->SetCalledComputations("to_apply", {AddComputation(*this)});
    if (opcode != HloOpcode::kAllReduce) op->set_dimensions({0});
  }
};

TEST(VerifierAllGatherTest, ExplicitAndIotaGroups) {
  CollectiveModule m(HloOpcode::kAllGather, {Sh("f32[8,16]")}, Sh("f32[32,16]"));
  m.op->set_replica_groups(ReplicaGroups::Explicit({{0, 1, 2, 3}, {4, 5, 6, 7}}));
  ExpectOk(m);
  *m.op->mutable_shape() = Sh("f32[16,16]");
  ExpectError(m, "main", "coll", "result 0 f32[16,16] should have size 8 * 4 (group size) in "
                                 "dimension 0, as operand 0 is f32[8,16]");
  m.op->set_replica_groups(ReplicaGroups::Iota({4, 2, {8}, {}}));
  ExpectOk(m);
  m.op->set_replica_groups(ReplicaGroups::Iota({2, 4, {4, 2}, {1, 0}}));
  ExpectError(m, "main", "coll", "8 * 4 (group size)");
  m.op->set_replica_groups(ReplicaGroups::Iota({2, 3, {8}, {}}));
  ExpectError(m, "main", "coll", "is not a valid iota replica group list");
  // A dimension that is not gathered must not change.
  m.op->set_replica_groups(ReplicaGroups::Explicit({{0, 1}}));
  *m.op->mutable_shape() = Sh("f32[16,8]");
  ExpectError(m, "main", "coll", "differs from operand 0 f32[8,16] in dimension 1");
  m.op->set_dimensions({2});
  *m.op->mutable_shape() = Sh("f32[8,16]");
  ExpectError(m, "main", "coll", "all-gather dimension 2 is out of range for operand 0");
  m.op->set_dimensions({});
  ExpectError(m, "main", "coll", "needs dimensions={d} with exactly one dimension");
}

TEST(VerifierAllGatherTest, ReplicaGroupRules) {
  CollectiveModule m(HloOpcode::kAllGather, {Sh("f32[8]")}, Sh("f32[16]"));
  m.op->set_replica_groups(ReplicaGroups::Explicit({{0, 1}, {2, 3, 4}}));
  ExpectError(m, "main", "coll", "replica groups must all have the same size: group 0 has 2 ids "
                                 "but group 1 has 3");
  m.op->set_replica_groups(ReplicaGroups::Explicit({{0, 1}, {1, 2}}));
  ExpectError(m, "main", "coll", "replica id 1 appears in more than one replica group");
  m.op->set_replica_groups(ReplicaGroups::Explicit({{0, -1}}));
  ExpectError(m, "main", "coll", "replica id -1 is negative");
  m.op->set_replica_groups(ReplicaGroups::Explicit({{}}));
  ExpectError(m, "main", "coll", "replica group 0 is empty");
  // A form we can not interpret skips the size check.
  m.op->set_replica_groups(ReplicaGroups::Raw("mesh[a=2]"));
  *m.op->mutable_shape() = Sh("f32[24]");
  ExpectOk(m);
}

TEST(VerifierAllGatherTest, EmptyGroupsUseTheHeader) {
  CollectiveModule m(HloOpcode::kAllGather, {Sh("f32[8]")}, Sh("f32[24]"));
  m.op->set_replica_groups(ReplicaGroups());
  // No replica_count in the header: unknown, so not checked.
  ExpectOk(m);
  m.module->set_replica_count(3);
  ExpectOk(m);
  m.module->set_replica_count(4);
  ExpectError(m, "main", "coll", "8 * 4 (group size)");
  // Without replica_groups at all, the same rule.
  m.op->set_replica_groups(std::nullopt);
  ExpectError(m, "main", "coll", "8 * 4 (group size)");
  m.module->set_replica_count(3);
  ExpectOk(m);
}

TEST(VerifierAllGatherTest, ChannelIdModes) {
  CollectiveModule m(HloOpcode::kAllGather, {Sh("f32[8]")}, Sh("f32[48]"));
  m.op->set_replica_groups(ReplicaGroups::Explicit({{0, 1}}));
  m.op->set_channel_id(1);
  // Cross-replica-and-partition: 2 replicas x num_partitions; unknown partitions skip.
  ExpectOk(m);
  m.module->set_num_partitions(3);
  ExpectOk(m);  // 8 * 2 * 3 = 48
  m.module->set_num_partitions(2);
  ExpectError(m, "main", "coll", "8 * 4 (group size)");
  m.op->set_use_global_device_ids(false);
  ExpectError(m, "main", "coll", "8 * 4 (group size)");
  // Flattened ids: the group size as written.
  m.op->set_use_global_device_ids(true);
  ExpectError(m, "main", "coll", "8 * 2 (group size)");
  *m.op->mutable_shape() = Sh("f32[16]");
  ExpectOk(m);
  m.op->set_replica_groups(ReplicaGroups());
  ExpectError(m, "main", "coll", "use_global_device_ids=true needs explicit replica_groups");
  m.op->set_replica_groups(ReplicaGroups::Explicit({{0, 1}}));
  m.op->set_channel_id(std::nullopt);
  ExpectError(m, "main", "coll", "use_global_device_ids=true is only valid with a channel_id");
  // Empty groups with a channel: replica_count * num_partitions.
  m.op->set_use_global_device_ids(std::nullopt);
  m.op->set_channel_id(5);
  m.op->set_replica_groups(ReplicaGroups());
  *m.op->mutable_shape() = Sh("f32[48]");
  ExpectOk(m);  // replica_count unknown
  m.module->set_replica_count(3);
  ExpectOk(m);  // 8 * 3 * 2
  m.module->set_replica_count(2);
  ExpectError(m, "main", "coll", "8 * 4 (group size)");
}

TEST(VerifierAllGatherTest, NeuronTokenThreadedForm) {
  CollectiveModule m(HloOpcode::kAllGather, {Sh("bf16[1024,8192]"), Sh("bf16[]")},
                     Tup({Sh("bf16[4096,8192]"), Sh("bf16[]")}));
  m.op->set_replica_groups(ReplicaGroups::Explicit({{0, 1, 2, 3}}));
  ExpectOk(m);
  *m.op->mutable_shape() = Tup({Sh("bf16[4096,8192]"), Sh("bf16[4]")});
  ExpectError(m, "main", "coll", "rank-0 operand 1 must pass through unchanged, but bf16[] "
                                 "becomes bf16[4]");
  *m.op->mutable_shape() = Tup({Sh("bf16[2048,8192]"), Sh("bf16[]")});
  ExpectError(m, "main", "coll", "should have size 1024 * 4 (group size)");
  *m.op->mutable_shape() = Sh("bf16[4096,8192]");
  ExpectError(m, "main", "coll", "with 2 operand(s) the result must be a tuple of 2 shapes");
  *m.op->mutable_shape() = Tup({Sh("bf16[4096,8192]")});
  ExpectError(m, "main", "coll", "with 2 operand(s) the result must be a tuple of 2 shapes");
}

TEST(VerifierAllGatherTest, OperandMustBeArrayAndDynamicIsPermissive) {
  {
    CollectiveModule m(HloOpcode::kAllGather, {Tup({Sh("f32[8]")})}, Sh("f32[16]"));
    m.op->set_replica_groups(ReplicaGroups::Explicit({{0, 1}}));
    ExpectError(m, "main", "coll", "operand 0 must be an array, got (f32[8])");
  }
  {
    CollectiveModule m(HloOpcode::kAllGather, {Tup({Sh("f32[8]")})}, Tup({Sh("f32[16]")}));
    m.op->set_replica_groups(ReplicaGroups::Explicit({{0, 1}}));
    ExpectError(m, "main", "coll", "operand 0 must be an array, got (f32[8])");
  }
  {
    CollectiveModule m(HloOpcode::kAllGather, {Sh("f32[<=8]")}, Sh("f32[<=20]"));
    m.op->set_replica_groups(ReplicaGroups::Explicit({{0, 1}}));
    ExpectOk(m);
  }
}

TEST(VerifierAllGatherTest, SharedGroupsCheckedInEachCollectivesMode) {
  // The three collectives share one immutable group list (the parser gives
  // equal text the same contents); the verifier remembers what it found in
  // the list, but the group size also depends on each collective's mode.
  auto module = ParseHloModule(R"(
HloModule m, replica_count=4, num_partitions=2
ENTRY %main {
  %x = f32[4] parameter(0)
  %a = f32[8] all-gather(%x), channel_id=1, replica_groups={{0,1},{2,3}}, use_global_device_ids=true, dimensions={0}
  %b = f32[16] all-gather(%x), channel_id=2, replica_groups={{0,1},{2,3}}, dimensions={0}
  %c = f32[8] all-gather(%x), replica_groups={{0,1},{2,3}}, dimensions={0}
  ROOT %t = (f32[8], f32[16], f32[8]) tuple(%a, %b, %c)
}
)");
  ASSERT_TRUE(module.ok()) << module.status();
  std::vector<HloInstruction*> insts = (*module)->entry_computation()->instructions();
  HloInstruction* a = insts[1];
  HloInstruction* b = insts[2];
  HloInstruction* c = insts[3];
  ASSERT_EQ(c->name(), "c");
  ASSERT_TRUE(a->replica_groups()->SharesContentsWith(*b->replica_groups()));
  ASSERT_TRUE(a->replica_groups()->SharesContentsWith(*c->replica_groups()));
  absl::Status s = VerifyHloModule(**module);
  EXPECT_TRUE(s.ok()) << s;
  *b->mutable_shape() = Sh("f32[8]");
  EXPECT_THAT(std::string(VerifyHloModule(**module).message()),
              HasSubstr("instruction %b: result 0 f32[8] should have size 4 * 4 (group size)"));
  *b->mutable_shape() = Sh("f32[16]");
  c->set_use_global_device_ids(true);
  EXPECT_EQ(VerifyHloModule(**module).message(),
            "in computation %main, instruction %c: use_global_device_ids=true is only valid "
            "with a channel_id (XLA's group modes)");
  c->set_use_global_device_ids(std::nullopt);
  *c->mutable_shape() = Sh("f32[16]");
  EXPECT_THAT(std::string(VerifyHloModule(**module).message()),
              HasSubstr("instruction %c: result 0 f32[16] should have size 4 * 2 (group size)"));
}

TEST(VerifierAllGatherTest, SharedGroupsCheckedForEachCollectivesKind) {
  // Uneven groups are fine for an all-reduce but not for an all-gather, even
  // when both share the list.
  auto module = ParseHloModule(R"(
HloModule m
%sum (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %add = f32[] add(%a, %b)
}
ENTRY %main {
  %x = f32[4] parameter(0)
  %r = f32[4] all-reduce(%x), replica_groups={{0,1},{2}}, to_apply=%sum
  ROOT %g = f32[8] all-gather(%r), replica_groups={{0,1},{2}}, dimensions={0}
}
)");
  ASSERT_TRUE(module.ok()) << module.status();
  std::vector<HloInstruction*> insts = (*module)->entry_computation()->instructions();
  ASSERT_EQ(insts[2]->name(), "g");
  ASSERT_TRUE(insts[1]->replica_groups()->SharesContentsWith(*insts[2]->replica_groups()));
  EXPECT_EQ(VerifyHloModule(**module).message(),
            "in computation %main, instruction %g: replica groups must all have the same size: "
            "group 0 has 2 ids but group 1 has 1");
  insts[2]->set_replica_groups(ReplicaGroups::Explicit({{0, 1}, {2, 3}}));
  absl::Status s = VerifyHloModule(**module);
  EXPECT_TRUE(s.ok()) << s;
}

TEST(VerifierAllGatherTest, ManySharedGroupListsFarApart) {
  // More distinct lists than the verifier remembers at once, each shared by
  // two collectives far apart: one list's result must never be another's.
  TestModule m;
  HloInstruction* x = m.Param(0, Sh("f32[2]"));
  std::vector<ReplicaGroups> lists;
  for (int64_t size = 1; size <= 12; ++size) {
    std::vector<int64_t> ids;
    for (int64_t id = 0; id < size; ++id) ids.push_back(id);
    lists.push_back(ReplicaGroups::Explicit({ids}));
  }
  std::vector<HloInstruction*> gathers;
  std::vector<Shape> shapes;
  for (int round = 0; round < 2; ++round) {
    for (int64_t i = 0; i < 12; ++i) {
      Shape out = Shape::MakeArray(PrimitiveType::F32, {2 * (i + 1)});
      HloInstruction* g = m.Op(HloOpcode::kAllGather, out, {x}, absl::StrCat("g", round, ".", i));
      g->set_dimensions({0});
      g->set_replica_groups(lists[i]);
      gathers.push_back(g);
      shapes.push_back(g->shape());
    }
  }
  m.Root(m.Op(HloOpcode::kTuple, Tup(shapes), gathers, "t"));
  ExpectOk(m);
  *gathers[12]->mutable_shape() = Sh("f32[4]");
  ExpectError(m, "main", "g1.0", "result 0 f32[4] should have size 2 * 1 (group size)");
  *gathers[12]->mutable_shape() = Sh("f32[2]");
  *gathers[23]->mutable_shape() = Sh("f32[22]");
  ExpectError(m, "main", "g1.11", "result 0 f32[22] should have size 2 * 12 (group size)");
}

TEST(VerifierAllGatherTest, ReplicaIdChecksDoNotCarryOver) {
  // Distinct lists over the same ids, small and huge: each list's ids are
  // checked for repeats on their own.
  TestModule m;
  HloInstruction* x = m.Param(0, Sh("f32[2]"));
  std::vector<std::vector<std::vector<int64_t>>> lists = {{{0, 1}, {2, 3}},
                                                          {{0, 2}, {1, 3}},
                                                          {{0, 3000000}, {1, 2000000}},
                                                          {{2000000, 0}, {1, 3000000}}};
  std::vector<HloInstruction*> gathers;
  for (size_t i = 0; i < lists.size(); ++i) {
    HloInstruction* g = m.Op(HloOpcode::kAllGather, Sh("f32[4]"), {x}, absl::StrCat("g", i));
    g->set_dimensions({0});
    g->set_replica_groups(ReplicaGroups::Explicit(lists[i]));
    gathers.push_back(g);
  }
  m.Root(m.Op(HloOpcode::kTuple, Tup({Sh("f32[4]"), Sh("f32[4]"), Sh("f32[4]"), Sh("f32[4]")}),
              gathers, "t"));
  ExpectOk(m);
  gathers[1]->set_replica_groups(ReplicaGroups::Explicit({{0, 2}, {2, 3}}));
  ExpectError(m, "main", "g1", "replica id 2 appears in more than one replica group");
  gathers[1]->set_replica_groups(ReplicaGroups::Explicit(lists[1]));
  gathers[3]->set_replica_groups(ReplicaGroups::Explicit({{2000000, 0}, {1, 2000000}}));
  ExpectError(m, "main", "g3", "replica id 2000000 appears in more than one replica group");
}

TEST(VerifierAllGatherTest, VariadicThenSingleOperand) {
  // The per-operand results of one collective must not leak into the next.
  TestModule m;
  HloInstruction* x = m.Param(0, Sh("f32[2]"));
  HloInstruction* y = m.Param(1, Sh("f32[3]"));
  HloInstruction* v = m.Op(HloOpcode::kAllGather, Tup({Sh("f32[4]"), Sh("f32[6]")}), {x, y}, "v");
  HloInstruction* g = m.Op(HloOpcode::kAllGather, Sh("f32[6]"), {y}, "g");
  for (HloInstruction* c : {v, g}) {
    c->set_dimensions({0});
    c->set_replica_groups(ReplicaGroups::Explicit({{0, 1}}));
  }
  m.Root(m.Op(HloOpcode::kTuple, Tup({v->shape(), g->shape()}), {v, g}, "t"));
  ExpectOk(m);
  *g->mutable_shape() = Sh("f32[5]");
  ExpectError(m, "main", "g", "result 0 f32[5] should have size 3 * 2 (group size)");
}

TEST(VerifierReduceScatterTest, Sizes) {
  CollectiveModule m(HloOpcode::kReduceScatter, {Sh("f32[32,16]")}, Sh("f32[8,16]"));
  m.op->SetCalledComputations("to_apply", {AddComputation(m)});
  m.op->set_replica_groups(ReplicaGroups::Explicit({{0, 1, 2, 3}}));
  ExpectOk(m);
  *m.op->mutable_shape() = Sh("f32[16,16]");
  ExpectError(m, "main", "coll", "result 0 f32[16,16] should have size 32 / 4 (group size) in "
                                 "dimension 0");
  m.op->set_replica_groups(ReplicaGroups::Explicit({{0, 1, 2}}));
  ExpectError(m, "main", "coll", "operand 0 f32[32,16] dimension 0 of size 32 is not divisible "
                                 "by the group size 3");
  m.op->set_replica_groups(ReplicaGroups::Explicit({{0, 1}, {2}}));
  ExpectError(m, "main", "coll", "replica groups must all have the same size");
  m.op->set_replica_groups(ReplicaGroups::Explicit({{0, 1}}));
  ExpectOk(m);
}

TEST(VerifierReduceScatterTest, Variadic) {
  CollectiveModule m(HloOpcode::kReduceScatter, {Sh("f32[8]"), Sh("bf16[4,2]")},
                     Tup({Sh("f32[4]"), Sh("bf16[2,2]")}));
  m.op->SetCalledComputations("to_apply", {AddComputation(m)});
  m.op->set_replica_groups(ReplicaGroups::Explicit({{0, 1}}));
  ExpectOk(m);
  *m.op->mutable_shape() = Tup({Sh("f32[4]"), Sh("bf16[4,1]")});
  ExpectError(m, "main", "coll", "result 1 bf16[4,1] differs from operand 1 bf16[4,2] in "
                                 "dimension 1");
}

TEST(VerifierAllReduceTest, Shapes) {
  CollectiveModule m(HloOpcode::kAllReduce, {Sh("f32[8]"), Sh("f32[2,2]")},
                     Tup({Sh("f32[8]"), Sh("f32[2,2]")}));
  m.op->set_replica_groups(ReplicaGroups::Explicit({{0, 1}, {2}}));  // need not be uniform
  ExpectOk(m);
  *m.op->mutable_shape() = Tup({Sh("f32[8]"), Sh("f32[4]")});
  ExpectError(m, "main", "coll", "result 1 f32[4] must have the shape of operand 1 f32[2,2]");
  *m.op->mutable_shape() = Tup({Sh("f32[8]"), Sh("f32[2,2]")});
  m.op->ClearCalledComputations();
  ExpectError(m, "main", "coll", "all-reduce needs a to_apply computation");
}

TEST(VerifierAllReduceTest, SingleOperand) {
  CollectiveModule m(HloOpcode::kAllReduce, {Sh("f32[8]")}, Sh("f32[8]"));
  ExpectOk(m);
  *m.op->mutable_shape() = Sh("f32[4]");
  ExpectError(m, "main", "coll", "result 0 f32[4] must have the shape of operand 0 f32[8]");
}

// ---------------------------------------------------------------------------
// Send / recv

struct SendRecvModule : TestModule {
  HloInstruction* send = nullptr;
  HloInstruction* send_done = nullptr;
  HloInstruction* recv = nullptr;
  HloInstruction* recv_done = nullptr;
  SendRecvModule() {
    HloInstruction* data = Param(0, Sh("f32[4]"));
    HloInstruction* tok = Op(HloOpcode::kAfterAll, Sh("token[]"), {}, "tok");
    send = Op(HloOpcode::kSend, Tup({Sh("f32[4]"), Sh("u32[]"), Sh("token[]")}), {data, tok},
              "send");
    send_done = Op(HloOpcode::kSendDone, Sh("token[]"), {send}, "send-done");
    recv = Op(HloOpcode::kRecv, Tup({Sh("f32[2]"), Sh("u32[]"), Sh("token[]")}), {tok}, "recv");
    recv_done = Op(HloOpcode::kRecvDone, Tup({Sh("f32[2]"), Sh("token[]")}), {recv}, "recv-done");
    send->set_channel_id(1);
    send_done->set_channel_id(1);
    recv->set_channel_id(2);
    recv_done->set_channel_id(2);
    Root(Op(HloOpcode::kTuple, Tup({send_done->shape(), recv_done->shape()}),
            {send_done, recv_done}, "t"));
  }
};

TEST(VerifierSendRecvTest, Valid) {
  SendRecvModule m;
  ExpectOk(m);
}

TEST(VerifierSendRecvTest, ChannelIdsMustMatch) {
  SendRecvModule m;
  m.send_done->set_channel_id(7);
  ExpectError(m, "main", "send-done", "channel_id 7 does not match channel_id 1 of its send %send");
  m.send_done->set_channel_id(1);
  m.recv_done->set_channel_id(std::nullopt);
  ExpectError(m, "main", "recv-done", "channel_id none does not match channel_id 2 of its recv");
}

TEST(VerifierSendRecvTest, DoneOperandMustBeTheStart) {
  SendRecvModule m;
  m.send_done->ReplaceOperandWith(0, m.recv);
  ExpectError(m, "main", "send-done",
              "operand %recv must be a send (or a get-tuple-element carrying one through a loop), "
              "not a recv");
  m.send_done->ReplaceOperandWith(0, m.send);
  m.recv_done->ReplaceOperandWith(0, m.send);
  ExpectError(m, "main", "recv-done", "operand %send must be a recv (or a get-tuple-element");
  m.recv_done->ReplaceOperandWith(0, m.send->mutable_operand(0));
  ExpectError(m, "main", "recv-done", "operand %p0 must be a recv (or a get-tuple-element");
}

// XLA's pipelined send/recv: the done ops of a loop body consume the
// send/recv values the previous iteration passed in the loop state.
TEST(VerifierSendRecvTest, PipelinedThroughGetTupleElement) {
  TestModule m;
  Shape recv_value = Tup({Sh("u32[2]"), Sh("u32[]"), Sh("token[]")});
  HloInstruction* state = m.Param(0, Tup({Sh("u32[]"), recv_value}));
  HloInstruction* carried = m.Op(HloOpcode::kGetTupleElement, recv_value, {state}, "recv.0");
  carried->set_tuple_index(1);
  HloInstruction* done =
      m.Op(HloOpcode::kRecvDone, Tup({Sh("u32[2]"), Sh("token[]")}), {carried}, "recv-done.0");
  done->set_channel_id(1);  // not compared: the recv is in another iteration
  m.Root(done);
  ExpectOk(m);
  *done->mutable_shape() = Tup({Sh("u32[3]"), Sh("token[]")});
  ExpectError(m, "main", "recv-done.0", "with the data shape u32[2] of its recv, got");
  *done->mutable_shape() = Tup({Sh("u32[2]"), Sh("token[]")});
  *carried->mutable_shape() = Sh("u32[]");
  state->mutable_shape()->mutable_tuple_shapes()->at(1) = Sh("u32[]");
  ExpectError(m, "main", "recv-done.0", "operand %recv.0 must be a recv value (data, u32[], "
                                        "token[]), got u32[]");
}

TEST(VerifierSendRecvTest, Shapes) {
  {
    SendRecvModule m;
    *m.send->mutable_shape() = Tup({Sh("f32[4]"), Sh("s32[]"), Sh("token[]")});
    ExpectError(m, "main", "send", "send must return (data, u32[], token[])");
  }
  {
    SendRecvModule m;
    *m.send->mutable_shape() = Tup({Sh("f32[5]"), Sh("u32[]"), Sh("token[]")});
    ExpectError(m, "main", "send", "send returns data f32[5] but sends operand f32[4]");
  }
  {
    SendRecvModule m;
    m.send->ReplaceOperandWith(1, m.send->mutable_operand(0));
    ExpectError(m, "main", "send", "operand 1 must be a token, got f32[4]");
  }
  {
    SendRecvModule m;
    *m.recv_done->mutable_shape() = Tup({Sh("f32[3]"), Sh("token[]")});
    ExpectError(m, "main", "recv-done",
                "recv-done must return (data, token[]) with the data shape f32[2] of its recv, "
                "got (f32[3], token[])");
  }
  {
    SendRecvModule m;
    *m.send_done->mutable_shape() = Sh("f32[]");
    ExpectError(m, "main", "send-done", "send-done must return token[], got f32[]");
  }
}

// ---------------------------------------------------------------------------
// Custom-call: anything goes beyond structure.

TEST(VerifierCustomCallTest, AnyShapes) {
  TestModule m;
  HloInstruction* a = m.Param(0, Sh("f32[3]"));
  HloInstruction* t = m.Param(1, Tup({Sh("s8[]"), Sh("token[]")}));
  m.Root(m.main->AddInstruction(HloInstruction::CreateCustomCall(Tup({Sh("bf16[7,7]"), Sh("pred[]")}),
                                                     {a, t, a}, "AwsNeuronCollectiveMatmul")));
  ExpectOk(m);
}

// ---------------------------------------------------------------------------
// From HLO text

absl::Status VerifyText(absl::string_view text) {
  auto module = ParseHloModule(text);
  if (!module.ok()) return module.status();
  return VerifyHloModule(**module);
}

TEST(VerifierTextTest, NeuronTokenThreadedAllGather) {
  constexpr absl::string_view kText = R"(
HloModule neuron, replica_count=4

ENTRY %main (w: bf16[1024,8192], t: (bf16[])) -> bf16[4096,8192] {
  %w = bf16[1024,8192]{1,0} parameter(0)
  %t = (bf16[]) parameter(1)
  %tok = bf16[] get-tuple-element((bf16[]) %t), index=0
  %ag = (bf16[4096,8192]{1,0}, bf16[]) all-gather(bf16[1024,8192]{1,0} %w, bf16[] %tok), replica_groups={{0,1,2,3}}, dimensions={0}
  ROOT %r = bf16[4096,8192]{1,0} get-tuple-element(%ag), index=0
}
)";
  absl::Status ok = VerifyText(kText);
  EXPECT_TRUE(ok.ok()) << ok;
  std::string bad(kText);
  bad.replace(bad.find("(bf16[4096,8192]{1,0}, bf16[]) all-gather"), 30,
              "(bf16[2048,8192]{1,0}, bf16[])");
  absl::Status s = VerifyText(bad);
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(std::string(s.message()),
              HasSubstr("in computation %main, instruction %ag: result 0 bf16[2048,8192] should "
                        "have size 1024 * 4 (group size) in dimension 0"));
}

TEST(VerifierTextTest, DotContractingMismatch) {
  absl::Status s = VerifyText(R"(
HloModule m
ENTRY %main {
  %a = f32[2,128] parameter(0)
  %b = f32[64,32] parameter(1)
  ROOT %dot.3 = f32[2,32] dot(%a, %b), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}
)");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(),
            "in computation %main, instruction %dot.3: lhs contracting dimension 1 has size 128 "
            "but rhs contracting dimension 0 has size 64");
}

TEST(VerifierTextTest, WhileAndReduceScatter) {
  constexpr absl::string_view kText = R"(
HloModule m, replica_count=2, num_partitions=2

%sum (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %add = f32[] add(%a, %b)
}

%cond (p: (s32[], f32[8])) -> pred[] {
  %p = (s32[], f32[8]) parameter(0)
  %i = s32[] get-tuple-element(%p), index=0
  %n = s32[] constant(4)
  ROOT %lt = pred[] compare(%i, %n), direction=LT
}

%body (p: (s32[], f32[8])) -> (s32[], f32[8]) {
  %p = (s32[], f32[8]) parameter(0)
  %i = s32[] get-tuple-element(%p), index=0
  %x = f32[8] get-tuple-element(%p), index=1
  %rs = f32[2] reduce-scatter(%x), channel_id=1, replica_groups={{0,1}}, dimensions={0}, to_apply=%sum
  %ag = f32[8] all-gather(%rs), channel_id=2, replica_groups={{0,1}}, dimensions={0}
  %one = s32[] constant(1)
  %next = s32[] add(%i, %one)
  ROOT %t = (s32[], f32[8]) tuple(%next, %ag)
}

ENTRY %main (x: f32[8]) -> f32[8] {
  %x = f32[8] parameter(0)
  %zero = s32[] constant(0)
  %init = (s32[], f32[8]) tuple(%zero, %x)
  %loop = (s32[], f32[8]) while(%init), condition=%cond, body=%body
  ROOT %out = f32[8] get-tuple-element(%loop), index=1
}
)";
  // channel_id without use_global_device_ids: 2 replicas x 2 partitions = 4.
  absl::Status ok = VerifyText(kText);
  EXPECT_TRUE(ok.ok()) << ok;
  std::string no_partitions(kText);
  no_partitions.replace(no_partitions.find(", num_partitions=2"), 18, ", num_partitions=4");
  absl::Status s = VerifyText(no_partitions);
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(std::string(s.message()),
              HasSubstr("in computation %body, instruction %rs: result 0 f32[2] should have size "
                        "8 / 8 (group size)"));
}

}  // namespace
}  // namespace hilo

namespace hilo {
namespace {

// Issue 16 (6): XLA requires the call graph to be a DAG. A cycle longer than
// a self-call (x calls y calls x; two while bodies calling each other) is
// rejected, naming the computations of the cycle in call order.
TEST(VerifierCallGraphTest, CyclesAreRejectedNamingTheComputations) {
  auto module = ParseHloModule(R"(
HloModule m
%x (a: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  ROOT %cy = f32[] call(f32[] %a), to_apply=%y
}
%y (b: f32[]) -> f32[] {
  %b = f32[] parameter(0)
  ROOT %cx = f32[] call(f32[] %b), to_apply=%x
}
ENTRY %main (p: f32[]) -> f32[] {
  %p = f32[] parameter(0)
  ROOT %c = f32[] call(f32[] %p), to_apply=%x
}
)");
  ASSERT_TRUE(module.ok()) << module.status();
  EXPECT_EQ(VerifyHloModule(**module).message(),
            "in computation %y, instruction %cx: calls %x, which closes a cycle in the call graph "
            "(%x -> %y -> %x); the call graph must be acyclic");

  // Two while loops whose bodies run each other.
  module = ParseHloModule(R"(
HloModule m
%cond (c: s32[]) -> pred[] {
  %c = s32[] parameter(0)
  %k = s32[] constant(3)
  ROOT %lt = pred[] compare(s32[] %c, s32[] %k), direction=LT
}
%body1 (b1: s32[]) -> s32[] {
  %b1 = s32[] parameter(0)
  ROOT %w2 = s32[] while(s32[] %b1), condition=%cond, body=%body2
}
%body2 (b2: s32[]) -> s32[] {
  %b2 = s32[] parameter(0)
  ROOT %w1 = s32[] while(s32[] %b2), condition=%cond, body=%body1
}
ENTRY %main (p: s32[]) -> s32[] {
  %p = s32[] parameter(0)
  ROOT %w = s32[] while(s32[] %p), condition=%cond, body=%body1
}
)");
  ASSERT_TRUE(module.ok()) << module.status();
  EXPECT_THAT(std::string(VerifyHloModule(**module).message()),
              HasSubstr("closes a cycle in the call graph (%body1 -> %body2 -> %body1)"));

  // A diamond (two callers of one computation) is no cycle.
  module = ParseHloModule(R"(
HloModule m
%leaf (a: f32[]) -> f32[] {
  ROOT %a = f32[] parameter(0)
}
%l (b: f32[]) -> f32[] {
  %b = f32[] parameter(0)
  ROOT %c = f32[] call(f32[] %b), to_apply=%leaf
}
%r (d: f32[]) -> f32[] {
  %d = f32[] parameter(0)
  ROOT %e = f32[] call(f32[] %d), to_apply=%leaf
}
ENTRY %main (p: f32[]) -> (f32[], f32[]) {
  %p = f32[] parameter(0)
  %x = f32[] call(f32[] %p), to_apply=%l
  %y = f32[] call(f32[] %p), to_apply=%r
  ROOT %t = (f32[], f32[]) tuple(%x, %y)
}
)");
  ASSERT_TRUE(module.ok()) << module.status();
  EXPECT_TRUE(VerifyHloModule(**module).ok()) << VerifyHloModule(**module);
}

// A chain of 100,000 computations, each calling the next, closed into a
// cycle: found without recursion (a recursive DFS would overflow the stack)
// and in linear time.
TEST(VerifierCallGraphTest, LongCallChainCycleIsFoundWithoutRecursion) {
  constexpr int kN = 100000;
  std::string text = "HloModule m\n";
  for (int i = 0; i < kN; ++i) {
    absl::StrAppend(&text, "%c", i, " (a", i, ": f32[]) -> f32[] {\n  %a", i,
                    " = f32[] parameter(0)\n  ROOT %k", i, " = f32[] call(f32[] %a", i,
                    "), to_apply=%c", (i + 1) % kN, "\n}\n");
  }
  absl::StrAppend(&text,
                  "ENTRY %main (p: f32[]) -> f32[] {\n  %p = f32[] parameter(0)\n  ROOT %r = "
                  "f32[] call(f32[] %p), to_apply=%c0\n}\n");
  auto module = ParseHloModule(text);
  ASSERT_TRUE(module.ok()) << module.status();
  const std::string message(VerifyHloModule(**module).message());
  EXPECT_THAT(message, HasSubstr("in computation %c99999, instruction %k99999: calls %c0, which "
                                 "closes a cycle in the call graph (%c0 -> %c1 -> %c2 -> "));
  EXPECT_THAT(message, HasSubstr("%c99999 -> %c0)"));
}

}  // namespace
}  // namespace hilo

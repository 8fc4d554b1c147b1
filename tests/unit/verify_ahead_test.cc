// Checking ahead (HloShapePrecheck, with ParseHloModule's `finished`): which
// instructions the parser reports as final, and that verifying with the
// checks that ran ahead gives exactly the verdict of verifying afterwards,
// for valid modules and for modules invalid in per-instruction checks, in
// whole-module checks, and in both (the whole-module problem reported, as
// verifying afterwards does, although the shape check failed first).
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "hilo/analysis/hlo_verifier.h"
#include "hilo/ir/hlo_computation.h"
#include "hilo/ir/hlo_instruction.h"
#include "hilo/ir/hlo_module.h"
#include "hilo/text/parser.h"

namespace hilo {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// The text parsed as hilo-opt does when it checks ahead: each reported
// instruction that may be checked ahead goes to the precheck (here on the
// same thread).
struct Parsed {
  absl::StatusOr<std::unique_ptr<HloModule>> module;
  std::vector<std::string> reported;  // names, in order
  std::vector<size_t> batches;        // sizes of the batches told
  int ends = 0;                       // calls with parse_over
  HloShapePrecheck precheck;
};

std::unique_ptr<Parsed> ParseAhead(const std::string& text) {
  auto parsed = std::make_unique<Parsed>();
  Parsed* p = parsed.get();
  p->module = ParseHloModule(
      text, "t.hlo", {},
      [p](absl::Span<const HloInstruction* const> batch, bool parse_over) {
        EXPECT_EQ(p->ends, 0) << "told after the end";
        p->batches.push_back(batch.size());
        for (const HloInstruction* inst : batch) {
          p->reported.push_back(std::string(inst->name()));
          if (HloShapePrecheck::MayCheckAhead(*inst)) p->precheck.Check(*inst);
        }
        if (parse_over) ++p->ends;
      });
  return parsed;
}

HloInstruction* Find(const HloModule& module, absl::string_view name) {
  for (HloInstruction* inst : module.entry_computation()->instructions()) {
    if (inst->name() == name) return inst;
  }
  return nullptr;
}

// The verdict with the checks run ahead equals that of VerifyHloModule:
// code, message and the location payload.
void ExpectSameVerdict(const Parsed& p) {
  ASSERT_TRUE(p.module.ok()) << p.module.status();
  const absl::Status after = VerifyHloModule(**p.module);
  const absl::Status ahead = VerifyHloModule(**p.module, p.precheck);
  EXPECT_EQ(ahead, after);
  EXPECT_EQ(ahead.message(), after.message());
  const std::optional<VerifierLocation> a = GetVerifierLocation(ahead);
  const std::optional<VerifierLocation> b = GetVerifierLocation(after);
  ASSERT_EQ(a.has_value(), b.has_value());
  if (a.has_value()) {
    EXPECT_EQ(a->computation, b->computation);
    EXPECT_EQ(a->instruction, b->instruction);
  }
}

constexpr char kValid[] = R"(HloModule m
add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}
ENTRY e {
  p = f32[4,8] parameter(0)
  w = f32[8,8] parameter(1)
  g = f32[16,8] all-gather(w), replica_groups={{0,1}}, dimensions={0}
  d = f32[4,8] dot(p, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  r = f32[32] reshape(d)
  ar = f32[32] all-reduce(r), replica_groups={{0,1}}, to_apply=add
  ROOT t = (f32[32], f32[16,8]) tuple(ar, g)
}
)";

TEST(VerifyAheadTest, ParserReportsFinalInstructionsThenTheEnd) {
  std::unique_ptr<Parsed> p = ParseAhead(kValid);
  ASSERT_TRUE(p->module.ok()) << p->module.status();
  EXPECT_THAT(p->reported, ElementsAre("x", "y", "s", "p", "w", "g", "d", "r", "ar", "t"));
  EXPECT_EQ(p->ends, 1);
  EXPECT_EQ(p->precheck.passed_count(), 10);
  ExpectSameVerdict(*p);
  EXPECT_TRUE(VerifyHloModule(**p->module, p->precheck).ok());
}

TEST(VerifyAheadTest, ToldInBatchesThenTheRestWithTheEnd) {
  // kFinishedBatch * 2 + 5 final instructions: two full batches, then the
  // last five with parse_over, in parse order.
  const size_t n = kFinishedBatch * 2 + 5;
  std::string text = "HloModule m\nENTRY e {\n  i0 = f32[4] parameter(0)\n";
  for (size_t i = 1; i < n; ++i) {
    absl::StrAppend(&text, "  ", i + 1 == n ? "ROOT " : "", "i", i, " = f32[4] negate(i", i - 1,
                    ")\n");
  }
  text += "}\n";
  std::unique_ptr<Parsed> p = ParseAhead(text);
  ASSERT_TRUE(p->module.ok()) << p->module.status();
  EXPECT_THAT(p->batches, ElementsAre(kFinishedBatch, kFinishedBatch, 5));
  EXPECT_EQ(p->ends, 1);
  ASSERT_EQ(p->reported.size(), n);
  for (size_t i = 0; i < n; ++i) EXPECT_EQ(p->reported[i], absl::StrCat("i", i));
  EXPECT_EQ(p->precheck.passed_count(), static_cast<int64_t>(n));
  ExpectSameVerdict(*p);
}

TEST(VerifyAheadTest, NotReportedWhatTheParseStillChanges) {
  // A forward reference (b before a): from there on, operands wait for the
  // end of the computation, so nothing after it is reported. A call to a
  // computation defined later and an omitted (inferred) shape neither.
  std::unique_ptr<Parsed> p = ParseAhead(R"(HloModule m
ENTRY e {
  p = f32[4] parameter(0)
  n = f32[4] negate(p)
  c = f32[4] call(n), to_apply=later
  t = tuple(n)
  u = f32[4] negate(n)
  ROOT r = f32[4] add(n, u)
}
later {
  q = f32[4] parameter(0)
  b = f32[4] negate(a)
  a = f32[4] negate(q)
  ROOT z = f32[4] add(a, b)
}
)");
  ASSERT_TRUE(p->module.ok()) << p->module.status();
  EXPECT_THAT(p->reported, ElementsAre("p", "n", "q"));
  EXPECT_EQ(p->ends, 1);
  ExpectSameVerdict(*p);
}

TEST(VerifyAheadTest, EndIsReportedAfterAParseError) {
  std::unique_ptr<Parsed> p = ParseAhead("HloModule m\nENTRY e {\n  p = f32[4] parameter(0)\n  ROOT n = f32[4] negate(p, \n}\n");
  EXPECT_FALSE(p->module.ok());
  EXPECT_THAT(p->reported, ElementsAre("p"));
  EXPECT_EQ(p->ends, 1);
}

TEST(VerifyAheadTest, SkipsOnlyWhatPassedAhead) {
  // Changed after its check passed ahead (which the contract forbids): the
  // verification with the precheck trusts the check, the one without it
  // does not. This is what makes the precheck save time.
  std::unique_ptr<Parsed> p = ParseAhead(kValid);
  ASSERT_TRUE(p->module.ok());
  HloInstruction* r = Find(**p->module, "r");
  ASSERT_NE(r, nullptr);
  r->set_shape(SharedShape(Shape::MakeArray(PrimitiveType::F32, {33})));
  EXPECT_THAT(VerifyHloModule(**p->module).message(), HasSubstr("changes the element count"));
  // (The all-reduce reading r's shape had passed ahead too.)
  EXPECT_TRUE(VerifyHloModule(**p->module, p->precheck).ok());
  // A precheck of nothing skips nothing.
  HloShapePrecheck none;
  EXPECT_THAT(VerifyHloModule(**p->module, none).message(), HasSubstr("changes the element count"));
}

TEST(VerifyAheadTest, PerInstructionProblem) {
  std::unique_ptr<Parsed> p = ParseAhead(R"(HloModule m
ENTRY e {
  p = f32[4] parameter(0)
  n = f32[4] negate(p)
  r = f32[7] reshape(n)
  d = f32[4,4] dot(p, p), lhs_contracting_dims={0}, rhs_contracting_dims={0}
  ROOT t = (f32[7], f32[4,4]) tuple(r, d)
}
)");
  ExpectSameVerdict(*p);
  EXPECT_THAT(VerifyHloModule(**p->module).message(), HasSubstr("instruction %r: reshape"));
  EXPECT_EQ(p->precheck.passed_count(), 3);  // p, n, t; not r, not d
}

TEST(VerifyAheadTest, WholeModuleProblemAfterAShapeProblemFoundAhead) {
  // The reshape in `first` fails its check ahead, while the module is
  // parsed; the parameters of `second`, parsed later, are numbered 0 and 2.
  // Structure comes before shapes: the parameter is what is reported, with
  // or without the checks ahead.
  std::unique_ptr<Parsed> p = ParseAhead(R"(HloModule m
first {
  a = f32[4] parameter(0)
  ROOT r = f32[7] reshape(a)
}
ENTRY second {
  p0 = f32[4] parameter(0)
  p2 = f32[4] parameter(2)
  c = f32[7] call(p0), to_apply=first
  ROOT t = (f32[7], f32[4]) tuple(c, p2)
}
)");
  ExpectSameVerdict(*p);
  EXPECT_THAT(VerifyHloModule(**p->module, p->precheck).message(),
              HasSubstr("instruction %p2: parameter number 2 is out of range"));
}

TEST(VerifyAheadTest, WholeModuleProblems) {
  // A call-graph cycle: a computation calling itself through another.
  std::unique_ptr<Parsed> p = ParseAhead(R"(HloModule m
a {
  x = f32[] parameter(0)
  ROOT c1 = f32[] call(x), to_apply=b
}
b {
  y = f32[] parameter(0)
  ROOT c2 = f32[] call(y), to_apply=a
}
ENTRY e {
  z = f32[] parameter(0)
  ROOT k = f32[] call(z), to_apply=a
}
)");
  ExpectSameVerdict(*p);
  EXPECT_THAT(VerifyHloModule(**p->module).message(), HasSubstr("closes a cycle in the call graph"));
}

TEST(VerifyAheadTest, AGeneratedLayerChecksAheadAndVerifies) {
  // Collectives and dots whose attribute block exists are checked ahead;
  // an all-reduce without attributes (no block yet: a user added later may
  // allocate one) is not.
  std::unique_ptr<Parsed> p = ParseAhead(R"(HloModule m
add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}
ENTRY e {
  p = f32[8] parameter(0)
  ar = f32[8] all-reduce(p), to_apply=add
  ROOT n = f32[8] negate(ar)
}
)");
  ASSERT_TRUE(p->module.ok()) << p->module.status();
  const HloInstruction* ar = Find(**p->module, "ar");
  ASSERT_NE(ar, nullptr);
  EXPECT_EQ(HloShapePrecheck::MayCheckAhead(*ar), ar->has_uncommon_block());
  ExpectSameVerdict(*p);
}

}  // namespace
}  // namespace hilo

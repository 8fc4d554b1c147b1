// The equivalence check on what real dumps contain (issue 17): opaque parts
// as uninterpreted functions (a pass that changes their inputs is still
// caught), Neuron's token-threaded collectives, and the limits that make a
// check end UNDECIDED with a reason instead of running out of memory or time.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "eval_test_util.h"
#include "hilo/eval/equivalence.h"
#include "hilo/eval/interpreter.h"
#include "hilo/eval/progress_line.h"
#include "hilo/eval/structural.h"
#include "hilo/eval/uninterpreted.h"
#include "hilo/text/parser.h"

namespace hilo {
namespace eval {
namespace {

using ::testing::HasSubstr;
using testing_util::kAdd;
using testing_util::Parse;

// Options that compare on numbers (the modules below are often the same
// module twice, which the structural check would decide without running).
EquivalenceOptions Running() {
  EquivalenceOptions options;
  options.structural = false;
  return options;
}

EquivalenceReport Check(const std::string& before, const std::string& after,
                        const EquivalenceOptions& options = Running()) {
  return testing_util::CheckTexts(before, after, options);
}

// A Neuron-like module: an opaque transfer custom-call on each of 3
// parameters, an elided constant, an rng-bit-generator, around an all-reduce.
std::string Opaque(absl::string_view transfer_operand) {
  return absl::StrCat(R"(
HloModule m, replica_count=2
)", kAdd, R"(
ENTRY e {
  p0 = f32[4] parameter(0)
  p1 = f32[4] parameter(1)
  p2 = f32[4] parameter(2)
  one = f32[4] constant({1, 1, 1, 1})
  shifted = f32[4] add(p0, one)
  t0 = f32[4] custom-call()", transfer_operand, R"(), custom_call_target="AwsNeuronTransferWithStaticRing"
  t1 = f32[4] custom-call(p1), custom_call_target="AwsNeuronTransferWithStaticRing"
  t2 = f32[4] custom-call(p2), custom_call_target="AwsNeuronTransferWithStaticRing"
  w = f32[4] constant({...})
  state = u64[2] constant({7, 9})
  rng = (u64[2], u32[4]) rng-bit-generator(state), algorithm=rng_default
  bits = u32[4] get-tuple-element(rng), index=1
  fbits = f32[4] convert(bits)
  s0 = f32[4] add(t0, t1)
  s1 = f32[4] multiply(s0, t2)
  s2 = f32[4] add(s1, w)
  s3 = f32[4] add(s2, fbits)
  ROOT ar = f32[4] all-reduce(s3), replica_groups={{0,1}}, to_apply=add
})");
}

TEST(EvalUninterpreted, SameOpaquePartsAreEquivalentModuloThem) {
  EquivalenceReport r = Check(Opaque("p0"), Opaque("p0"));
  EXPECT_EQ(r.verdict, Verdict::kEquivalent) << r.ToString();
  EXPECT_EQ(r.uninterpreted.at("custom-call AwsNeuronTransferWithStaticRing"), 3);
  EXPECT_EQ(r.uninterpreted.at("elided constant"), 1);
  EXPECT_EQ(r.uninterpreted.at("rng-bit-generator"), 1);
  EXPECT_THAT(r.ToString(),
              HasSubstr("EQUIVALENT modulo 3 uninterpreted custom-calls AwsNeuronTransferWithStaticRing, "
                        "1 elided constant, 1 uninterpreted rng-bit-generator"));
}

TEST(EvalUninterpreted, APassThatChangesAnOpaqueInputIsCaught) {
  EquivalenceReport r = Check(Opaque("p0"), Opaque("shifted"));
  EXPECT_EQ(r.verdict, Verdict::kNotEquivalent) << r.ToString();
  EXPECT_THAT(r.ToString(), HasSubstr("NOT EQUIVALENT (with 3 uninterpreted"));
}

TEST(EvalUninterpreted, ValueDependsOnOperandsNotOnTheName) {
  auto m = Parse(R"(
HloModule m
ENTRY e {
  a = f32[3] parameter(0)
  b = f32[3] parameter(1)
  x = f32[3] custom-call(a), custom_call_target="Foo"
  y = f32[3] custom-call(a), custom_call_target="Foo"
  z = f32[3] custom-call(b), custom_call_target="Foo"
  o = f32[3] custom-call(a), custom_call_target="Bar"
  ROOT t = (f32[3], f32[3], f32[3], f32[3]) tuple(x, y, z, o)
})");
  ASSERT_NE(m, nullptr);
  InterpreterOptions options;
  options.inputs_text = "param 0 device * : 1 2 3\nparam 1 device * : 1 2 4\n";
  auto r = RunModule(*m, options);
  ASSERT_TRUE(r.ok()) << r.status();
  const auto& e = r->outputs[0].elements();
  EXPECT_TRUE(e[0].array().IdenticalTo(e[1].array()));   // same target and operands
  EXPECT_FALSE(e[0].array().IdenticalTo(e[2].array()));  // one operand element differs
  EXPECT_FALSE(e[0].array().IdenticalTo(e[3].array()));  // another target
  EXPECT_EQ(r->uninterpreted.at("custom-call Foo"), 3);
}

TEST(EvalUninterpreted, ElidedConstantsDifferByName) {
  auto m = Parse(R"(
HloModule m
ENTRY e {
  c1 = f32[3] constant({...})
  c2 = f32[3] constant({...})
  ROOT t = (f32[3], f32[3]) tuple(c1, c2)
})");
  ASSERT_NE(m, nullptr);
  auto r = RunModule(*m, {});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_FALSE(r->outputs[0].elements()[0].array().IdenticalTo(r->outputs[0].elements()[1].array()));
}

// NxD's overlapped collectives thread a rank-0 "token" through: it passes
// through; the data operand is reduced (and scattered) as usual.
TEST(EvalTokenThreaded, ReduceScatterAndAllReducePassTheTokenThrough) {
  auto m = Parse(absl::StrCat(R"(
HloModule m, replica_count=2
)", kAdd, R"(
ENTRY e {
  p = f32[4] parameter(0)
  tok = bf16[] parameter(1)
  rs = (f32[2], bf16[]) reduce-scatter(p, tok), replica_groups={{0,1}}, dimensions={0}, to_apply=add
  d = f32[2] get-tuple-element(rs), index=0
  t = bf16[] get-tuple-element(rs), index=1
  ar = (f32[2], bf16[]) all-reduce(d, t), replica_groups={{0,1}}, to_apply=add
  ROOT out = (f32[2], bf16[]) copy(ar)
})"));
  ASSERT_NE(m, nullptr);
  InterpreterOptions options;
  options.inputs_text =
      "param 0 device 0 : 1 2 3 4\nparam 0 device 1 : 10 20 30 40\n"
      "param 1 device 0 : 5\nparam 1 device 1 : 6\n";
  auto r = RunModule(*m, options);
  ASSERT_TRUE(r.ok()) << r.status();
  // reduce-scatter: device 0 gets {11, 22}, device 1 {33, 44}; all-reduce sums them.
  for (int d = 0; d < 2; ++d) {
    const auto& e = r->outputs[d].elements();
    EXPECT_EQ(e[0].array().f(), (std::vector<double>{44, 66}));
    EXPECT_EQ(e[1].array().f()[0], d == 0 ? 5 : 6);
  }
}

const char kBig[] = R"(
HloModule m, replica_count=4
ENTRY e {
  a = f32[1024] parameter(0)
  ROOT b = f32[1024,1024] broadcast(a), dimensions={1}
})";

TEST(EvalBudgets, StaticLimitsAreCheckedBeforeAnythingRuns) {
  EquivalenceOptions options = Running();
  options.interpreter.max_array_elements = 100000;
  EquivalenceReport r = Check(kBig, kBig, options);
  EXPECT_EQ(r.verdict, Verdict::kUndecided);
  EXPECT_THAT(r.ToString(), HasSubstr("UNDECIDED: cannot decide because broadcast %b: array f32[1024,1024]"));
  EXPECT_THAT(r.undecided_reason, HasSubstr("--max-array-elements"));
  EXPECT_EQ(r.instructions_executed, 0);

  options = Running();
  options.interpreter.max_memory_bytes = 16 << 20;  // 4 devices x 8 MiB needed
  r = Check(kBig, kBig, options);
  EXPECT_EQ(r.verdict, Verdict::kUndecided);
  EXPECT_THAT(r.undecided_reason, HasSubstr("alone takes 32.0 MiB on 4 devices"));
  EXPECT_THAT(r.undecided_reason, HasSubstr("--max-memory"));

  options = Running();
  options.interpreter.max_work = 1 << 20;
  r = Check(kBig, kBig, options);
  EXPECT_EQ(r.verdict, Verdict::kUndecided);
  EXPECT_THAT(r.undecided_reason, HasSubstr("--max-work"));

  r = Check(kBig, kBig);
  EXPECT_EQ(r.verdict, Verdict::kEquivalent) << r.ToString();
  EXPECT_GE(r.peak_value_bytes, int64_t{2} * 4 * 1024 * 1024 * 8);  // both runs' outputs
}

TEST(EvalBudgets, TheMemoryLimitCountsAnInstructionsResultBeforeItRuns) {
  // Every array passes the static checks (the largest, 6 MiB, is under the
  // 7 MiB limit); the concatenate's 6 MiB result on top of its three 2 MiB
  // operands does not: it is refused before it runs.
  const std::string hlo = R"(
HloModule m
ENTRY e {
  p = f32[1024] parameter(0)
  b1 = f32[256,1024] broadcast(p), dimensions={1}
  b2 = f32[256,1024] broadcast(p), dimensions={1}
  b3 = f32[256,1024] broadcast(p), dimensions={1}
  ROOT c = f32[768,1024] concatenate(b1, b2, b3), dimensions={0}
})";
  EquivalenceOptions options = Running();
  options.interpreter.max_memory_bytes = 7 << 20;
  EquivalenceReport r = Check(hlo, hlo, options);
  EXPECT_EQ(r.verdict, Verdict::kUndecided);
  EXPECT_THAT(r.undecided_reason, HasSubstr("the values held would reach 12.0 MiB with this instruction's "
                                            "result, more than the limit of 7.0 MiB"));
  EXPECT_THAT(r.undecided_reason, HasSubstr("at concatenate %c"));
  EXPECT_LE(r.peak_value_bytes, int64_t{7} << 20);
}

TEST(EvalBudgets, ALongLoopRunsIntoTheWorkBudgetAndTheTimeBudget) {
  const std::string hlo = "HloModule m\n" +
                          testing_util::CountedLoop("f32[1000]", 1000000, "  next = f32[1000] add(v, v)") + R"(
ENTRY e {
  z = s32[] constant(0)
  p = f32[1000] parameter(0)
  init = (s32[], f32[1000]) tuple(z, p)
  ROOT w = (s32[], f32[1000]) while(init), condition=cond, body=body
})";
  EquivalenceOptions options = Running();
  options.interpreter.max_work = 10000000;
  EquivalenceReport r = Check(hlo, hlo, options);
  EXPECT_EQ(r.verdict, Verdict::kUndecided);
  EXPECT_THAT(r.undecided_reason, HasSubstr("more work than the budget"));

  options = Running();
  options.time_budget_seconds = 0.2;
  const auto start = std::chrono::steady_clock::now();
  r = Check(hlo, hlo, options);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  EXPECT_EQ(r.verdict, Verdict::kUndecided);
  EXPECT_THAT(r.ToString(), HasSubstr("UNDECIDED: cannot decide because the time budget of 0.2 s"));
}

std::string Collective(absl::string_view attrs, absl::string_view config) {
  return absl::StrCat(R"(
HloModule m, replica_count=2
)", kAdd, R"(
ENTRY e {
  p = f32[4] parameter(0)
  c = f32[4] custom-call(p), custom_call_target="Foo", backend_config=")", config, R"("
  ROOT ar = f32[4] all-reduce(c), replica_groups={{0,1}}, to_apply=add)", attrs, R"(
})");
}

TEST(EvalStructural, AttributesThatCannotChangeAValueAreSetAside) {
  const std::string plain = Collective("", "k=1");
  const std::string hinted = Collective(
      R"(, metadata={op_name="x, y"}, frontend_attributes={stream_id="3"}, backend_config="q")", "k=1");
  EquivalenceReport r = Check(plain, hinted, {});
  EXPECT_EQ(r.verdict, Verdict::kEquivalent);
  EXPECT_TRUE(r.structurally_identical);
  EXPECT_EQ(r.instructions_executed, 0);
  EXPECT_THAT(r.ToString(), HasSubstr("structurally identical"));
  // Channel ids: the value is set aside, the presence (group mode) is not.
  auto a = Parse(Collective(", channel_id=1, use_global_device_ids=true", "k=1"));
  auto b = Parse(Collective(", channel_id=7, use_global_device_ids=true", "k=1"));
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_FALSE(StructuralDifference(*a, *b, 1).has_value());
  // With one partition the group mode does not depend on the channel id.
  auto none = Parse(plain);
  EXPECT_FALSE(StructuralDifference(*none, *a, 1).has_value());
  EXPECT_THAT(StructuralDifference(*none, *a, 2).value_or(""), HasSubstr("%ar differs"));
}

TEST(EvalStructural, AnythingElseIsComparedOnNumbers) {
  // A custom-call's backend_config is its contract: a change is a change.
  EquivalenceReport r = Check(Collective("", "k=1"), Collective("", "k=2"), {});
  EXPECT_FALSE(r.structurally_identical);
  EXPECT_EQ(r.verdict, Verdict::kNotEquivalent) << r.ToString();
  // --check-by-running: numbers even for identical modules.
  r = Check(Collective("", "k=1"), Collective("", "k=1"), Running());
  EXPECT_FALSE(r.structurally_identical);
  EXPECT_GT(r.instructions_executed, 0);
  EXPECT_EQ(r.verdict, Verdict::kEquivalent);
}

// The progress line (issue 17 item 8), with an injected clock and stream:
// nothing during the first second, then one line redrawn in place with an
// estimate, erased at the end; nothing at all when disabled (not a
// terminal).
TEST(EvalProgressLine, DrawnAfterASecondRedrawnInPlaceAndErased) {
  char* buffer = nullptr;
  size_t size = 0;
  std::FILE* stream = open_memstream(&buffer, &size);
  ASSERT_NE(stream, nullptr);
  double now = 0.2;
  {
    ProgressLine line(true, stream, [&now] { return now; });
    line.Update("module before the passes", 8, 100, 0);
    std::fflush(stream);
    EXPECT_EQ(size, 0u);  // under a second: silent
    EXPECT_FALSE(line.drawn());
    now = 1.5;
    line.Update("module before the passes", 8, 1000, 0);
    now = 3.0;
    line.Update("module after the passes", 8, 500, 1000);  // half done after 3 s
    EXPECT_TRUE(line.drawn());
  }
  std::fclose(stream);
  const std::string out(buffer, size);
  std::free(buffer);
  EXPECT_EQ(out,
            "\rchecking equivalence: module before the passes, 8 devices, 1000 instructions, 1.5 s\x1b[K"
            "\rchecking equivalence: module after the passes, 8 devices, 500 instructions, 3.0 s, about 3 s "
            "left\x1b[K"
            "\r\x1b[K");
}

TEST(EvalProgressLine, SilentWhenDisabled) {
  char* buffer = nullptr;
  size_t size = 0;
  std::FILE* stream = open_memstream(&buffer, &size);
  ASSERT_NE(stream, nullptr);
  {
    ProgressLine line(false, stream, [] { return 10.0; });
    line.Update("module before the passes", 8, 1000, 0);
    EXPECT_FALSE(line.drawn());
  }
  std::fclose(stream);
  EXPECT_EQ(size, 0u);
  std::free(buffer);
}

}  // namespace
}  // namespace eval
}  // namespace hilo

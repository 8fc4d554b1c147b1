// Sampling along independent dimensions (sampling.h): a changed region too
// large for the limits is shrunk along a dimension every instruction treats
// row by row, the verdict says so, a wrong rewrite in a sampled region is
// still NOT EQUIVALENT, and dimensions that are not independent are refused
// with the instruction that mixes them.
#include "hilo/eval/sampling.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "eval_test_util.h"
#include "hilo/eval/equivalence.h"

namespace hilo {
namespace eval {
namespace {

using ::testing::HasSubstr;
using testing_util::Parse;

// The largest array may hold `limit` elements.
absl::Status FitsIn(const HloModule& before, const HloModule& after, int64_t limit) {
  for (const HloModule* m : {&before, &after}) {
    for (const HloInstruction* i : m->entry_computation()->instructions()) {
      if (i->shape().IsArray() && i->shape().elements() > limit) {
        return absl::ResourceExhaustedError(absl::StrCat("%", i->name(), " is too large"));
      }
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<SampledAxis>> Sample(HloModule* b, HloModule* a, int64_t limit = 4096) {
  return SampleRegion(b, a, 64, [&](const HloModule& x, const HloModule& y) { return FitsIn(x, y, limit); });
}

// A region module: `body` computes ROOT from parameter p = f32[4096,8].
std::string Region(absl::string_view body) {
  return absl::StrCat("HloModule r\n\nsum {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n"
                      "  ROOT s = f32[] add(a, b)\n}\n\nENTRY e {\n  p = f32[4096,8] parameter(0)\n",
                      body, "}\n");
}

TEST(EvalSampling, ShrinksARowIndependentRegionOnBothSides) {
  auto b = Parse(Region("  w = f32[8,3] parameter(1)\n  n = f32[4096,8] negate(p)\n"
                        "  d = f32[4096,3] dot(n, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
                        "  ROOT t = (f32[4096,3]) tuple(d)\n"));
  auto a = Parse(Region("  w = f32[8,3] parameter(1)\n"
                        "  d = f32[4096,3] dot(p, w), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
                        "  n = f32[4096,3] negate(d)\n  ROOT t = (f32[4096,3]) tuple(n)\n"));
  auto axes = Sample(b.get(), a.get());
  ASSERT_TRUE(axes.ok()) << axes.status();
  ASSERT_EQ(axes->size(), 1u);
  EXPECT_EQ((*axes)[0].where, "dim 0 of region input %p f32[4096,8]");
  EXPECT_EQ((*axes)[0].size, 4096);
  EXPECT_EQ((*axes)[0].kept, 64);
  EXPECT_EQ(b->entry_computation()->root_instruction()->shape().ToString(false), "(f32[64,3])");
  EXPECT_EQ(a->entry_computation()->parameter_instruction(0)->shape().ToString(false), "f32[64,8]");
  EXPECT_EQ(a->entry_computation()->parameter_instruction(1)->shape().ToString(false), "f32[8,3]");
}

TEST(EvalSampling, FollowsTheAxisThroughAGatherAndAMergingReshape) {
  // [4096,8] on 2 devices gathered into [8192,8] (2 blocks of the axis),
  // then [4096,8] -> [32768] keeps it as the outer factor.
  auto b = Parse(Region("  g = f32[8192,8] all-gather(p), dimensions={0}, replica_groups={{0,1}}\n"
                        "  r = f32[65536] reshape(g)\n  ROOT t = (f32[65536]) tuple(r)\n"));
  auto a = Parse(Region("  r = f32[32768] reshape(p)\n  g = f32[65536] all-gather(r), dimensions={0}, "
                        "replica_groups={{0,1}}\n  ROOT t = (f32[65536]) tuple(g)\n"));
  auto axes = Sample(b.get(), a.get());
  ASSERT_TRUE(axes.ok()) << axes.status();
  EXPECT_EQ(b->entry_computation()->root_instruction()->shape().ToString(false), "(f32[1024])");
  EXPECT_EQ(a->entry_computation()->root_instruction()->operand(0)->shape().ToString(false), "f32[1024]");
}

TEST(EvalSampling, RefusesDimensionsThatAreNotIndependent) {
  const struct {
    const char* body;
    const char* why;
  } cases[] = {
      {"  z = f32[] constant(0)\n  r = f32[8] reduce(p, z), dimensions={0}, to_apply=sum\n"
       "  ROOT t = (f32[8]) tuple(r)\n",
       "reduce %r: it reduces over it"},
      {"  i = s32[4096,8] iota(), iota_dimension=0\n  c = f32[4096,8] convert(i)\n"
       "  s = f32[4096,8] add(p, c)\n  ROOT t = (f32[4096,8]) tuple(s)\n",
       "iota %i: iota counts along it"},
      {"  r = f32[8,4096] reshape(p)\n  ROOT t = (f32[8,4096]) tuple(r)\n",
       "reshape %r: the reshape merges or splits the axis with other dimensions"},
      {"  sl = f32[4000,8] slice(p), slice={[0:4000], [0:8]}\n  ROOT t = (f32[4000,8]) tuple(sl)\n",
       "slice %sl: it does not treat the axis independently"},
      {"  x = f32[4096,8] transpose(p), dimensions={0,1}\n"
       "  w = f32[8,4096] parameter(1)\n"
       "  d = f32[8,8] dot(w, x), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
       "  ROOT t = (f32[8,8]) tuple(d)\n",
       "dot %d: the dot contracts it"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.why);
    auto b = Parse(Region(c.body));
    auto a = Parse(Region(c.body));
    auto axes = Sample(b.get(), a.get(), 1024);
    ASSERT_FALSE(axes.ok());
    EXPECT_THAT(std::string(axes.status().message()), HasSubstr(c.why));
    EXPECT_THAT(std::string(axes.status().message()), HasSubstr("cannot be sampled"));
  }
}

// dot(all-gather(W), X) against the kernel, on 4 devices, X with 4096
// columns: past a 4096-element limit, so the check samples X's columns.
// `rows` = 4 x the group size.
std::string GatherDot(absl::string_view groups, int rows = 16) {
  return absl::StrCat(R"(
HloModule before, replica_count=4
ENTRY e {
  w = f32[4,16] parameter(0)
  x = f32[16,4096] parameter(1)
  ag = f32[)", rows, R"(,16] all-gather(w), dimensions={0}, replica_groups=)", groups, R"(
  ROOT d = f32[)", rows, R"(,4096] dot(ag, x), lhs_contracting_dims={1}, rhs_contracting_dims={0}
})");
}

std::string Kernel(absl::string_view weight, absl::string_view config, int rows = 16) {
  return absl::StrCat(R"(
HloModule after, replica_count=4
ENTRY e {
  w = f32[4,16] parameter(0)
  x = f32[16,4096] parameter(1)
  ROOT cm = f32[)", rows, R"(,4096] custom-call()", weight, R"(, x), custom_call_target="AwsNeuronCollectiveMatmul", backend_config=")",
                      config, R"("
})");
}

EquivalenceReport CheckSmall(const std::string& before, const std::string& after) {
  EquivalenceOptions options;
  options.interpreter.seed = 3;
  options.interpreter.max_array_elements = 4096;
  return testing_util::CheckTexts(before, after, options);
}

TEST(EvalSampling, AnExactFoldIsEquivalentOnSampledColumns) {
  const EquivalenceReport r =
      CheckSmall(GatherDot("{{0,1,2,3}}"), Kernel("w", "rhs_contracting_dim=0,tp_degree=4,num_groups=1,use_sb_to_sb=1"));
  EXPECT_EQ(r.verdict, Verdict::kEquivalent) << r.ToString();
  EXPECT_THAT(r.ToString(), HasSubstr("region output %d / %cm f32[16,64]"));
  EXPECT_THAT(r.ToString(), HasSubstr("sampled 64 of 4096 indices along dim 1 of region input %x f32[16,4096] in region 1"));
  EXPECT_THAT(r.ToString(), HasSubstr("EQUIVALENT (local: the cone of 1 changed region on random region inputs, 4 "
                                      "devices; sampled 64 of 4096 indices along dim 1"));
}

TEST(EvalSampling, WrongRewritesInASampledRegionAreNotEquivalent) {
  // The kernel gathers contiguous groups {0,1},{2,3}; the all-gather used {0,2},{1,3}.
  EquivalenceReport r = CheckSmall(GatherDot("{{0,2},{1,3}}", 8),
                                   Kernel("w", "rhs_contracting_dim=0,tp_degree=2,num_groups=2,use_sb_to_sb=1", 8));
  EXPECT_EQ(r.verdict, Verdict::kNotEquivalent) << r.ToString();
  EXPECT_THAT(r.ToString(), HasSubstr("MISMATCH"));
  EXPECT_THAT(r.ToString(), HasSubstr("sampled 64 of 4096"));
  // The weight with its rows reversed (a changed weight dimension).
  r = CheckSmall(GatherDot("{{0,1,2,3}}"),
                 absl::StrReplaceAll(Kernel("wr", "rhs_contracting_dim=0,tp_degree=4,num_groups=1,use_sb_to_sb=1"),
                                     {{"  ROOT cm", "  wr = f32[4,16] reverse(w), dimensions={0}\n  ROOT cm"}}));
  EXPECT_EQ(r.verdict, Verdict::kNotEquivalent) << r.ToString();
  EXPECT_THAT(r.ToString(), HasSubstr("region output %d / %cm f32[16,64]"));
  // A kernel contract that fails on the shapes alone: decided without a run.
  r = CheckSmall(GatherDot("{{0,1,2,3}}"), Kernel("w", "rhs_contracting_dim=1,tp_degree=4,num_groups=1,use_sb_to_sb=1"));
  EXPECT_EQ(r.verdict, Verdict::kNotEquivalent) << r.ToString();
  EXPECT_THAT(r.ToString(), HasSubstr("kernel contract: operand 0 f32[4,16] has K = 16 but operand 1 f32[16,4096] "
                                      "(rhs_contracting_dim=1) has K = 4096"));
  EXPECT_EQ(r.instructions_executed, 0);
}

TEST(EvalSampling, NoSamplingWhenDisabledOrUnneeded) {
  EquivalenceOptions options;
  options.interpreter.max_array_elements = 4096;
  options.samples = 0;
  EquivalenceReport r = testing_util::CheckTexts(
      GatherDot("{{0,1,2,3}}"), Kernel("w", "rhs_contracting_dim=0,tp_degree=4,num_groups=1,use_sb_to_sb=1"), options);
  EXPECT_EQ(r.verdict, Verdict::kUndecided) << r.ToString();
  r = testing_util::CheckTexts(GatherDot("{{0,1,2,3}}"),
                               Kernel("w", "rhs_contracting_dim=0,tp_degree=4,num_groups=1,use_sb_to_sb=1"), {});
  EXPECT_EQ(r.verdict, Verdict::kEquivalent) << r.ToString();
  EXPECT_THAT(r.ToString(), ::testing::Not(HasSubstr("sampled")));
}

}  // namespace
}  // namespace eval
}  // namespace hilo

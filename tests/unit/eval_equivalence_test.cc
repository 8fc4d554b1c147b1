// CheckEquivalence: exact folds into AwsNeuronCollectiveMatmul pass, inexact
// ones fail on random inputs (the check can fail), and the looped-einsum
// pass's own exact/inexact classification agrees with the numbers.
#include "hilo/eval/equivalence.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/match.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "eval_test_util.h"
#include "hilo/passes/collective_stream_id_checker.h"
#include "hilo/passes/neuron_collective_stream_id_injector.h"
#include "hilo/passes/neuron_looped_einsum_replacer.h"
#include "hilo/passes/neuron_unique_channel_id_enforcer.h"
#include "hilo/pass/pass_registry.h"
#include "hilo/passes/register_passes.h"
#include "hilo/text/parser.h"

namespace hilo {
namespace eval {
namespace {

using ::testing::HasSubstr;
using testing_util::Parse;

EquivalenceReport Check(const std::string& before, const std::string& after, uint64_t seed = 1) {
  EquivalenceOptions options;
  options.interpreter.seed = seed;
  return testing_util::CheckTexts(before, after, options);
}

// dot(all-gather(W), X) on 4 devices: W [2,4] gathered by rows into [8,4].
std::string GatherDot(absl::string_view groups, int64_t gather_dim) {
  const std::string w_shape = gather_dim == 0 ? "f32[2,4]" : "f32[8,1]";
  const std::string ag_shape = gather_dim == 0 ? "f32[8,4]" : "f32[8,4]";
  return absl::StrCat(R"(
HloModule before, replica_count=4
ENTRY e {
  w = )", w_shape, R"( parameter(0)
  x = f32[4,3] parameter(1)
  ag = )", ag_shape, " all-gather(w), dimensions={", gather_dim, "}, replica_groups=", groups, R"(
  ROOT d = f32[8,3] dot(ag, x), lhs_contracting_dims={1}, rhs_contracting_dims={0}
})");
}

std::string Folded(absl::string_view w_shape, absl::string_view config) {
  return absl::StrCat(R"(
HloModule after, replica_count=4
ENTRY e {
  w = )", w_shape, R"( parameter(0)
  x = f32[4,3] parameter(1)
  r = f32[2,4] reshape(w)
  ROOT cm = f32[8,3] custom-call(r, x), custom_call_target="AwsNeuronCollectiveMatmul", backend_config=")",
                      config, R"("
})");
}

TEST(EvalEquivalence, ExactFoldIsEquivalent) {
  auto report = Check(GatherDot("{{0,1,2,3}}", 0),
                      Folded("f32[2,4]", "rhs_contracting_dim=0,tp_degree=4,num_groups=1,use_sb_to_sb=1"));
  EXPECT_TRUE(report.equivalent) << report.ToString();
  ASSERT_EQ(report.outputs.size(), 1u);
  EXPECT_EQ(report.outputs[0].max_abs_error, 0.0);
  EXPECT_THAT(report.ToString(), HasSubstr("EQUIVALENT"));
}

TEST(EvalEquivalence, NonContiguousGroupsAreNotEquivalent) {
  // The gather uses groups {0,2},{1,3}; the kernel gathers {0,1},{2,3}.
  const std::string before = absl::StrCat(R"(
HloModule before, replica_count=4
ENTRY e {
  w = f32[2,4] parameter(0)
  x = f32[4,3] parameter(1)
  ag = f32[4,4] all-gather(w), dimensions={0}, replica_groups={{0,2},{1,3}}
  ROOT d = f32[4,3] dot(ag, x), lhs_contracting_dims={1}, rhs_contracting_dims={0}
})");
  const std::string after = R"(
HloModule after, replica_count=4
ENTRY e {
  w = f32[2,4] parameter(0)
  x = f32[4,3] parameter(1)
  ROOT cm = f32[4,3] custom-call(w, x), custom_call_target="AwsNeuronCollectiveMatmul", backend_config="rhs_contracting_dim=0,tp_degree=2,num_groups=2,use_sb_to_sb=1"
})";
  auto report = Check(before, after);
  EXPECT_FALSE(report.equivalent);
  ASSERT_EQ(report.outputs.size(), 1u);
  const OutputComparison& c = report.outputs[0];
  EXPECT_FALSE(c.ok);
  EXPECT_GT(c.mismatches, 0);
  EXPECT_GE(c.worst_device, 0);
  EXPECT_EQ(c.worst_index.size(), 2u);
  EXPECT_NE(c.worst_before, c.worst_after);
  EXPECT_THAT(report.ToString(), HasSubstr("MISMATCH"));
  EXPECT_THAT(report.ToString(), HasSubstr("NOT EQUIVALENT"));
}

TEST(EvalEquivalence, GatherNotOnRowsIsNotEquivalent) {
  // W [8,1] gathered along dimension 1 into [8,4]: columns, not rows. The
  // fold reshapes W to [2,4] and the kernel gathers rows.
  auto report = Check(GatherDot("{{0,1,2,3}}", 1),
                      Folded("f32[8,1]", "rhs_contracting_dim=0,tp_degree=4,num_groups=1,use_sb_to_sb=1"));
  EXPECT_FALSE(report.equivalent) << report.ToString();
}

TEST(EvalEquivalence, ToleranceOverrideAndIntegerExactness) {
  const std::string before = R"(
HloModule m
ENTRY e {
  a = f32[4] parameter(0)
  b = s32[4] parameter(1)
  ROOT t = (f32[4], s32[4]) tuple(a, b)
})";
  const std::string after = R"(
HloModule m
ENTRY e {
  a = f32[4] parameter(0)
  eps = f32[] constant(0.001)
  e4 = f32[4] broadcast(eps), dimensions={}
  a2 = f32[4] add(a, e4)
  b = s32[4] parameter(1)
  ROOT t = (f32[4], s32[4]) tuple(a2, b)
})";
  auto b = Parse(before);
  auto a = Parse(after);
  EquivalenceOptions options;
  auto strict = CheckEquivalence(*b, *a, options);
  ASSERT_TRUE(strict.ok());
  EXPECT_FALSE(strict->equivalent);
  EXPECT_FALSE(strict->outputs[0].ok);
  EXPECT_TRUE(strict->outputs[1].ok);
  EXPECT_EQ(strict->outputs[0].output, "output {0}");
  options.atol = 0.01;
  auto loose = CheckEquivalence(*b, *a, options);
  ASSERT_TRUE(loose.ok());
  EXPECT_TRUE(loose->equivalent) << loose->ToString();
  EXPECT_NEAR(loose->outputs[0].max_abs_error, 0.001, 1e-6);
}

TEST(EvalEquivalence, ShapeChangesAreErrors) {
  auto b = Parse("HloModule m\nENTRY e {\n  ROOT a = f32[4] parameter(0)\n}\n");
  auto a = Parse("HloModule m\nENTRY e {\n  ROOT a = f32[5] parameter(0)\n}\n");
  auto r = CheckEquivalence(*b, *a, EquivalenceOptions{});
  testing_util::ExpectError(r.status(), {"parameter 0"});
}

// --- with the real pass ----------------------------------------------------

struct PassOutcome {
  bool fused = false;
  bool exact = false;
  EquivalenceReport report;
};

PassOutcome RunReplacerAndCheck(const std::string& text, int64_t devices = 0) {
  PassOutcome out;
  auto before = Parse(text);
  auto after = Parse(text);
  if (before == nullptr || after == nullptr) return out;
  PassOptions pass_options;
  pass_options.collective_matmul_nxd = false;
  pass_options.collective_permute_aggressive = false;
  NeuronLoopedEinsumReplacer pass(pass_options);
  auto changed = pass.Run(after.get());
  EXPECT_TRUE(changed.ok()) << changed.status();
  out.exact = true;
  for (const auto& c : pass.candidates()) {
    if (c.fused) {
      out.fused = true;
      out.exact = out.exact && c.exact;
    }
  }
  EquivalenceOptions options;
  options.interpreter.seed = 7;
  if (devices > 0) options.interpreter.devices = devices;
  auto r = CheckEquivalence(*before, *after, options);
  EXPECT_TRUE(r.ok()) << r.status();
  if (r.ok()) out.report = *r;
  return out;
}

// A rank-3 weight gathered into dot operand 0. On dimension 0 the fold is
// exact and checks equivalent; on dimension 1 the seed folds it too (rank 3),
// but the kernel gathers whole rows of the reshaped shard: inexact, and the
// check says not equivalent.
TEST(EvalEquivalence, ReplacerFoldsCheckAsClassified) {
  for (int dim : {0, 1}) {
    const char* w = dim == 0 ? "bf16[2,3,8]" : "bf16[3,2,8]";
    const char* gathered = dim == 0 ? "bf16[8,3,8]" : "bf16[3,8,8]";
    const char* product = dim == 0 ? "bf16[8,3,5]" : "bf16[3,8,5]";
    PassOutcome o = RunReplacerAndCheck(absl::StrCat(
        "HloModule m, replica_count=4\nENTRY e {\n  w = ", w, " parameter(0)\n  x = bf16[8,5] parameter(1)\n",
        "  ag = ", gathered, " all-gather(w), dimensions={", dim, "}, replica_groups={{0,1,2,3}}\n",
        "  ROOT d = ", product, " dot(ag, x), lhs_contracting_dims={2}, rhs_contracting_dims={0}\n}\n"));
    ASSERT_TRUE(o.fused) << dim;
    EXPECT_EQ(o.exact, dim == 0);
    EXPECT_EQ(o.report.equivalent, dim == 0) << o.report.ToString();
  }
}

// Every hand-written looped-einsum lit module: folds the pass classifies
// exact check equivalent, inexact ones do not.
TEST(EvalEquivalence, LitLoopedEinsumModulesAgreeWithTheirClassification) {
  const std::filesystem::path dir = std::filesystem::path(HILO_SOURCE_DIR) / "tests/lit/passes";
  int checked = 0;
  std::vector<std::string> not_run;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (!absl::StartsWith(name, "looped-einsum")) continue;
    std::ifstream in(entry.path());
    std::stringstream ss;
    ss << in.rdbuf();
    int part = 0;
    for (absl::string_view text : absl::StrSplit(ss.str(), "// -----")) {
      ++part;
      auto module = ParseHloModule(text);
      if (!module.ok()) continue;  // a negative parser case, not a module
      auto before = ParseHloModule(text);
      NeuronLoopedEinsumReplacer pass(PassOptions{});
      auto changed = pass.Run(module->get());
      if (!changed.ok() || !*changed) continue;
      bool exact = true;
      for (const auto& c : pass.candidates()) {
        if (c.fused) exact = exact && c.exact;
      }
      EquivalenceOptions options;
      options.interpreter.seed = 3;
      auto r = CheckEquivalence(**before, **module, options);
      const std::string where = absl::StrCat(name, " part ", part);
      if (!r.ok()) {
        ADD_FAILURE() << where << ": " << r.status();
        continue;
      }
      if (!r->after_error.empty()) {
        // A fold whose operands do not even fit the kernel contract fails
        // the check with an error naming the custom-call: consistent with
        // an inexact classification, wrong for an exact one.
        EXPECT_FALSE(exact) << where << " (classified exact): " << r->after_error;
        EXPECT_THAT(r->after_error, HasSubstr("custom-call"));
        not_run.push_back(absl::StrCat(where, ": ", r->after_error));
      }
      // The cone of the fold alone reaches the same verdict as the module.
      options.scope = EquivalenceOptions::Scope::kCone;
      auto local = CheckEquivalence(**before, **module, options);
      if (!local.ok()) {
        ADD_FAILURE() << where << " (cone): " << local.status();
      } else {
        EXPECT_TRUE(local->local.has_value()) << where;
        EXPECT_EQ(local->equivalent, r->equivalent) << where << " (cone)\n" << local->ToString()
                                                    << "\nwhole module:\n" << r->ToString();
      }
      ++checked;
      if (exact) {
        EXPECT_TRUE(r->equivalent) << where << " (classified exact)\n" << r->ToString();
      } else {
        EXPECT_FALSE(r->equivalent) << where << " (classified inexact)\n" << r->ToString();
      }
    }
  }
  for (const std::string& s : not_run) std::cerr << "after failed to run: " << s << "\n";
  std::cerr << checked << " folded lit modules checked\n";
  EXPECT_GT(checked, 0);
}

// The stream-id and channel-id passes never change results.
TEST(EvalEquivalence, StreamAndChannelIdPassesKeepResults) {
  const std::string text = R"(
HloModule m, replica_count=4
add {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT s = f32[] add(x, y)
}
ENTRY e {
  p = f32[4,2] parameter(0)
  ag = f32[16,2] all-gather(p), channel_id=1, dimensions={0}, replica_groups={{0,1,2,3}}, use_global_device_ids=true
  ar = f32[4,2] all-reduce(p), channel_id=1, replica_groups={{0,1},{2,3}}, use_global_device_ids=true, to_apply=add
  rs = f32[2,2] reduce-scatter(ar), channel_id=2, replica_groups={{0,1},{2,3}}, dimensions={0}, use_global_device_ids=true, to_apply=add
  ROOT t = (f32[16,2], f32[4,2], f32[2,2]) tuple(ag, ar, rs)
})";
  PassRegistry registry;
  RegisterBuiltinPasses(registry);
  for (absl::string_view pass_name :
       {CollectiveStreamIdChecker::kName, NeuronCollectiveStreamIdInjector::kName,
        NeuronUniqueChannelIdEnforcer::kName}) {
    auto before = Parse(text);
    auto after = Parse(text);
    auto pass = registry.CreatePass(pass_name, PassOptions{});
    if (!pass.ok()) {
      ADD_FAILURE() << pass_name << ": " << pass.status();
      continue;
    }
    auto changed = (*pass)->Run(after.get());
    ASSERT_TRUE(changed.ok()) << pass_name << ": " << changed.status();
    EquivalenceOptions options;
    options.structural = false;  // these passes change no value: compare the numbers anyway
    auto r = CheckEquivalence(*before, *after, options);
    ASSERT_TRUE(r.ok()) << pass_name << ": " << r.status();
    EXPECT_TRUE(r->equivalent) << pass_name << "\n" << r->ToString();
  }
}


// --- The changed cone (issue 17 item 5) ------------------------------------

// The fold of GatherDot inside a larger module: an unchanged prologue (a
// broadcast of 4096 elements per device) feeds nothing the pass changed, an
// unchanged epilogue (add, reduce) uses the dot's result.
std::string Surrounded(absl::string_view core, absl::string_view result) {
  return absl::StrCat(R"(
HloModule m, replica_count=4

sum {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT t = f32[] add(a, b)
}

ENTRY e {
  w = f32[2,4] parameter(0)
  x = f32[4,3] parameter(1)
  big = f32[64,64] parameter(2)
  zero = f32[] constant(0)
  s = f32[] reduce(big, zero), dimensions={0,1}, to_apply=sum
  sb = f32[8,3] broadcast(s), dimensions={}
)",
                      core, R"(
  y = f32[8,3] add()", result, R"(, sb)
  ROOT r = f32[3] reduce(y, zero), dimensions={0}, to_apply=sum
})");
}

constexpr char kGatherDotCore[] = R"(
  ag = f32[8,4] all-gather(w), dimensions={0}, replica_groups={{0,1,2,3}}
  d = f32[8,3] dot(ag, x), lhs_contracting_dims={1}, rhs_contracting_dims={0})";

EquivalenceReport CheckScope(const std::string& before, const std::string& after,
                             EquivalenceOptions::Scope scope, int64_t max_array_elements = 0) {
  EquivalenceOptions options;
  options.interpreter.seed = 2;
  options.scope = scope;
  if (max_array_elements > 0) options.interpreter.max_array_elements = max_array_elements;
  return testing_util::CheckTexts(before, after, options);
}

TEST(EvalCone, ExactFoldIsEquivalentOnItsCone) {
  const std::string before = Surrounded(kGatherDotCore, "d");
  const std::string after = Surrounded(R"(
  r2 = f32[2,4] reshape(w)
  cm = f32[8,3] custom-call(r2, x), custom_call_target="AwsNeuronCollectiveMatmul", backend_config="rhs_contracting_dim=0,tp_degree=4,num_groups=1,use_sb_to_sb=1")",
                                       "cm");
  auto report = CheckScope(before, after, EquivalenceOptions::Scope::kCone);
  ASSERT_TRUE(report.local.has_value()) << report.ToString();
  EXPECT_EQ(report.verdict, Verdict::kEquivalent) << report.ToString();
  EXPECT_EQ(report.local->regions, 1);
  EXPECT_EQ(report.local->instructions_before, 2);  // ag, d
  EXPECT_EQ(report.local->instructions_after, 2);   // r2, cm
  EXPECT_EQ(report.local->inputs, 2);               // w, x: not big, s, sb
  EXPECT_EQ(report.local->outputs, 1);
  ASSERT_EQ(report.outputs.size(), 1u);
  EXPECT_EQ(report.outputs[0].output, "region output %d / %cm");
  EXPECT_THAT(report.ToString(),
              HasSubstr("EQUIVALENT (local: the cone of 1 changed region on random region inputs, 4 devices)"));
  // The whole module agrees.
  EXPECT_EQ(CheckScope(before, after, EquivalenceOptions::Scope::kModule).verdict, Verdict::kEquivalent);
}

// Neuron NxD threads one token through its collectives; the token replacer
// reroutes later token uses to the first token. The token passes through
// (its get-tuple-element is read as the token operand), so the rerouting
// leaves nothing to compare, while a changed token value is still a region
// output.
std::string TokenChain(absl::string_view last_token_use) {
  return absl::StrCat(R"(
HloModule m, replica_count=2
ENTRY e {
  x = f32[4,2] parameter(0)
  y = f32[4,2] parameter(1)
  t0 = f32[] parameter(2)
  ag1 = (f32[8,2], f32[]) all-gather(x, t0), dimensions={0}, replica_groups={{0,1}}
  d1 = f32[8,2] get-tuple-element(ag1), index=0
  t1 = f32[] get-tuple-element(ag1), index=1
  ag2 = (f32[8,2], f32[]) all-gather(y, t1), dimensions={0}, replica_groups={{0,1}}
  d2 = f32[8,2] get-tuple-element(ag2), index=0
  t2 = f32[] get-tuple-element(ag2), index=1
  n = f32[] negate(t0)
  b = f32[8,2] broadcast()", last_token_use, R"(), dimensions={}
  s = f32[8,2] add(d1, d2)
  ROOT r = f32[8,2] add(s, b)
})");
}

TEST(EvalCone, PassedThroughTokensJoinNoCones) {
  auto report = CheckScope(TokenChain("t2"), TokenChain("t0"), EquivalenceOptions::Scope::kCone);
  ASSERT_TRUE(report.local.has_value()) << report.ToString();
  EXPECT_EQ(report.verdict, Verdict::kEquivalent) << report.ToString();
  EXPECT_EQ(report.local->regions, 0);
  report = CheckScope(TokenChain("t2"), TokenChain("n"), EquivalenceOptions::Scope::kCone);
  EXPECT_EQ(report.verdict, Verdict::kNotEquivalent) << report.ToString();
  EXPECT_THAT(report.ToString(), HasSubstr("region output %t0 / %n"));
}

TEST(EvalCone, InexactFoldIsNotEquivalentOnItsCone) {
  // Groups {0,2},{1,3} gathered; the kernel gathers contiguous ids.
  const std::string core = R"(
  ag = f32[4,4] all-gather(w), dimensions={0}, replica_groups={{0,2},{1,3}}
  d0 = f32[4,3] dot(ag, x), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  d = f32[8,3] concatenate(d0, d0), dimensions={0})";
  const std::string folded = R"(
  cm0 = f32[4,3] custom-call(w, x), custom_call_target="AwsNeuronCollectiveMatmul", backend_config="rhs_contracting_dim=0,tp_degree=2,num_groups=2,use_sb_to_sb=1"
  d = f32[8,3] concatenate(cm0, cm0), dimensions={0})";
  auto report = CheckScope(Surrounded(core, "d"), Surrounded(folded, "d"), EquivalenceOptions::Scope::kCone);
  ASSERT_TRUE(report.local.has_value());
  EXPECT_EQ(report.verdict, Verdict::kNotEquivalent) << report.ToString();
  // The concatenate keeps its name and text: the region output is below it.
  ASSERT_EQ(report.outputs.size(), 1u);
  EXPECT_EQ(report.outputs[0].output, "region output %d0 / %cm0");
  EXPECT_THAT(report.ToString(), HasSubstr("NOT EQUIVALENT (local: the cone of 1 changed region"));
}

TEST(EvalCone, AutoRunsTheConeWhenTheWholeModuleDoesNotFit) {
  const std::string before = Surrounded(kGatherDotCore, "d");
  const std::string after = Surrounded(R"(
  cm = f32[8,3] custom-call(w, x), custom_call_target="AwsNeuronCollectiveMatmul", backend_config="rhs_contracting_dim=0,tp_degree=4,num_groups=1,use_sb_to_sb=1")",
                                       "cm");
  // `big` (4096 elements) is over the limit; the cone's arrays are not.
  auto report = CheckScope(before, after, EquivalenceOptions::Scope::kAuto, 1024);
  ASSERT_TRUE(report.local.has_value()) << report.ToString();
  EXPECT_EQ(report.verdict, Verdict::kEquivalent) << report.ToString();
  EXPECT_THAT(report.ToString(),
              HasSubstr("checked locally (the whole module does not fit: parameter %big: array f32[64,64] "
                        "has more than 1024 elements"));
  // --check-scope=module keeps the old answer.
  auto whole = CheckScope(before, after, EquivalenceOptions::Scope::kModule, 1024);
  EXPECT_EQ(whole.verdict, Verdict::kUndecided);
  EXPECT_FALSE(whole.local.has_value());
  // And when it fits, auto runs the whole module.
  auto fits = CheckScope(before, after, EquivalenceOptions::Scope::kAuto);
  EXPECT_EQ(fits.verdict, Verdict::kEquivalent);
  EXPECT_FALSE(fits.local.has_value());
}

// The cone check of Surrounded(kGatherDotCore) against itself with `from`
// replaced by `to`.
EquivalenceReport ConeOfEdit(absl::string_view from, absl::string_view to) {
  const std::string before = Surrounded(kGatherDotCore, "d");
  std::string after = before;
  after.replace(after.find(std::string(from)), from.size(), std::string(to));
  return CheckScope(before, after, EquivalenceOptions::Scope::kCone);
}

TEST(EvalCone, ChangeInACalledComputationIsCutThere) {
  // The reducer becomes a maximum: the reducer pair is cut on its own (its
  // root is the region output, its parameters the region inputs), not every
  // reduce calling it, and the cone tells the difference.
  auto report = ConeOfEdit("ROOT t = f32[] add(a, b)", "ROOT t = f32[] maximum(a, b)");
  ASSERT_TRUE(report.local.has_value());
  EXPECT_EQ(report.verdict, Verdict::kNotEquivalent) << report.ToString();
  EXPECT_EQ(report.local->inputs, 2);  // a, b
  ASSERT_EQ(report.outputs.size(), 1u);
  EXPECT_EQ(report.outputs[0].output, "region output %t in sum");
}

TEST(EvalCone, DeadCodeChangesLeaveNothingToCompare) {
  auto report = ConeOfEdit("  ROOT r =", "  dead = f32[8,3] multiply(d, d)\n  ROOT r =");
  ASSERT_TRUE(report.local.has_value());
  EXPECT_EQ(report.verdict, Verdict::kEquivalent) << report.ToString();
  EXPECT_EQ(report.local->outputs, 0);
  EXPECT_EQ(report.instructions_executed, 0);
}

TEST(EvalCone, ConstantsInTheConeKeepTheirValues) {
  // The rewrite changes a dynamic-slice whose start index is a constant: the
  // constant is copied into the cone, not replaced by a random region input
  // (a random index would slice elsewhere on both sides and hide nothing,
  // but the constant is what the program computes).
  const std::string before = R"(
HloModule m, replica_count=2
ENTRY e {
  p = f32[8] parameter(0)
  i = s32[] constant(3)
  ROOT ds = f32[2] dynamic-slice(p, i), dynamic_slice_sizes={2}
})";
  const std::string after = R"(
HloModule m, replica_count=2
ENTRY e {
  p = f32[8] parameter(0)
  i = s32[] constant(3)
  ROOT ds = f32[2] slice(p), slice={[3:5]}
})";
  auto report = CheckScope(before, after, EquivalenceOptions::Scope::kCone);
  ASSERT_TRUE(report.local.has_value());
  EXPECT_EQ(report.verdict, Verdict::kEquivalent) << report.ToString();
  EXPECT_EQ(report.local->inputs, 1);  // p only
  EXPECT_EQ(report.local->instructions_before, 2);  // i, ds
}

}  // namespace
}  // namespace eval
}  // namespace hilo

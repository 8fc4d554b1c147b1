// --check-equivalence on real dumps of the shared corpus (issue 17, item 1):
// a fixed, representative subset that runs in seconds, each file's outcome
// pinned (verdict, how it was reached, or the reason it cannot be decided).
// The full table over every real dump is scripts/equivalence_coverage.py's
// (its output is in docs/interpreter.md); this test keeps the subset honest:
// an outcome that changes, better or worse, is a failure to look at.
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "hilo/eval/equivalence.h"
#include "hilo/pass/pass_options.h"
#include "hilo/pass/pass_registry.h"
#include "hilo/passes/register_passes.h"
#include "shared_dir.h"
#include "hilo/text/parser.h"

namespace hilo {
namespace eval {
namespace {

namespace fs = std::filesystem;

const fs::path kValid = fs::path(hilo::test::SharedDir()) / "corpus" / "valid";

struct Case {
  const char* file;
  bool nxd;        // --collective-matmul-nxd
  bool by_running; // --check-by-running
  const char* expected;  // substring of the report
  Verdict verdict;
  EquivalenceOptions::Scope scope = EquivalenceOptions::Scope::kAuto;  // --check-scope
};

// Measured on this tree (docs/interpreter.md, "Coverage on the real dumps").
const Case kCases[] = {
    // Neuron torch-xla: the pipeline adds stream ids and channel ids (which
    // change no group on one partition): decided from the structure.
    {"kahfizulkifli-GraphHelper/src__HLO__pbtxt__bert__bert_dp_graph_2.hlo", false, false,
     "structurally identical", Verdict::kEquivalent},
    {"kahfizulkifli-GraphHelper/src__HLO__pbtxt__bert__bert_dp_graph_2.hlo", true, false,
     "structurally identical", Verdict::kEquivalent},
    // ... and on numbers, 8 devices.
    {"kahfizulkifli-GraphHelper/src__HLO__pbtxt__bert__bert_dp_graph_2.hlo", false, true,
     "EQUIVALENT\n", Verdict::kEquivalent},
    {"kahfizulkifli-GraphHelper/src__HLO__pbtxt__qwb_linear_model__pp_1_zero.hlo", false, true,
     "EQUIVALENT modulo 19 uninterpreted custom-calls AwsNeuronTransferWithStaticRing",
     Verdict::kEquivalent},
    {"kahfizulkifli-GraphHelper/src__HLO__pbtxt__mlp__mini_mlp_dp.hlo", true, true, "EQUIVALENT",
     Verdict::kEquivalent},
    // The one Neuron dump where the looped-einsum fold fires (8 folds, all
    // exact): the module is far past the limits, so the check cuts out the 8
    // folds as 8 regions (the all-gather + dot before, the custom-call after);
    // each fold's output, bf16[4194304,96], is past --max-array-elements, so
    // each region is sampled along the activation's 4096 rows (a norm, the
    // all-gather, a merging reshape, the dot and the kernel carry them row by
    // row). About 5 s.
    {"kahfizulkifli-GraphHelper/src__HLO__pbtxt__llama2__llama2_dp=1_tp=1_pp=1.hlo", false, false,
     "the cone of 8 changed regions, 32 instructions before and 16 after, 8 region outputs compared",
     Verdict::kEquivalent},
    {"kahfizulkifli-GraphHelper/src__HLO__pbtxt__llama2__llama2_dp=1_tp=1_pp=1.hlo", false, false,
     "EQUIVALENT (local: the cone of 8 changed regions on random region inputs, 1 devices; sampled 64 of "
     "4096 indices along dim 0 of region input %multiply.",
     Verdict::kEquivalent},
    // The XLA benchmark models' 96 folds each (one region per layer: q, k, v
    // and their norm) put the rank-3 activation in the kernel's operand 1:
    // the kernel contract fails on the shapes, nothing is run.
    {"openxla-xla/xla__tools__benchmarks__hlo__hlo_llama31_8b_bf16_1x8.hlo", false, false,
     "the changed cone's region 1 of 34 (%dot.318 / %custom-call.95, %dot.317 / %custom-call.94, %dot.316 / "
     "%custom-call.93): custom-call %custom-call.93: kernel contract: operand 0 bf16[512,4096] has K = 4096 "
     "but operand 1 bf16[2,8192,4096] (rhs_contracting_dim=0) has K = 2",
     Verdict::kNotEquivalent},
    // With nxd the token replacer also reroutes 42 token uses to the first
    // token. A token-threaded all-gather passes its token through, so the
    // cut reads a get-tuple-element of it as the token operand itself: the
    // rerouting changes nothing, and the 8 folds are the 8 regions again.
    {"kahfizulkifli-GraphHelper/src__HLO__pbtxt__llama2__llama2_dp=1_tp=1_pp=1.hlo", true, false,
     "EQUIVALENT (local: the cone of 8 changed regions on random region inputs, 1 devices; sampled 64 of "
     "4096 indices along dim 0 of region input %multiply.",
     Verdict::kEquivalent},
    // The token replacer's rewrites alone (nxd): with the tokens passed
    // through, nothing is left to run.
    {"kahfizulkifli-GraphHelper/src__HLO__pbtxt__qwb_linear_model__pp_1_zero.hlo", true, false,
     "EQUIVALENT (local: the cone of 0 changed regions on random region inputs, 1 devices)",
     Verdict::kEquivalent, EquivalenceOptions::Scope::kCone},
    {"kahfizulkifli-GraphHelper/src__HLO__pbtxt__qwb_linear_model__pp_2_zero.hlo", true, false,
     "EQUIVALENT (local: the cone of 0 changed regions on random region inputs, 2 devices)",
     Verdict::kEquivalent, EquivalenceOptions::Scope::kCone},
    // Refused from the shapes, before anything runs.
    {"kahfizulkifli-GraphHelper/src__HLO__pbtxt__llama2__llama2_dp=1_tp=8_pp=4.hlo", false, true,
     "the entry parameters of 32 devices take 112.2 GiB, more than the memory limit of 4.0 GiB",
     Verdict::kUndecided},
    {"openxla-xla/xla__tools__benchmarks__hlo__hlo_llama31_8b_bf16_1x8.hlo", false, true,
     "array s32[2,8192,128256] has more than 134217728 elements", Verdict::kUndecided},
    // ROCm JAX and XLA benchmark dumps: nothing the pipeline changes.
    {"ROCm-xla/perf_tools__hlo_eval_tools__large_language_models__deepseek2_16b__inference__1gpu__module_0041.jit__prefill_jit.before_optimizations.hlo",
     false, false, "structurally identical", Verdict::kEquivalent},
    {"openxla-xla/xla__backends__cpu__benchmarks__hlo__layer_norm_1x4096x768_bf16.hlo", false, true,
     "EQUIVALENT", Verdict::kEquivalent},
};

std::string ReadFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(EvalCorpusCoverage, RepresentativeRealDumpsReachTheirMeasuredOutcome) {
  HILO_SKIP_WITHOUT_SHARED_DIR();
  ASSERT_TRUE(fs::exists(kValid)) << "corpus missing under " << kValid;
  PassRegistry registry;
  RegisterBuiltinPasses(registry);
  for (const Case& c : kCases) {
    SCOPED_TRACE(c.file);
    const std::string text = ReadFile(kValid / c.file);
    ASSERT_FALSE(text.empty());
    auto before = ParseHloModule(text);
    auto after = ParseHloModule(text);
    ASSERT_TRUE(before.ok() && after.ok());
    PassOptions pass_options;
    pass_options.collective_matmul_nxd = c.nxd;
    auto pipeline = registry.BuildPipeline({std::string("neuron-collective-pipeline")}, pass_options);
    ASSERT_TRUE(pipeline.ok()) << pipeline.status();
    ASSERT_TRUE((*pipeline)->Run(after->get()).ok());
    EquivalenceOptions options;
    options.structural = !c.by_running;
    options.scope = c.scope;
    options.time_budget_seconds = 60;
    auto report = CheckEquivalence(**before, **after, options);
    ASSERT_TRUE(report.ok()) << report.status();
    EXPECT_EQ(report->verdict, c.verdict) << report->ToString();
    EXPECT_THAT(report->ToString(), ::testing::HasSubstr(c.expected));
  }
}

}  // namespace
}  // namespace eval
}  // namespace hilo

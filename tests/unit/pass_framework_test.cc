// The pass framework: HloPassPipeline (order, verification at the end or after each pass,
// errors, skips, report entries), PassRegistry (passes, pipelines, unknown
// names, registration mistakes), HloDCE and OpExpanderPass. Modules are
// built through the IR API so these tests do not depend on the parser.
#include <filesystem>
#include <fstream>
#include <algorithm>
#include <cstdlib>
#include <functional>
#include <sstream>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "hilo/analysis/hlo_verifier.h"
#include "hilo/ir/hlo_computation.h"
#include "hilo/ir/hlo_instruction.h"
#include "hilo/ir/hlo_module.h"
#include "hilo/pass/hlo_dce.h"
#include "hilo/pass/hlo_pass_pipeline.h"
#include "hilo/pass/op_expander_pass.h"
#include "hilo/pass/pass_registry.h"
#include "hilo/passes/register_passes.h"
#include "hilo/text/parser.h"
#include "hilo/text/printer.h"
#include "shared_dir.h"

namespace hilo {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::UnorderedElementsAre;

Shape F32(std::vector<int64_t> dims) { return Shape::MakeArray(PrimitiveType::F32, dims); }

// Builds `entry`: p0 = f32[4] parameter(0); a = negate(p0); b = exp(a); ROOT r = add(b, p0).
struct SmallModule {
  std::unique_ptr<HloModule> module;
  HloComputation* entry;
  HloInstruction *p0, *a, *b, *root;

  SmallModule() {
    module = std::make_unique<HloModule>("small");
    entry = module->AddComputation(std::make_unique<HloComputation>("entry"), /*is_entry=*/true);
    p0 = entry->AddInstruction(HloInstruction::CreateParameter(0, F32({4}), "p0"));
    a = entry->AddInstruction(HloInstruction::Create(HloOpcode::kNegate, F32({4}), {p0}, "a"));
    b = entry->AddInstruction(HloInstruction::Create(HloOpcode::kExp, F32({4}), {a}, "b"));
    root = entry->AddInstruction(HloInstruction::Create(HloOpcode::kAdd, F32({4}), {b, p0}, "r"));
    entry->set_root_instruction(root);
  }
};

std::vector<std::string> Names(const HloComputation* computation) {
  std::vector<std::string> names;
  for (const HloInstruction* inst : computation->instructions()) names.emplace_back(inst->name());
  return names;
}

// Appends its name to a log; reports "order" = its position in the log.
class RecordingPass : public HloPassInterface {
 public:
  RecordingPass(std::string name, std::vector<std::string>* log, bool changes,
                std::vector<std::string> warnings = {})
      : name_(std::move(name)), log_(log), changes_(changes), warnings_(std::move(warnings)) {}
  absl::string_view name() const override { return name_; }
  absl::StatusOr<bool> Run(HloModule*) override {
    log_->push_back(name_);
    position_ = static_cast<int64_t>(log_->size()) - 1;
    return changes_;
  }
  nlohmann::json ReportDetails() const override {
    nlohmann::json details = nlohmann::json::object();
    details["order"] = position_;
    return details;
  }
  std::vector<std::string> Warnings() const override { return warnings_; }
  std::vector<std::string> Explanations() const override {
    return {absl::StrCat("ran at ", position_)};
  }

 private:
  std::string name_;
  std::vector<std::string>* log_;
  bool changes_;
  std::vector<std::string> warnings_;
  int64_t position_ = -1;
};

// Makes the module invalid: adds a reshape of f32[4] to f32[7].
class BreakingPass : public HloPassInterface {
 public:
  absl::string_view name() const override { return "breaker"; }
  absl::StatusOr<bool> Run(HloModule* module) override {
    HloComputation* entry = module->entry_computation();
    HloInstruction* bad = entry->AddInstruction(
        HloInstruction::CreateReshape(F32({7}), entry->parameter_instruction(0)));
    bad->SetNameUnchecked("bad_reshape");
    return true;
  }
};

class FailingPass : public HloPassInterface {
 public:
  absl::string_view name() const override { return "failer"; }
  absl::StatusOr<bool> Run(HloModule*) override {
    return absl::FailedPreconditionError("cannot handle this module");
  }
};

TEST(HloPassPipelineTest, RunsPassesInOrderAndReportsEach) {
  SmallModule m;
  std::vector<std::string> log;
  HloPassPipeline pipeline;
  pipeline.AddPass<RecordingPass>("first", &log, false);
  pipeline.AddPass<RecordingPass>("second", &log, true, std::vector<std::string>{"careful"});
  pipeline.AddPass<RecordingPass>("third", &log, false);
  std::vector<std::string> observed;
  pipeline.set_observer([&](const HloPassInterface& pass, const nlohmann::json& entry) {
    observed.push_back(absl::StrCat(pass.name(), "=", entry["changed"].get<bool>()));
  });

  absl::StatusOr<bool> changed = pipeline.Run(m.module.get());
  ASSERT_TRUE(changed.ok()) << changed.status();
  EXPECT_TRUE(*changed);
  EXPECT_THAT(log, ElementsAre("first", "second", "third"));
  EXPECT_THAT(observed, ElementsAre("first=0", "second=1", "third=0"));

  const std::vector<nlohmann::json>& entries = pipeline.report_entries();
  ASSERT_EQ(entries.size(), 3u);
  EXPECT_EQ(entries[0]["name"], "first");
  EXPECT_EQ(entries[0]["changed"], false);
  EXPECT_EQ(entries[0]["order"], 0);
  EXPECT_EQ(entries[0]["warnings"], nlohmann::json::array());
  EXPECT_EQ(entries[1]["name"], "second");
  EXPECT_EQ(entries[1]["changed"], true);
  EXPECT_EQ(entries[1]["order"], 1);
  EXPECT_EQ(entries[1]["warnings"], nlohmann::json::array({"careful"}));
  EXPECT_EQ(entries[2]["order"], 2);
  EXPECT_THAT(pipeline.Warnings(), ElementsAre("second: careful"));
  EXPECT_THAT(pipeline.Explanations(),
              ElementsAre("first: ran at 0", "second: ran at 1", "third: ran at 2"));
  EXPECT_EQ(pipeline.ReportDetails()["passes"].size(), 3u);
}

TEST(HloPassPipelineTest, DetailsAndExplanationsOnlyWhenAsked) {
  SmallModule m;
  std::vector<std::string> log;
  HloPassPipeline pipeline;
  pipeline.AddPass<RecordingPass>("first", &log, true, std::vector<std::string>{"careful"});
  pipeline.set_collect_report_details(false);
  pipeline.set_collect_explanations(false);
  absl::StatusOr<bool> changed = pipeline.Run(m.module.get());
  ASSERT_TRUE(changed.ok()) << changed.status();
  const std::vector<nlohmann::json>& entries = pipeline.report_entries();
  ASSERT_EQ(entries.size(), 1u);
  // Name, changed and warnings stay: the driver prints warnings regardless.
  EXPECT_EQ(entries[0]["name"], "first");
  EXPECT_EQ(entries[0]["changed"], true);
  EXPECT_EQ(entries[0]["warnings"], nlohmann::json::array({"careful"}));
  EXPECT_FALSE(entries[0].contains("order"));
  EXPECT_TRUE(pipeline.Explanations().empty());
  EXPECT_THAT(pipeline.Warnings(), ElementsAre("first: careful"));
}

TEST(HloPassPipelineTest, NothingChangedIsFalse) {
  SmallModule m;
  std::vector<std::string> log;
  HloPassPipeline pipeline;
  pipeline.AddPass<RecordingPass>("only", &log, false);
  absl::StatusOr<bool> changed = pipeline.Run(m.module.get());
  ASSERT_TRUE(changed.ok());
  EXPECT_FALSE(*changed);
}

// A valid module through `before` (reports a change), `breaker`, `after`;
// counts the observer's calls.
struct BrokenInTheMiddle {
  SmallModule m;
  std::vector<std::string> log;
  HloPassPipeline pipeline;
  int observed = 0;

  explicit BrokenInTheMiddle(HloPassPipeline::Verification verification) {
    pipeline.set_verification(verification);
    pipeline.AddPass<RecordingPass>("before", &log, true);
    pipeline.AddPass<BreakingPass>();
    pipeline.AddPass<RecordingPass>("after", &log, false);
    pipeline.set_observer([this](const HloPassInterface&, const nlohmann::json&) { ++observed; });
  }
  absl::StatusOr<bool> Run() {
    EXPECT_TRUE(VerifyHloModule(*m.module).ok());
    return pipeline.Run(m.module.get());
  }
};

TEST(HloPassPipelineTest, VerifiesOnceAtTheEndByDefault) {
  EXPECT_EQ(HloPassPipeline().verification(), HloPassPipeline::Verification::kAtEnd);
  BrokenInTheMiddle t(HloPassPipeline::Verification::kAtEnd);
  absl::StatusOr<bool> changed = t.Run();
  ASSERT_FALSE(changed.ok());
  EXPECT_EQ(changed.status().code(), absl::StatusCode::kInternal);
  // Which pass broke it is not known: the message lists the passes that
  // changed the module and says how to find out.
  EXPECT_THAT(changed.status().message(), HasSubstr("module is invalid after the passes"));
  EXPECT_THAT(changed.status().message(), HasSubstr("changed by 'before', 'breaker'"));
  EXPECT_THAT(changed.status().message(), HasSubstr("rerun with --verify-each"));
  EXPECT_THAT(changed.status().message(), Not(HasSubstr("after pass")));
  // The verifier's own message says what is wrong and where.
  EXPECT_THAT(changed.status().message(), HasSubstr("bad_reshape"));
  EXPECT_THAT(t.log, ElementsAre("before", "after"));  // every pass ran before the check
  EXPECT_EQ(t.observed, 3);
  EXPECT_EQ(t.pipeline.report_entries().size(), 3u);
}

TEST(HloPassPipelineTest, VerifyingAtTheEndAfterOnePassNamesIt) {
  SmallModule m;
  HloPassPipeline pipeline;
  pipeline.AddPass<BreakingPass>();
  absl::StatusOr<bool> changed = pipeline.Run(m.module.get());
  ASSERT_FALSE(changed.ok());
  EXPECT_EQ(changed.status().code(), absl::StatusCode::kInternal);
  EXPECT_THAT(changed.status().message(), HasSubstr("module is invalid after pass 'breaker': "));
  EXPECT_THAT(changed.status().message(), Not(HasSubstr("--verify-each")));
}

TEST(HloPassPipelineTest, VerifyingAtTheEndSkipsAModuleNoPassChanged) {
  // The input is assumed valid: when no pass reports a change there is
  // nothing to check (as XLA runs its invariant checkers only after a
  // change). An invalid input shows the difference between the modes.
  SmallModule m;
  BreakingPass breaker;
  ASSERT_TRUE(breaker.Run(m.module.get()).ok());
  std::vector<std::string> log;
  HloPassPipeline at_end;
  at_end.AddPass<RecordingPass>("idle", &log, false);
  absl::StatusOr<bool> changed = at_end.Run(m.module.get());
  ASSERT_TRUE(changed.ok()) << changed.status();
  EXPECT_FALSE(*changed);

  HloPassPipeline each_pass;
  each_pass.set_verification(HloPassPipeline::Verification::kEachPass);
  each_pass.AddPass<RecordingPass>("idle", &log, false);
  changed = each_pass.Run(m.module.get());
  ASSERT_FALSE(changed.ok());
  EXPECT_THAT(changed.status().message(), HasSubstr("module is invalid after pass 'idle': "));
}

// A pass that says it changes only frontend attributes does not make the
// pipeline verify at the end (the verifier does not read them), unless
// HILO_VERIFY_ATTRIBUTE_CHANGES=1 or under kEachPass. Shown with a pass
// that breaks the module and claims otherwise: the check really is skipped.
TEST(HloPassPipelineTest, AttributeOnlyChangesAreNotVerifiedAgainAtTheEnd) {
  class ClaimsAttributesOnly : public BreakingPass {
   public:
    ChangeScope change_scope() const override { return ChangeScope::kFrontendAttributesOnly; }
  };
  auto run = [](HloPassPipeline::Verification verification, const char* env) {
    if (env != nullptr) {
      setenv("HILO_VERIFY_ATTRIBUTE_CHANGES", env, 1);
    } else {
      unsetenv("HILO_VERIFY_ATTRIBUTE_CHANGES");
    }
    SmallModule m;
    HloPassPipeline pipeline;
    pipeline.set_verification(verification);
    pipeline.AddPass<ClaimsAttributesOnly>();
    absl::StatusOr<bool> changed = pipeline.Run(m.module.get());
    unsetenv("HILO_VERIFY_ATTRIBUTE_CHANGES");
    return changed;
  };
  absl::StatusOr<bool> changed = run(HloPassPipeline::Verification::kAtEnd, nullptr);
  ASSERT_TRUE(changed.ok()) << changed.status();
  EXPECT_TRUE(*changed);
  EXPECT_TRUE(run(HloPassPipeline::Verification::kAtEnd, "0").ok());
  EXPECT_THAT(run(HloPassPipeline::Verification::kAtEnd, "1").status().message(),
              HasSubstr("module is invalid after pass 'breaker'"));
  EXPECT_THAT(run(HloPassPipeline::Verification::kEachPass, nullptr).status().message(),
              HasSubstr("module is invalid after pass 'breaker'"));
}

TEST(HloPassPipelineTest, VerifyingEachPassNamesThePassThatBrokeTheModule) {
  BrokenInTheMiddle t(HloPassPipeline::Verification::kEachPass);
  absl::StatusOr<bool> changed = t.Run();
  ASSERT_FALSE(changed.ok());
  EXPECT_EQ(changed.status().code(), absl::StatusCode::kInternal);
  EXPECT_THAT(changed.status().message(), HasSubstr("module is invalid after pass 'breaker': "));
  EXPECT_THAT(changed.status().message(), HasSubstr("bad_reshape"));
  EXPECT_THAT(changed.status().message(), HasSubstr("elements"));
  EXPECT_THAT(t.log, ElementsAre("before"));  // nothing runs after the broken module
  EXPECT_EQ(t.observed, 2);  // the breaking pass was still observed (its warnings print)
  EXPECT_EQ(t.pipeline.report_entries().size(), 2u);
}

TEST(HloPassPipelineTest, VerificationCanBeTurnedOff) {
  SmallModule m;
  HloPassPipeline pipeline;
  pipeline.set_verification(HloPassPipeline::Verification::kNone);
  pipeline.AddPass<BreakingPass>();
  absl::StatusOr<bool> changed = pipeline.Run(m.module.get());
  ASSERT_TRUE(changed.ok()) << changed.status();
  EXPECT_FALSE(VerifyHloModule(*m.module).ok());  // the module really is broken
}

TEST(HloPassPipelineTest, PassErrorKeepsCodeAndNamesThePass) {
  SmallModule m;
  std::vector<std::string> log;
  HloPassPipeline pipeline;
  pipeline.AddPass<FailingPass>();
  pipeline.AddPass<RecordingPass>("never", &log, true);
  absl::StatusOr<bool> changed = pipeline.Run(m.module.get());
  ASSERT_FALSE(changed.ok());
  EXPECT_EQ(changed.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(changed.status().message(), "pass 'failer': cannot handle this module");
  EXPECT_TRUE(log.empty());
}

TEST(HloPassPipelineTest, SkipConditionSkipsWithAReason) {
  SmallModule m;
  std::vector<std::string> log;
  HloPassPipeline pipeline;
  HloPassInterface* first = pipeline.AddPass<RecordingPass>("first", &log, true);
  pipeline.AddPass(std::make_unique<RecordingPass>("second", &log, true),
                   [first](const HloModule&) -> std::optional<std::string> {
                     // Depends on the earlier pass's result, as a checker/injector pair does.
                     if (first->ReportDetails()["order"] == 0) return "first ran";
                     return std::nullopt;
                   });
  pipeline.AddPass(std::make_unique<RecordingPass>("third", &log, false),
                   [](const HloModule&) { return std::optional<std::string>(); });
  absl::StatusOr<bool> changed = pipeline.Run(m.module.get());
  ASSERT_TRUE(changed.ok());
  EXPECT_THAT(log, ElementsAre("first", "third"));
  ASSERT_EQ(pipeline.report_entries().size(), 3u);
  EXPECT_EQ(pipeline.report_entries()[1]["name"], "second");
  EXPECT_EQ(pipeline.report_entries()[1]["skipped"], "first ran");
  EXPECT_EQ(pipeline.report_entries()[1]["changed"], false);
  EXPECT_FALSE(pipeline.report_entries()[2].contains("skipped"));
}

TEST(HloPassPipelineTest, DriverKeysWinOverPassDetails) {
  class Sneaky : public HloPassInterface {
   public:
    absl::string_view name() const override { return "sneaky"; }
    absl::StatusOr<bool> Run(HloModule*) override { return false; }
    nlohmann::json ReportDetails() const override {
      return {{"name", "other"}, {"changed", true}, {"count", 3}};
    }
  };
  Sneaky pass;
  nlohmann::json entry = HloPassPipeline::MakeReportEntry(pass, false);
  EXPECT_EQ(entry["name"], "sneaky");
  EXPECT_EQ(entry["changed"], false);
  EXPECT_EQ(entry["count"], 3);
}

// --- PassRegistry -----------------------------------------------------------

TEST(PassRegistryTest, BuiltinPassesRegisterCleanly) {
  PassRegistry registry;
  RegisterBuiltinPasses(registry);
  EXPECT_TRUE(registry.status().ok()) << registry.status();
  EXPECT_TRUE(registry.HasPass("dce"));
  absl::StatusOr<std::unique_ptr<HloPassInterface>> dce =
      registry.CreatePass("dce", PassOptions());
  ASSERT_TRUE(dce.ok());
  EXPECT_EQ((*dce)->name(), "dce");
  // Every registered factory builds a pass that answers to its own name.
  for (const std::string& name : registry.PassNames()) {
    absl::StatusOr<std::unique_ptr<HloPassInterface>> pass =
        registry.CreatePass(name, PassOptions());
    ASSERT_TRUE(pass.ok()) << name;
    EXPECT_EQ((*pass)->name(), name);
  }
  // Every pipeline builds.
  for (const std::string& name : registry.PipelineNames()) {
    absl::StatusOr<std::unique_ptr<HloPassPipeline>> pipeline =
        registry.BuildPipeline({name}, PassOptions());
    EXPECT_TRUE(pipeline.ok()) << name << ": " << pipeline.status();
  }
}

PassRegistry::PassFactory Recording(std::string name, std::vector<std::string>* log) {
  return [name, log](const PassOptions&) {
    return std::make_unique<RecordingPass>(name, log, false);
  };
}

TEST(PassRegistryTest, UnknownPassListsValidNames) {
  std::vector<std::string> log;
  PassRegistry registry;
  registry.RegisterPass("zeta", Recording("zeta", &log));
  registry.RegisterPass("alpha", Recording("alpha", &log));
  registry.RegisterPipeline("both", {"alpha", "zeta"});
  EXPECT_THAT(registry.PassNames(), ElementsAre("alpha", "zeta"));
  EXPECT_THAT(registry.PipelineNames(), ElementsAre("both"));

  absl::StatusOr<std::unique_ptr<HloPassPipeline>> pipeline =
      registry.BuildPipeline({"alpha", "nope"}, PassOptions());
  ASSERT_FALSE(pipeline.ok());
  EXPECT_EQ(pipeline.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(pipeline.status().message(),
            "unknown pass 'nope'; valid passes: alpha, zeta; pipelines: both");
}

TEST(PassRegistryTest, PipelinesExpandInOrder) {
  std::vector<std::string> log;
  PassRegistry registry;
  registry.RegisterPass("a", Recording("a", &log));
  registry.RegisterPass("b", Recording("b", &log));
  registry.RegisterPipeline("ba", {"b", "a"});
  EXPECT_EQ(registry.PipelineDescription("ba"), "b,a");
  absl::StatusOr<std::unique_ptr<HloPassPipeline>> pipeline =
      registry.BuildPipeline({"a", "ba", "b"}, PassOptions());
  ASSERT_TRUE(pipeline.ok()) << pipeline.status();
  SmallModule m;
  ASSERT_TRUE((*pipeline)->Run(m.module.get()).ok());
  EXPECT_THAT(log, ElementsAre("a", "b", "a", "b"));
}

TEST(PassRegistryTest, PipelineBuilderSeesOptions) {
  std::vector<std::string> log;
  PassRegistry registry;
  registry.RegisterPass("a", Recording("a", &log));
  registry.RegisterPass("b", Recording("b", &log));
  registry.RegisterPipelineBuilder(
      "choose", "a, then b unless strict",
      [](const PassRegistry& r, const PassOptions& options, HloPassPipeline* pipeline) {
        absl::Status status = r.AddToPipeline("a", options, pipeline);
        if (!status.ok()) return status;
        if (options.collective_matmul_strict) return absl::OkStatus();
        return r.AddToPipeline("b", options, pipeline);
      });
  EXPECT_EQ(registry.PipelineDescription("choose"), "a, then b unless strict");
  PassOptions strict;
  strict.collective_matmul_strict = true;
  absl::StatusOr<std::unique_ptr<HloPassPipeline>> lax =
      registry.BuildPipeline({"choose"}, PassOptions());
  absl::StatusOr<std::unique_ptr<HloPassPipeline>> tight =
      registry.BuildPipeline({"choose"}, strict);
  ASSERT_TRUE(lax.ok());
  ASSERT_TRUE(tight.ok());
  EXPECT_EQ((*lax)->pass_count(), 2);
  EXPECT_EQ((*tight)->pass_count(), 1);
}

TEST(PassRegistryTest, RegistrationMistakesSurface) {
  std::vector<std::string> log;
  PassRegistry registry;
  registry.RegisterPass("a", Recording("a", &log));
  registry.RegisterPass("a", Recording("a", &log));
  EXPECT_EQ(registry.status().code(), absl::StatusCode::kAlreadyExists);
  EXPECT_THAT(registry.status().message(), HasSubstr("'a' is registered twice"));
  absl::StatusOr<std::unique_ptr<HloPassPipeline>> pipeline =
      registry.BuildPipeline({"a"}, PassOptions());
  EXPECT_FALSE(pipeline.ok());

  PassRegistry clash;
  clash.RegisterPass("x", Recording("x", &log));
  clash.RegisterPipeline("x", {"x"});
  EXPECT_FALSE(clash.status().ok());

  PassRegistry dangling;
  dangling.RegisterPipeline("p", {"missing"});
  EXPECT_TRUE(dangling.status().ok());  // checked when built
  absl::StatusOr<std::unique_ptr<HloPassPipeline>> built =
      dangling.BuildPipeline({"p"}, PassOptions());
  ASSERT_FALSE(built.ok());
  EXPECT_THAT(built.status().message(), HasSubstr("pipeline 'p': unknown pass 'missing'"));
}

// --- HloDCE -----------------------------------------------------------------

TEST(HloDCETest, RemovesDeadChainsIncludingCollectives) {
  SmallModule m;
  // A dead chain hanging off p0: all-gather -> reshape -> negate, unused.
  HloInstruction* ag = m.entry->AddInstruction(
      HloInstruction::Create(HloOpcode::kAllGather, F32({8}), {m.p0}, "ag"));
  ag->set_dimensions({0});
  ag->set_replica_groups(ReplicaGroups::Explicit({{0, 1}}));
  ag->set_channel_id(1);
  HloInstruction* reshape =
      m.entry->AddInstruction(HloInstruction::CreateReshape(F32({2, 4}), ag));
  m.entry->AddInstruction(HloInstruction::Create(HloOpcode::kNegate, F32({2, 4}), {reshape}, "n"));
  ASSERT_TRUE(VerifyHloModule(*m.module).ok()) << VerifyHloModule(*m.module);
  const std::string reshape_name(reshape->name());

  HloDCE dce;
  absl::StatusOr<bool> changed = dce.Run(m.module.get());
  ASSERT_TRUE(changed.ok());
  EXPECT_TRUE(*changed);
  EXPECT_EQ(dce.removed_instructions(), 3);
  EXPECT_THAT(Names(m.entry), ElementsAre("p0", "a", "b", "r"));
  EXPECT_EQ(dce.ReportDetails()["removed_instructions"], 3);
  EXPECT_EQ(dce.ReportDetails()["removed_computations"], 0);
  EXPECT_TRUE(VerifyHloModule(*m.module).ok());
  // The summary names what went, users before their operands.
  EXPECT_EQ(dce.ChangeSummary(), "removed 3 dead instructions (%n, %" + reshape_name + ", %ag)");

  // Idempotent: the second run finds nothing.
  changed = dce.Run(m.module.get());
  ASSERT_TRUE(changed.ok());
  EXPECT_FALSE(*changed);
  EXPECT_EQ(dce.removed_instructions(), 0);
  EXPECT_EQ(dce.ChangeSummary(), "");
}

TEST(HloDCETest, KeepsRootParametersSideEffectsAndControlDependencies) {
  auto module = std::make_unique<HloModule>("m");
  HloComputation* entry =
      module->AddComputation(std::make_unique<HloComputation>("entry"), /*is_entry=*/true);
  HloInstruction* p0 = entry->AddInstruction(HloInstruction::CreateParameter(0, F32({4}), "p0"));
  entry->AddInstruction(HloInstruction::CreateParameter(1, F32({4}), "unused_param"));
  HloInstruction* effect = entry->AddInstruction(
      HloInstruction::CreateCustomCall(F32({4}), {p0}, "Effectful"));
  effect->SetRawAttribute("custom_call_has_side_effect", "true");
  HloInstruction* pure = entry->AddInstruction(
      HloInstruction::CreateCustomCall(F32({4}), {p0}, "Pure"));
  HloInstruction* ordered =
      entry->AddInstruction(HloInstruction::Create(HloOpcode::kNegate, F32({4}), {p0}, "ordered"));
  HloInstruction* root =
      entry->AddInstruction(HloInstruction::Create(HloOpcode::kCopy, F32({4}), {p0}, "root"));
  ordered->AddControlDependencyTo(root);
  entry->set_root_instruction(root);

  HloDCE dce;
  absl::StatusOr<bool> changed = dce.Run(module.get());
  ASSERT_TRUE(changed.ok());
  EXPECT_TRUE(*changed);
  EXPECT_EQ(pure->parent(), nullptr);
  EXPECT_EQ(effect->parent(), entry);
  EXPECT_EQ(ordered->parent(), entry);
  EXPECT_THAT(Names(entry),
              ElementsAre("p0", "unused_param", effect->name(), "ordered", "root"));
}

TEST(HloDCETest, RemovesUnreachableComputationsKeepsCalledOnes) {
  auto module = std::make_unique<HloModule>("m");
  auto make_add = [&](const std::string& name) {
    HloComputation* c = module->AddComputation(std::make_unique<HloComputation>(name));
    HloInstruction* x = c->AddInstruction(
        HloInstruction::CreateParameter(0, Shape::MakeScalar(PrimitiveType::F32), name + ".x"));
    HloInstruction* y = c->AddInstruction(
        HloInstruction::CreateParameter(1, Shape::MakeScalar(PrimitiveType::F32), name + ".y"));
    c->set_root_instruction(c->AddInstruction(HloInstruction::Create(
        HloOpcode::kAdd, Shape::MakeScalar(PrimitiveType::F32), {x, y}, name + ".sum")));
    return c;
  };
  HloComputation* used = make_add("used");
  HloComputation* orphan = make_add("orphan");
  HloComputation* dead_callee = make_add("dead_callee");
  HloComputation* entry =
      module->AddComputation(std::make_unique<HloComputation>("entry"), /*is_entry=*/true);
  HloInstruction* p0 = entry->AddInstruction(HloInstruction::CreateParameter(0, F32({4}), "p0"));
  HloInstruction* live = entry->AddInstruction(
      HloInstruction::Create(HloOpcode::kAllReduce, F32({4}), {p0}, "live_ar"));
  live->SetCalledComputations("to_apply", {used});
  HloInstruction* dead = entry->AddInstruction(
      HloInstruction::Create(HloOpcode::kAllReduce, F32({4}), {p0}, "dead_ar"));
  dead->SetCalledComputations("to_apply", {dead_callee});
  entry->set_root_instruction(live);

  HloDCE dce;
  absl::StatusOr<bool> changed = dce.Run(module.get());
  ASSERT_TRUE(changed.ok());
  EXPECT_TRUE(*changed);
  EXPECT_EQ(dce.removed_instructions(), 1);
  EXPECT_EQ(dce.removed_computations(), 2);
  std::vector<std::string> names;
  for (const HloComputation* c : module->computations()) names.emplace_back(c->name());
  EXPECT_THAT(names, ElementsAre("used", "entry"));
  EXPECT_EQ(module->GetComputationWithName("orphan"), nullptr);
  (void)orphan;
  EXPECT_TRUE(VerifyHloModule(*module).ok()) << VerifyHloModule(*module);
}

TEST(HloDCETest, LongDeadChainIsLinearAndStackSafe) {
  SmallModule m;
  HloInstruction* prev = m.p0;
  for (int i = 0; i < 100000; ++i) {
    prev = m.entry->AddInstruction(
        HloInstruction::Create(HloOpcode::kNegate, F32({4}), {prev}, ""));
  }
  HloDCE dce;
  absl::StatusOr<bool> changed = dce.Run(m.module.get());
  ASSERT_TRUE(changed.ok());
  EXPECT_EQ(dce.removed_instructions(), 100000);
  EXPECT_EQ(m.entry->instruction_count(), 4);
  // Only the first few names are in the summary.
  EXPECT_THAT(dce.ChangeSummary(), testing::StartsWith("removed 100000 dead instructions (%"));
  EXPECT_THAT(dce.ChangeSummary(), testing::EndsWith(", ...)"));
  EXPECT_LT(dce.ChangeSummary().size(), 120u);
}

// Calls `visit(text, file name)` for each module of the shared corpus's
// valid set.
void ForEachValidCorpusFile(
    const std::function<void(const std::string&, const std::string&)>& visit) {
  const std::filesystem::path root = test::SharedDir() + "/corpus/valid";
  ASSERT_TRUE(std::filesystem::is_directory(root)) << root;
  for (const auto& file : std::filesystem::recursive_directory_iterator(root)) {
    if (!file.is_regular_file() || file.path().extension() != ".hlo") continue;
    std::ifstream in(file.path(), std::ios::binary);
    std::stringstream buffer;
    buffer << in.rdbuf();
    visit(buffer.str(), file.path().filename().string());
  }
}

// Every corpus module that parses and verifies still verifies after dce,
// prints to text that parses and verifies again (no dangling reference to a
// removed computation or instruction), and a second dce finds nothing.
TEST(HloDCETest, EveryValidCorpusModuleStaysValid) {
  HILO_SKIP_WITHOUT_SHARED_DIR();
  int64_t checked = 0, changed_modules = 0;
  ForEachValidCorpusFile([&](const std::string& text, const std::string& name) {
    absl::StatusOr<std::unique_ptr<HloModule>> module = ParseHloModule(text, name);
    if (!module.ok() || !VerifyHloModule(**module).ok()) return;  // not dce's business
    HloDCE dce;
    absl::StatusOr<bool> changed = dce.Run(module->get());
    ASSERT_TRUE(changed.ok()) << name << ": " << changed.status();
    ASSERT_TRUE(VerifyHloModule(**module).ok()) << name << ": " << VerifyHloModule(**module);
    changed_modules += *changed;
    absl::StatusOr<std::unique_ptr<HloModule>> reparsed =
        ParseHloModule(PrintHloModule(**module), name);
    ASSERT_TRUE(reparsed.ok()) << name << ": " << reparsed.status();
    ASSERT_TRUE(VerifyHloModule(**reparsed).ok()) << name << ": " << VerifyHloModule(**reparsed);
    absl::StatusOr<bool> again = dce.Run(module->get());
    ASSERT_TRUE(again.ok()) << name;
    EXPECT_FALSE(*again) << name << ": a second dce still removed something";
    ++checked;
  });
  // The corpus has 2,255 valid modules; nearly all verify, and dce has work
  // in a good share of them (XLA's tests keep unused instructions around).
  EXPECT_GT(checked, 2000);
  EXPECT_GT(changed_modules, 100);
}

// The reachability read from the callers noted during the sweep for dead
// instructions (the default) gives what a second sweep of every reachable
// computation gives (HILO_DCE_ONE_SWEEP=0): the same module text, the same
// counts and summary, on every valid corpus module, and on a module where a
// removed caller was the only way to its computations, nested.
TEST(HloDCETest, OneSweepGivesTheSecondSweepsResult) {
  struct Result {
    std::string text;
    int64_t instructions;
    int64_t computations;
    std::string summary;
  };
  auto run = [](const std::string& text, const std::string& name, bool one_sweep) {
    if (one_sweep) {
      unsetenv("HILO_DCE_ONE_SWEEP");
    } else {
      setenv("HILO_DCE_ONE_SWEEP", "0", 1);
    }
    absl::StatusOr<std::unique_ptr<HloModule>> module = ParseHloModule(text, name);
    std::optional<Result> result;
    if (module.ok() && VerifyHloModule(**module).ok()) {  // as above: dce's input is valid
      HloDCE dce;
      absl::StatusOr<bool> changed = dce.Run(module->get());
      if (changed.ok()) {
        result = Result{PrintHloModule(**module), dce.removed_instructions(),
                        dce.removed_computations(), dce.ChangeSummary()};
      }
    }
    unsetenv("HILO_DCE_ONE_SWEEP");
    return result;
  };
  auto same = [&](const std::string& text, const std::string& name) {
    const std::optional<Result> one = run(text, name, true);
    const std::optional<Result> two = run(text, name, false);
    EXPECT_EQ(one.has_value(), two.has_value()) << name;
    if (!one.has_value() || !two.has_value()) return false;
    EXPECT_EQ(one->text, two->text) << name;
    EXPECT_EQ(one->instructions, two->instructions) << name;
    EXPECT_EQ(one->computations, two->computations) << name;
    EXPECT_EQ(one->summary, two->summary) << name;
    return one->computations > 0;
  };
  // `outer` is reached only through the dead all-reduce, and reaches
  // `inner` through a call of its own: both go with it; `kept` stays.
  EXPECT_TRUE(same(R"(HloModule m

inner {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}

outer {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT c = f32[] call(x, y), to_apply=inner
}

kept {
  x = f32[] parameter(0)
  y = f32[] parameter(1)
  ROOT m = f32[] maximum(x, y)
}

ENTRY e {
  p = f32[4] parameter(0)
  dead = f32[4] all-reduce(p), to_apply=outer
  ROOT live = f32[4] all-reduce(p), to_apply=kept
}
)", "nested"));
  HILO_SKIP_WITHOUT_SHARED_DIR();
  int64_t checked = 0, with_removed_computations = 0;
  ForEachValidCorpusFile([&](const std::string& text, const std::string& name) {
    with_removed_computations += same(text, name);
    ++checked;
  });
  EXPECT_GT(checked, 2000);
  EXPECT_GT(with_removed_computations, 0);
}

// --- OpExpanderPass ---------------------------------------------------------

// Expands every instruction whose opcode is `target` with `expand`.
class TestExpander : public OpExpanderPass {
 public:
  using Expand = std::function<absl::StatusOr<HloInstruction*>(HloInstruction*)>;
  TestExpander(HloOpcode target, Expand expand) : target_(target), expand_(std::move(expand)) {}
  absl::string_view name() const override { return "test-expander"; }
  std::vector<std::string> expanded;

 protected:
  bool InstructionMatchesPattern(HloInstruction* instruction) override {
    return instruction->opcode() == target_;
  }
  absl::StatusOr<HloInstruction*> ExpandInstruction(HloInstruction* instruction) override {
    expanded.emplace_back(instruction->name());
    return expand_(instruction);
  }

 private:
  HloOpcode target_;
  Expand expand_;
};

TEST(OpExpanderPassTest, NewInstructionReplacesAndCarriesAttributes) {
  SmallModule m;
  m.b->set_metadata("op_name=\"exp\"");
  m.b->mutable_frontend_attributes()->Set("collective_type", "tp_all_gather");
  TestExpander expander(HloOpcode::kExp, [&](HloInstruction* inst) -> absl::StatusOr<HloInstruction*> {
    return inst->parent()->AddInstruction(HloInstruction::CreateCustomCall(
        inst->shape(), {inst->mutable_operand(0)}, "ExpKernel"));
  });
  absl::StatusOr<bool> changed = expander.Run(m.module.get());
  ASSERT_TRUE(changed.ok()) << changed.status();
  EXPECT_TRUE(*changed);
  EXPECT_EQ(m.b->parent(), nullptr);
  const HloInstruction* replacement = m.root->operand(0);
  EXPECT_EQ(replacement->opcode(), HloOpcode::kCustomCall);
  EXPECT_EQ(replacement->custom_call_target(), "ExpKernel");
  EXPECT_EQ(replacement->metadata(), "op_name=\"exp\"");
  EXPECT_NE(replacement->frontend_attributes().Find("collective_type"), nullptr);
  EXPECT_EQ(m.a->parent(), m.entry);  // still used by the custom-call
  EXPECT_TRUE(VerifyHloModule(*m.module).ok()) << VerifyHloModule(*m.module);
}

TEST(OpExpanderPassTest, ExistingInstructionReroutesAndRemovesDeadChain) {
  // p0 -> all-gather -> gte(0) feeds the root; gte(1) (the token) is the
  // match and gets rerouted to p1, an existing instruction.
  auto module = std::make_unique<HloModule>("m");
  HloComputation* entry =
      module->AddComputation(std::make_unique<HloComputation>("entry"), /*is_entry=*/true);
  Shape scalar = Shape::MakeScalar(PrimitiveType::F32);
  HloInstruction* p0 = entry->AddInstruction(HloInstruction::CreateParameter(0, F32({4}), "p0"));
  HloInstruction* p1 = entry->AddInstruction(HloInstruction::CreateParameter(1, scalar, "p1"));
  HloInstruction* ag = entry->AddInstruction(HloInstruction::Create(
      HloOpcode::kAllGather, Shape::MakeTuple({F32({8}), scalar}), {p0, p1}, "ag"));
  ag->set_dimensions({0});
  ag->set_replica_groups(ReplicaGroups::Explicit({{0, 1}}));
  HloInstruction* token = entry->AddInstruction(HloInstruction::CreateGetTupleElement(scalar, ag, 1));
  HloInstruction* root = entry->AddInstruction(
      HloInstruction::Create(HloOpcode::kTuple, Shape::MakeTuple({scalar}), {token}, "root"));
  entry->set_root_instruction(root);
  ASSERT_TRUE(VerifyHloModule(*module).ok()) << VerifyHloModule(*module);
  const int64_t before = entry->instruction_count();

  TestExpander expander(HloOpcode::kGetTupleElement,
                        [](HloInstruction* inst) -> absl::StatusOr<HloInstruction*> {
                          return inst->mutable_operand(0)->mutable_operand(1);
                        });
  absl::StatusOr<bool> changed = expander.Run(module.get());
  ASSERT_TRUE(changed.ok()) << changed.status();
  EXPECT_TRUE(*changed);
  EXPECT_EQ(root->operand(0), p1);
  EXPECT_EQ(token->parent(), nullptr);
  EXPECT_EQ(ag->parent(), nullptr);  // the collective it left dead goes too
  EXPECT_EQ(entry->instruction_count(), before - 2);  // nothing added
  EXPECT_THAT(Names(entry), ElementsAre("p0", "p1", "root"));
  EXPECT_TRUE(VerifyHloModule(*module).ok()) << VerifyHloModule(*module);
}

TEST(OpExpanderPassTest, NullAndSelfMeanNoChange) {
  for (bool return_self : {false, true}) {
    SmallModule m;
    TestExpander expander(HloOpcode::kNegate,
                          [&](HloInstruction* inst) -> absl::StatusOr<HloInstruction*> {
                            return return_self ? inst : nullptr;
                          });
    absl::StatusOr<bool> changed = expander.Run(m.module.get());
    ASSERT_TRUE(changed.ok());
    EXPECT_FALSE(*changed) << return_self;
    EXPECT_THAT(expander.expanded, ElementsAre("a"));
    EXPECT_THAT(Names(m.entry), ElementsAre("p0", "a", "b", "r"));
  }
}

TEST(OpExpanderPassTest, CollectsInPostOrderBeforeExpanding) {
  // Two matching negates in a chain: both are collected first, in post
  // order (operand before user), even though expanding the first adds a
  // new negate that also matches.
  SmallModule m;
  HloInstruction* n2 = m.entry->AddInstruction(
      HloInstruction::Create(HloOpcode::kNegate, F32({4}), {m.b}, "n2"));
  m.root->ReplaceOperandWith(0, n2);
  TestExpander expander(HloOpcode::kNegate, [](HloInstruction* inst) -> absl::StatusOr<HloInstruction*> {
    HloInstruction* twice = inst->parent()->AddInstruction(HloInstruction::Create(
        HloOpcode::kNegate, inst->shape(), {inst->mutable_operand(0)}, ""));
    return inst->parent()->AddInstruction(
        HloInstruction::Create(HloOpcode::kNegate, inst->shape(), {twice}, ""));
  });
  absl::StatusOr<bool> changed = expander.Run(m.module.get());
  ASSERT_TRUE(changed.ok());
  EXPECT_THAT(expander.expanded, ElementsAre("a", "n2"));
}

// Offers only negates (OfferedOpcodes) and records the order it is offered
// them in; matches nothing.
class NegateRecorder : public OpExpanderPass {
 public:
  absl::string_view name() const override { return "negate-recorder"; }
  std::vector<const HloInstruction*> offered;

 protected:
  bool InstructionMatchesPattern(HloInstruction* instruction) override {
    offered.push_back(instruction);
    return false;
  }
  absl::StatusOr<HloInstruction*> ExpandInstruction(HloInstruction*) override { return nullptr; }
  absl::Span<const HloOpcode> OfferedOpcodes() const override {
    static constexpr HloOpcode kNegateOnly[] = {HloOpcode::kNegate};
    return kNegateOnly;
  }
};

// The instructions offered to a pass that names its opcodes come in
// MakeInstructionPostOrder()'s order: random computations of negates and adds with random operands, some of
// them chains of negates with side branches (list order is the post
// order), some with operands rewired to later instructions (edges that
// climb) or control edges. At least 50 of them list their negates in
// another order than the post order, so a Run that took the list order
// would fail here.
TEST(OpExpanderPassTest, OfferedOpcodesComeInPostOrder) {
  int list_order_differs = 0;
  int chains = 0;
  for (uint32_t seed = 0; seed < 400; ++seed) {
    std::mt19937 rng(seed);
    auto module = std::make_unique<HloModule>("m");
    HloComputation* entry =
        module->AddComputation(std::make_unique<HloComputation>("entry"), /*is_entry=*/true);
    std::vector<HloInstruction*> all;
    all.push_back(entry->AddInstruction(HloInstruction::CreateParameter(0, F32({4}), "p0")));
    const bool chain = seed % 4 == 0;
    HloInstruction* last_negate = all[0];
    const int n = 5 + static_cast<int>(rng() % 40);
    for (int i = 0; i < n; ++i) {
      auto pick = [&] { return all[rng() % all.size()]; };
      HloInstruction* inst;
      if (rng() % 3 == 0) {
        inst = entry->AddInstruction(HloInstruction::Create(
            HloOpcode::kNegate, F32({4}), {chain ? last_negate : pick()}, ""));
        last_negate = inst;
      } else {
        HloInstruction* x = pick();
        inst = entry->AddInstruction(
            HloInstruction::Create(HloOpcode::kAdd, F32({4}), {x, pick()}, ""));
      }
      all.push_back(inst);
    }
    if (!chain && seed % 4 == 1 && all.size() > 3) {
      // Rewire an operand to a later instruction that does not depend on it.
      for (int tries = 0; tries < 20; ++tries) {
        HloInstruction* user = all[1 + rng() % (all.size() - 1)];
        HloInstruction* later = all[rng() % all.size()];
        if (later->unique_id() <= user->unique_id()) continue;
        std::vector<HloInstruction*> order = entry->MakeInstructionPostOrder();
        if (std::find(order.begin(), order.end(), later) > std::find(order.begin(), order.end(), user))
          continue;
        user->ReplaceOperandWith(0, later);
        break;
      }
    }
    if (seed % 4 == 2 && all.size() > 3) {
      HloInstruction* a = all[1 + rng() % (all.size() - 1)];
      HloInstruction* b = all[1 + rng() % (all.size() - 1)];
      if (a->unique_id() < b->unique_id()) a->AddControlDependencyTo(b);
    }
    std::vector<const HloInstruction*> expected;
    for (const HloInstruction* inst : entry->MakeInstructionPostOrder()) {
      if (inst->opcode() == HloOpcode::kNegate) expected.push_back(inst);
    }
    std::vector<const HloInstruction*> listed;
    for (const HloInstruction* inst : entry->instructions()) {
      if (inst->opcode() == HloOpcode::kNegate) listed.push_back(inst);
    }
    list_order_differs += listed != expected ? 1 : 0;
    chains += chain && expected.size() > 2 ? 1 : 0;
    NegateRecorder recorder;
    absl::StatusOr<bool> changed = recorder.Run(module.get());
    ASSERT_TRUE(changed.ok()) << changed.status();
    EXPECT_EQ(recorder.offered, expected) << "seed " << seed;
  }
  EXPECT_GE(list_order_differs, 50);
  EXPECT_GE(chains, 50);
}

// A fusion computation (%fused), the computation its reduce calls (%add)
// and one a call calls (%called), each with a negate.
constexpr char kFusionAndCalls[] = R"(
HloModule m
%add (x: f32[], y: f32[]) -> f32[] {
  %x = f32[] parameter(0)
  %y = f32[] parameter(1)
  %nx = f32[] negate(f32[] %x)
  ROOT %s = f32[] add(f32[] %nx, f32[] %y)
}
%fused (p: f32[4]) -> f32[] {
  %p = f32[4]{0} parameter(0)
  %n = f32[4]{0} negate(f32[4]{0} %p)
  %z = f32[] constant(0)
  ROOT %r = f32[] reduce(f32[4]{0} %n, f32[] %z), dimensions={0}, to_apply=%add
}
%called (q: f32[4]) -> f32[4] {
  %q = f32[4]{0} parameter(0)
  ROOT %m = f32[4]{0} negate(f32[4]{0} %q)
}
ENTRY %main (a: f32[4]) -> (f32[], f32[4], f32[4]) {
  %a = f32[4]{0} parameter(0)
  %f = f32[] fusion(f32[4]{0} %a), kind=kLoop, calls=%fused
  %c = f32[4]{0} call(f32[4]{0} %a), to_apply=%called
  %e = f32[4]{0} negate(f32[4]{0} %a)
  ROOT %t = (f32[], f32[4]{0}, f32[4]{0}) tuple(%f, %c, %e)
}
)";

// Issue 16 (2): as XLA's OpExpanderPass::Run (module->MakeNonfusionComputations()),
// a fusion computation is not walked; a computation the fused computation
// calls (a reduce's to_apply) is not a fusion computation and is walked.
TEST(OpExpanderPassTest, WalksNonFusionComputationsOnly) {
  absl::StatusOr<std::unique_ptr<HloModule>> module = ParseHloModule(kFusionAndCalls);
  ASSERT_TRUE(module.ok()) << module.status();
  std::vector<std::string> walked;
  for (const HloComputation* c : (*module)->MakeNonfusionComputations()) walked.emplace_back(c->name());
  EXPECT_THAT(walked, ElementsAre("add", "called", "main"));
  TestExpander expander(HloOpcode::kNegate, [](HloInstruction*) -> absl::StatusOr<HloInstruction*> {
    return nullptr;
  });
  ASSERT_TRUE(expander.Run(module->get()).ok());
  // %n, in the fusion computation, is not visited.
  EXPECT_THAT(expander.expanded, ElementsAre("nx", "m", "e"));
}

// A pass that names its opcodes (negate) scans every computation once
// before expanding (HILO_EXPANDER_ONE_SCAN, the fused set and each
// computation's negates in one walk). That scan holds only until the first
// expansion: here expanding %nx, in the first computation, adds a negate
// %late to %called (after %m, depending on it), which a stale scan would
// not offer. The fusion computation's %n is never offered. Both settings of
// the switch give the same order.
TEST(OpExpanderPassTest, OneScanListsAgainAfterAnExpansion) {
  class OfferedNegates : public OpExpanderPass {
   public:
    absl::string_view name() const override { return "offered-negates"; }
    std::vector<std::string> expanded;

   protected:
    bool InstructionMatchesPattern(HloInstruction*) override { return true; }
    absl::StatusOr<HloInstruction*> ExpandInstruction(HloInstruction* inst) override {
      expanded.emplace_back(inst->name());
      if (inst->name() == "nx") {
        HloComputation* called = inst->parent()->parent()->GetComputationWithName("called");
        HloInstruction* m = called->root_instruction();
        called->AddInstruction(HloInstruction::Create(HloOpcode::kNegate, m->shape(), {m}, "late"));
      }
      return nullptr;
    }
    absl::Span<const HloOpcode> OfferedOpcodes() const override {
      static constexpr HloOpcode kNegateOnly[] = {HloOpcode::kNegate};
      return kNegateOnly;
    }
  };
  for (const char* one_scan : {"1", "0"}) {
    setenv("HILO_EXPANDER_ONE_SCAN", one_scan, 1);
    absl::StatusOr<std::unique_ptr<HloModule>> module = ParseHloModule(kFusionAndCalls);
    ASSERT_TRUE(module.ok()) << module.status();
    OfferedNegates pass;
    absl::StatusOr<bool> changed = pass.Run(module->get());
    ASSERT_TRUE(changed.ok()) << changed.status();
    EXPECT_THAT(pass.expanded, ElementsAre("nx", "m", "late", "e")) << "one scan " << one_scan;
  }
  unsetenv("HILO_EXPANDER_ONE_SCAN");
}

TEST(OpExpanderPassTest, SkipsInstructionsRemovedByAnEarlierExpansion) {
  // p0 -> a (negate) and p0 -> c (negate); ROOT tuple(a, c). Expanding a
  // also handles c (reroutes it and removes it), as a pass that folds a
  // pair does; c must not be expanded afterwards.
  auto module = std::make_unique<HloModule>("m");
  HloComputation* entry =
      module->AddComputation(std::make_unique<HloComputation>("entry"), /*is_entry=*/true);
  HloInstruction* p0 = entry->AddInstruction(HloInstruction::CreateParameter(0, F32({4}), "p0"));
  HloInstruction* a =
      entry->AddInstruction(HloInstruction::Create(HloOpcode::kNegate, F32({4}), {p0}, "a"));
  HloInstruction* c =
      entry->AddInstruction(HloInstruction::Create(HloOpcode::kNegate, F32({4}), {p0}, "c"));
  HloInstruction* root = entry->AddInstruction(HloInstruction::Create(
      HloOpcode::kTuple, Shape::MakeTuple({F32({4}), F32({4})}), {a, c}, "root"));
  entry->set_root_instruction(root);
  TestExpander expander(HloOpcode::kNegate,
                        [&](HloInstruction* inst) -> absl::StatusOr<HloInstruction*> {
                          HloInstruction* copy = entry->AddInstruction(HloInstruction::Create(
                              HloOpcode::kCopy, inst->shape(), {p0}, ""));
                          if (inst == a) {
                            absl::Status s = entry->ReplaceInstruction(c, copy);
                            if (!s.ok()) return s;
                          }
                          return copy;
                        });
  absl::StatusOr<bool> changed = expander.Run(module.get());
  ASSERT_TRUE(changed.ok()) << changed.status();
  EXPECT_THAT(expander.expanded, ElementsAre("a"));
  EXPECT_EQ(c->parent(), nullptr);
  EXPECT_EQ(root->operand(0)->opcode(), HloOpcode::kCopy);
  EXPECT_EQ(root->operand(1)->opcode(), HloOpcode::kCopy);
}

TEST(OpExpanderPassTest, ErrorsNameThePassAndInstruction) {
  SmallModule m;
  TestExpander failing(HloOpcode::kExp, [](HloInstruction*) -> absl::StatusOr<HloInstruction*> {
    return absl::InvalidArgumentError("bad shape");
  });
  absl::StatusOr<bool> changed = failing.Run(m.module.get());
  ASSERT_FALSE(changed.ok());
  EXPECT_EQ(changed.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(changed.status().message(), "test-expander: expanding b in entry: bad shape");

  TestExpander mismatched(HloOpcode::kExp, [](HloInstruction* inst) -> absl::StatusOr<HloInstruction*> {
    return inst->parent()->AddInstruction(
        HloInstruction::Create(HloOpcode::kNegate, F32({5}), {}, "wrong"));
  });
  changed = mismatched.Run(m.module.get());
  ASSERT_FALSE(changed.ok());
  EXPECT_THAT(changed.status().message(), HasSubstr("not compatible"));
  EXPECT_THAT(changed.status().message(), HasSubstr("test-expander"));
}

}  // namespace
}  // namespace hilo

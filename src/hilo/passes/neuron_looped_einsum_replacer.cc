#include "hilo/passes/neuron_looped_einsum_replacer.h"

#include <algorithm>
#include <cstdlib>
#include <initializer_list>
#include <memory>
#include <utility>

#include "absl/base/attributes.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "hilo/analysis/looped_einsum_matchers.h"
#include "hilo/ir/env_switch.h"
#include "hilo/ir/hlo_computation.h"
#include "hilo/ir/hlo_module.h"
#include "hilo/ir/instruction_arena.h"

namespace hilo {
namespace {

// The value of an environment variable, or nullptr when unset.
const char* GetEnv(const char* name) { return std::getenv(name); }

// Whether the fold of `dot` reads only its strict ancestors: `activation` is
// an operand of the dot and `shard` is reached from one by operand-0 hops
// (the all-gather's operand 0, the all-gather being within
// kRootAllGatherDepth hops of the weight operand). Checked on the graph as
// it is when the fold is made, whatever plan it uses.
// (Not inlined: AddFold's own code stays as it was.)
ABSL_ATTRIBUTE_NOINLINE bool FoldReadsOnlyAncestors(const HloInstruction* dot,
                                                    const HloInstruction* shard,
                                                    const HloInstruction* activation) {
  const absl::Span<HloInstruction* const> operands = dot->operands().span();
  if (std::find(operands.begin(), operands.end(), activation) == operands.end()) return false;
  for (const HloInstruction* operand : operands) {
    const HloInstruction* inst = operand;
    for (int hop = 0; hop <= kRootAllGatherDepth + 1; ++hop) {
      if (inst == shard) return true;
      const absl::Span<HloInstruction* const> next = inst->operands().span();
      if (next.empty()) break;
      inst = next[0];
    }
  }
  return false;
}

}  // namespace

bool LoopedEinsumEnvVarSetToOne(const char* name, std::vector<std::string>* warnings) {
  const char* value = GetEnv(name);
  if (value == nullptr) return false;
  int64_t parsed = 0;
  if (!absl::SimpleAtoi(value, &parsed)) {
    if (warnings != nullptr) {
      warnings->push_back(absl::StrCat(name, "='", value,
                                       "' is not an integer; it counts as not set (only 1 sets it)"));
    }
    return false;
  }
  return parsed == 1;
}

LoopedEinsumSettings ResolveLoopedEinsumSettings(const PassOptions& options,
                                                 std::vector<std::string>* warnings,
                                                 std::string* threshold_source) {
  LoopedEinsumSettings settings;
  settings.nxd = options.collective_matmul_nxd.has_value()
                     ? *options.collective_matmul_nxd
                     : LoopedEinsumEnvVarSetToOne(kCollectiveMatmulNxdEnv, warnings);
  settings.aggressive = options.collective_permute_aggressive.has_value()
                            ? *options.collective_permute_aggressive
                            : LoopedEinsumEnvVarSetToOne(kCollectivePermuteAggressiveEnv, warnings);
  settings.strict = options.collective_matmul_strict;
  settings.weight_chain_copy_bitcast = options.weight_chain_copy_bitcast;
  settings.memo_geometry = !EnvSwitchIsZero("HILO_LOOPED_EINSUM_GEOMETRY_MEMO");
  settings.memo_config = !EnvSwitchIsZero("HILO_LOOPED_EINSUM_CONFIG_MEMO");
  std::string source = "default";
  if (options.sb_to_sb_threshold_mb.has_value()) {
    settings.sb_to_sb_threshold_mb = *options.sb_to_sb_threshold_mb;
    source = "flag";
  } else if (const char* value = GetEnv(kSbToSbThresholdEnv); value != nullptr) {
    int64_t parsed = 0;
    if (absl::SimpleAtoi(value, &parsed)) {
      settings.sb_to_sb_threshold_mb = parsed;
      source = "environment";
    } else if (warnings != nullptr) {
      warnings->push_back(absl::StrCat(kSbToSbThresholdEnv, "='", value,
                                       "' is not an integer; ignored, using the default of ",
                                       kDefaultSbToSbThresholdMb, " MiB"));
    }
  }
  if (threshold_source != nullptr) *threshold_source = source;
  return settings;
}

absl::StatusOr<bool> NeuronLoopedEinsumReplacer::Run(HloModule* module) {
  warnings_.clear();
  outcomes_.clear();
  candidates_.clear();
  inexact_.clear();
  folds_.clear();
  next_fold_ = 0;
  plans_.clear();
  settings_ = ResolveLoopedEinsumSettings(options_, &warnings_, &threshold_source_);
  reanalyze_ = EnvSwitchIsOne("HILO_LOOPED_EINSUM_REANALYZE");
  share_shapes_ = !EnvSwitchIsZero("HILO_REPLACER_SHARE_SHAPES");
  arena_groups_ = !EnvSwitchIsZero("HILO_REPLACER_ARENA_GROUPS");
  arena_users_ = !EnvSwitchIsZero("HILO_REPLACER_ARENA_USERS");
  short_check_ = !EnvSwitchIsZero("HILO_LOOPED_EINSUM_SHORT_ACTIVATION_CHECK");
  fold_memo_.Clear();
  fold_memo_on_ = !options_.record_details && !reanalyze_ &&
                  !EnvSwitchIsZero("HILO_LOOPED_EINSUM_FOLD_MEMO");
  reserve_plans_ = !EnvSwitchIsZero("HILO_REPLACER_RESERVE_PLANS");
  early_refusal_ = !options_.record_details && !EnvSwitchIsZero("HILO_LOOPED_EINSUM_EARLY_REFUSAL");
  early_refusals_ = 0;
  fold_memo_.set_lean(!EnvSwitchIsZero("HILO_LOOPED_EINSUM_LEAN_FIND"));
  lean_folds_ = !EnvSwitchIsZero("HILO_REPLACER_LEAN_FOLDS");
  ancestors_from_check_ = !EnvSwitchIsZero("HILO_REPLACER_ANCESTORS_FROM_CHECK");
  ancestor_walks_ = 0;
  refused_plan_.candidate = true;
  refused_plan_.fold = false;
  absl::StatusOr<bool> changed = OpExpanderPass::Run(module);
  // The pointers are only meaningful during the Run.
  folds_.clear();
  plans_.clear();
  reshape_shapes_.clear();
  fold_memo_.ClearEntries();
  // A fold the kernel contract makes inexact computes something else than
  // the dot: say so by default, not only under --explain.
  for (size_t i = 0; i < outcomes_.size(); ++i) {
    if (!outcomes_[i].fused || outcomes_[i].exact) continue;
    const Candidate& c = options_.record_details ? candidates_[i] : inexact_[i];
    warnings_.push_back(absl::StrCat("%", c.dot, " in ", c.computation, " was fused into %",
                                     c.custom_call,
                                     ", which is not exact under the kernel contract: ",
                                     absl::StrJoin(c.inexact_reasons, "; "),
                                     " (--collective-matmul-strict refuses such folds)"));
  }
  return changed;
}

NeuronLoopedEinsumReplacer::Candidate* NeuronLoopedEinsumReplacer::Record(
    size_t index, const HloInstruction& dot, const LoopedEinsumPlan& plan) {
  outcomes_[index] = Outcome{plan.fold, plan.fold && plan.exact};
  const bool warned = plan.fold && !plan.exact;
  if (!options_.record_details && !warned) {
    if (!lean_folds_ || !inexact_.empty()) inexact_.erase(index);
    return nullptr;
  }
  Candidate& c = options_.record_details ? candidates_[index] : inexact_[index];
  c = Candidate();
  c.computation = dot.parent() != nullptr ? std::string(dot.parent()->name()) : "";
  c.dot = std::string(dot.name());
  c.fused = plan.fold;
  if (plan.fold) {
    c.exact = plan.exact;
    c.inexact_reasons = plan.inexact_reasons;
  }
  if (!options_.record_details) return &c;
  c.matcher = std::string(LoopedEinsumMatcherName(plan.matcher));
  c.reason = plan.reason;
  if (plan.fold) c.backend_config = plan.backend_config;
  c.explanation = ExplainLoopedEinsumPlan(dot, plan);
  return &c;
}

NeuronLoopedEinsumReplacer::Candidate* NeuronLoopedEinsumReplacer::RecordedCandidate(
    size_t index) {
  if (options_.record_details) return &candidates_[index];
  if (lean_folds_ && inexact_.empty()) return nullptr;
  const auto it = inexact_.find(index);
  return it != inexact_.end() ? &it->second : nullptr;
}

absl::Span<const HloOpcode> NeuronLoopedEinsumReplacer::OfferedOpcodes() const {
  static constexpr HloOpcode kDotOnly[] = {HloOpcode::kDot};
  return kDotOnly;
}

void NeuronLoopedEinsumReplacer::WillOfferAtMost(size_t count) {
  // Each offered dot adds at most one outcome, one fold and one kept plan:
  // one allocation each instead of a doubling's moves (a KeptPlan moves a
  // shape and a string).
  if (!reserve_plans_) return;
  outcomes_.reserve(outcomes_.size() + count);
  folds_.reserve(folds_.size() + count);
  if (!reanalyze_) plans_.reserve(plans_.size() + count);
}

bool NeuronLoopedEinsumReplacer::InstructionMatchesPattern(HloInstruction* instruction) {
  if (instruction->opcode() != HloOpcode::kDot) return false;
  // A dot the analysis would refuse at its first check: the same outcome
  // and the same Record (nothing kept without details), without the plan.
  if (early_refusal_) {
    if (const std::optional<bool> candidate = LoopedEinsumRefusedEarly(instruction)) {
      if (!*candidate) return false;
      ++early_refusals_;
      const size_t outcome = outcomes_.size();
      outcomes_.emplace_back();
      // Lean: what Record would do is done (a new outcome is "not fused",
      // and without details nothing is kept for it).
      if (!lean_folds_) Record(outcome, *instruction, refused_plan_);
      return false;
    }
  }
  // A dot whose read key is a kept fold's gets that fold (its own shard and
  // activation): what the analysis and Record would give it, as Record
  // keeps nothing for an exact fold without details.
  LoopedEinsumFoldMemo::Hit hit;
  if (fold_memo_on_ && fold_memo_.Find(instruction, &hit)) {
    const size_t outcome = outcomes_.size();
    outcomes_.push_back(Outcome{true, true});
    folds_.push_back(Fold{instruction, outcome, plans_.size()});
    if (lean_folds_ && share_shapes_) {
      // Built in place: the shape's count and the config's one copy only.
      plans_.emplace_back(hit.shard, hit.activation, *hit.reshaped_weight_shape,
                          *hit.backend_config, hit.matcher);
      return true;
    }
    plans_.push_back(KeptPlan{hit.shard, hit.activation,
                              share_shapes_ ? *hit.reshaped_weight_shape
                                            : SharedShape(Shape(**hit.reshaped_weight_shape)),
                              *hit.backend_config, hit.matcher});
    return true;
  }
  LoopedEinsumPlan plan = AnalyzeLoopedEinsumDot(instruction, settings_, options_.record_details);
  if (!plan.candidate) return false;
  // Each instruction is offered once per Run: its outcome is a new one.
  const size_t outcome = outcomes_.size();
  outcomes_.emplace_back();
  if (options_.record_details) candidates_.emplace_back();
  Record(outcome, *instruction, plan);
  if (!plan.fold) return false;
  Fold& fold = folds_.emplace_back(Fold{instruction, outcome, kNoPlan});
  if (!reanalyze_) {
    fold.plan = plans_.size();
    SharedShape reshaped = SharedReshapeShape(std::move(plan.reshaped_weight_shape));
    if (fold_memo_on_) fold_memo_.Keep(plan, reshaped);
    plans_.push_back(KeptPlan{plan.shard, plan.activation, std::move(reshaped),
                              std::move(plan.backend_config), plan.matcher});
  }
  return true;
}

absl::StatusOr<HloInstruction*> NeuronLoopedEinsumReplacer::ExpandInstruction(
    HloInstruction* dot) {
  // The dots are expanded in the order matched; the ones skipped were
  // removed by an earlier expansion.
  while (next_fold_ < folds_.size() && folds_[next_fold_].dot != dot) ++next_fold_;
  if (next_fold_ == folds_.size()) {
    return absl::InternalError(absl::StrCat("%", dot->name(), " was not matched for folding"));
  }
  const Fold& fold = folds_[next_fold_++];
  // Decide again when an earlier expansion in this computation may have
  // changed what this dot sees (the original re-runs its matchers here);
  // else the plan from matching is what deciding again would give, and so
  // is the decision Record made from it then.
  if (fold.plan != kNoPlan && short_check_ && ancestors_from_check_) {
    // One walk: the check, and whether the shard is where the ancestors
    // test looks for it first (then the activation, an operand of every
    // kept plan's dot, decides the rest of it).
    KeptPlan& plan = plans_[fold.plan];
    bool shard_within_depth = false;
    if (LoopedEinsumReadsOnlyIdsBelow(dot, added_ids_begin(), plan.matcher, plan.shard,
                                      &shard_within_depth)) {
      const absl::Span<HloInstruction* const> operands = dot->operands().span();
      const bool reads_only_ancestors =
          shard_within_depth &&
          std::find(operands.begin(), operands.end(), plan.activation) != operands.end();
      return AddFold(dot, plan, RecordedCandidate(fold.outcome), reads_only_ancestors);
    }
  } else if (fold.plan != kNoPlan &&
             (short_check_
                  ? LoopedEinsumReadsOnlyIdsBelow(dot, added_ids_begin(), plans_[fold.plan].matcher)
                  : LoopedEinsumReadsOnlyIdsBelow(dot, added_ids_begin()))) {
    return AddFold(dot, plans_[fold.plan], RecordedCandidate(fold.outcome));
  }
  LoopedEinsumPlan fresh = AnalyzeLoopedEinsumDot(dot, settings_, options_.record_details);
  Candidate* c = Record(fold.outcome, *dot, fresh);
  if (!fresh.fold) return nullptr;
  KeptPlan plan{fresh.shard, fresh.activation,
                SharedReshapeShape(std::move(fresh.reshaped_weight_shape)),
                std::move(fresh.backend_config), fresh.matcher};
  return AddFold(dot, plan, c);
}

HloInstruction* NeuronLoopedEinsumReplacer::AddFold(HloInstruction* dot, KeptPlan& plan,
                                                 Candidate* c, bool reads_only_ancestors) {
  // The plan is used once: its shape and backend_config move into the new
  // instructions, which are made in the module's arena as the parser's are
  // (no heap block each).
  HloComputation* computation = dot->parent();
  InstructionArena& arena = computation->parent()->instruction_arena();
  // The reshape reads the shard, the custom call the reshape and the
  // activation: when both are ancestors of the dot, the fold cannot close a
  // cycle (OpExpanderPass::NoteExpansionReadsOnlyAncestors).
  if (!reads_only_ancestors) {
    ++ancestor_walks_;
    reads_only_ancestors = FoldReadsOnlyAncestors(dot, plan.shard, plan.activation);
  }
  if (reads_only_ancestors) NoteExpansionReadsOnlyAncestors();
  if (lean_folds_ && arena_users_ && arena_groups_) {
    // What the code below does with both arenas on, with the arena set for
    // loading once per instruction made (the operands' user blocks and the
    // custom call's attribute group come from it) and restored before
    // each is added (AddInstruction never reads it).
    InstructionArena* const loading = InstructionArena::Loading();
    std::unique_ptr<HloInstruction> reshape = HloInstruction::CreateInArena(
        arena, HloOpcode::kReshape, std::move(plan.reshaped_weight_shape), "");
    InstructionArena::SetLoading(&arena);
    reshape->AppendOperand(plan.shard);
    InstructionArena::SetLoading(loading);
    HloInstruction* const reshaped = computation->AddInstruction(std::move(reshape));
    std::unique_ptr<HloInstruction> custom_call =
        HloInstruction::CreateInArena(arena, HloOpcode::kCustomCall, dot->shared_shape(), "");
    InstructionArena::SetLoading(&arena);
    custom_call->AppendOperand(reshaped);
    custom_call->AppendOperand(plan.activation);
    custom_call->set_custom_call_target(std::string(kCollectiveMatmulTarget));
    if (!plan.backend_config.empty()) {
      custom_call->set_backend_config(std::move(plan.backend_config));
    }
    custom_call->set_api_version(1);  // API_VERSION_ORIGINAL
    InstructionArena::SetLoading(loading);
    HloInstruction* const added = computation->AddInstruction(std::move(custom_call));
    if (c != nullptr) {
      c->custom_call = std::string(added->name());
      if (options_.record_details) absl::StrAppend(&c->explanation, " -> %", added->name());
    }
    return added;
  }
  auto make = [&](HloOpcode opcode, SharedShape shape,
                  std::initializer_list<HloInstruction*> operands) {
    std::unique_ptr<HloInstruction> inst =
        HloInstruction::CreateInArena(arena, opcode, std::move(shape), "");
    // The shard and the activation each gain a second user here (the dot
    // is still theirs until the expander removes it), so their user lists
    // leave the inline word for a block: from the module's arena, as a
    // loader's small user lists are (HloInstruction::AddUser), instead of
    // one heap block each. HILO_REPLACER_ARENA_USERS=0: the heap (the
    // switch of this saving, measured in docs/performance.md). Only memory
    // differs: see SmallPointerList::push_back.
    InstructionArena* const loading = arena_users_ ? InstructionArena::Loading() : nullptr;
    if (arena_users_) InstructionArena::SetLoading(&arena);
    for (HloInstruction* operand : operands) inst->AppendOperand(operand);
    if (arena_users_) InstructionArena::SetLoading(loading);
    return inst;
  };
  HloInstruction* reshaped = computation->AddInstruction(
      make(HloOpcode::kReshape, std::move(plan.reshaped_weight_shape), {plan.shard}));
  std::unique_ptr<HloInstruction> custom_call =
      make(HloOpcode::kCustomCall, dot->shared_shape(), {reshaped, plan.activation});
  {
    // The custom call's attribute group goes to the module's arena, as a
    // parsed instruction's does (one bump allocation instead of two heap
    // blocks a fold); HILO_REPLACER_ARENA_GROUPS=0 leaves it on the heap
    // (the switch of this saving, measured in docs/performance.md). Only
    // memory differs: see HloInstruction::GroupArena.
    InstructionArena* const loading = InstructionArena::Loading();
    if (arena_groups_) InstructionArena::SetLoading(&arena);
    custom_call->set_custom_call_target(std::string(kCollectiveMatmulTarget));
    if (!plan.backend_config.empty()) {
      custom_call->set_backend_config(std::move(plan.backend_config));
    }
    custom_call->set_api_version(1);  // API_VERSION_ORIGINAL
    InstructionArena::SetLoading(loading);
  }
  HloInstruction* added = computation->AddInstruction(std::move(custom_call));
  if (c != nullptr) {
    c->custom_call = std::string(added->name());
    if (options_.record_details) absl::StrAppend(&c->explanation, " -> %", added->name());
  }
  return added;
}

SharedShape NeuronLoopedEinsumReplacer::SharedReshapeShape(Shape shape) {
  if (!share_shapes_) return SharedShape(std::move(shape));
  // The few most recent distinct shapes: a module's folds have a handful.
  // All come from AnalyzeLoopedEinsumDot: static arrays whose layout, if
  // any, is minor_to_major {1, 0} and nothing else. So the element type,
  // the dimensions and whether there is a layout decide equality, which is
  // Shape::operator=='s answer without comparing the rest.
  constexpr size_t kRecent = 8;
  for (size_t i = reshape_shapes_.size(); i-- > 0 && reshape_shapes_.size() - i <= kRecent;) {
    const Shape& kept = *reshape_shapes_[i];
    if (kept.element_type() == shape.element_type() && kept.has_layout() == shape.has_layout() &&
        kept.dimensions() == shape.dimensions()) {
      return reshape_shapes_[i];
    }
  }
  return reshape_shapes_.emplace_back(std::move(shape));
}

std::vector<std::string> NeuronLoopedEinsumReplacer::Explanations() const {
  // Exactly one line per candidate dot; the totals and settings are in the
  // report (Summary()).
  std::vector<std::string> lines;
  lines.reserve(candidates_.size());
  for (const Candidate& c : candidates_) lines.push_back(c.explanation);
  return lines;
}

NeuronLoopedEinsumReplacer::FoldCounts NeuronLoopedEinsumReplacer::CountFolds() const {
  FoldCounts counts;
  for (const Outcome& o : outcomes_) {
    counts.fused += o.fused ? 1 : 0;
    counts.exact += o.exact ? 1 : 0;
  }
  return counts;
}

std::string NeuronLoopedEinsumReplacer::Summary() const {
  const auto [fused, exact] = CountFolds();
  return absl::StrCat(outcomes_.size(), " candidate dot(s), ", fused, " fused (", exact,
                      " exact under the kernel contract); nxd=", settings_.nxd ? 1 : 0,
                      " aggressive=", settings_.aggressive ? 1 : 0,
                      " sb_to_sb_threshold_mb=", settings_.sb_to_sb_threshold_mb, " (",
                      threshold_source_, ") strict=", settings_.strict ? 1 : 0,
                      settings_.weight_chain_copy_bitcast ? " weight_chain_copy_bitcast=1" : "");
}

std::string NeuronLoopedEinsumReplacer::ChangeSummary() const {
  const auto [fused, exact] = CountFolds();
  if (fused == 0) return "";
  std::string summary = absl::StrCat(
      "fused ", fused, " of ", CountOf(static_cast<int64_t>(outcomes_.size()), "candidate dot"),
      " into AwsNeuronCollectiveMatmul (", exact, " exact under the kernel contract");
  if (fused > exact) absl::StrAppend(&summary, ", ", fused - exact, " not exact: see the warnings");
  return summary + ")";
}

nlohmann::json NeuronLoopedEinsumReplacer::ReportDetails() const {
  nlohmann::json settings = {
      {"nxd", settings_.nxd},
      {"aggressive", settings_.aggressive},
      {"sb_to_sb_threshold_mb", settings_.sb_to_sb_threshold_mb},
      {"sb_to_sb_threshold_source", threshold_source_},
      {"strict", settings_.strict},
      {"weight_chain_copy_bitcast", settings_.weight_chain_copy_bitcast},
  };
  nlohmann::json dots = nlohmann::json::array();
  int64_t fused = 0;
  int64_t exact = 0;
  for (const Candidate& c : candidates_) {
    nlohmann::json entry = {
        {"computation", c.computation}, {"dot", c.dot}, {"fused", c.fused}, {"matcher", c.matcher}};
    if (c.fused) {
      ++fused;
      exact += c.exact ? 1 : 0;
      entry["custom_call"] = c.custom_call;
      entry["backend_config"] = c.backend_config;
      entry["exact"] = c.exact;
      if (!c.exact) entry["inexact_reasons"] = c.inexact_reasons;
    } else {
      entry["reason"] = c.reason;
    }
    entry["explanation"] = c.explanation;
    dots.push_back(std::move(entry));
  }
  return {{"settings", std::move(settings)},
          {"summary", Summary()},
          {"candidates", outcomes_.size()},
          {"fused", fused},
          {"exact", exact},
          {"dots", std::move(dots)}};
}

}  // namespace hilo

// NeuronLoopedEinsumReplacer (`neuron_looped_einsum_replacer`, seed 000,
// #63): folds `dot(all-gather(W), X)` (five structural shapes, see
// analysis/looped_einsum_matchers.h) into one
//   custom-call(reshape(W), X), custom_call_target="AwsNeuronCollectiveMatmul",
//   backend_config="rhs_contracting_dim=R,tp_degree=G,num_groups=N,use_sb_to_sb=B"
// with the dot's shape and api_version 1. The dot and the all-gather chain
// it leaves dead are removed; metadata and frontend attributes carry over.
//
// Gates (a PassOptions flag overrides its environment variable; variables
// are read at Run time and count as set when their value is the integer 1):
//   NEURON_COLLECTIVE_MATMUL_NXD / collective_matmul_nxd
//   NEURON_COLLECTIVE_PERMUTE_AGGRESSIVE / collective_permute_aggressive
//   NEURON_COLLECTIVE_MATMUL_SB_TO_SB_THRESHOLD_IN_MB / sb_to_sb_threshold_mb
//   collective_matmul_strict (no variable): refuse folds that are not exact
//   under the kernel contract.
// Explanations() has one line per candidate dot (fused or why not); the
// report lists the same, with the totals and the settings used. See docs/passes/looped-einsum.md.
#ifndef HILO_PASSES_NEURON_LOOPED_EINSUM_REPLACER_H_
#define HILO_PASSES_NEURON_LOOPED_EINSUM_REPLACER_H_

#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "hilo/analysis/looped_einsum_analysis.h"
#include "hilo/ir/hlo_module.h"
#include "hilo/ir/shared_shape.h"
#include "hilo/pass/op_expander_pass.h"
#include "hilo/pass/pass_options.h"

namespace hilo {

inline constexpr char kCollectiveMatmulNxdEnv[] = "NEURON_COLLECTIVE_MATMUL_NXD";
inline constexpr char kCollectivePermuteAggressiveEnv[] = "NEURON_COLLECTIVE_PERMUTE_AGGRESSIVE";
inline constexpr char kSbToSbThresholdEnv[] = "NEURON_COLLECTIVE_MATMUL_SB_TO_SB_THRESHOLD_IN_MB";

// xla::hlo_utils::EnvVarSetToOne: the variable's value is the integer 1
// ("1", "+1", "01", surrounding blanks allowed). A set value that is not an
// integer adds a warning (it counts as not set).
bool LoopedEinsumEnvVarSetToOne(const char* name, std::vector<std::string>* warnings);

// The gates as the passes see them: flag, else environment, else default.
// `threshold_source`, if given, receives "flag", "environment" or "default".
LoopedEinsumSettings ResolveLoopedEinsumSettings(const PassOptions& options,
                                                 std::vector<std::string>* warnings,
                                                 std::string* threshold_source = nullptr);

class NeuronLoopedEinsumReplacer : public OpExpanderPass {
 public:
  static constexpr absl::string_view kName = "neuron_looped_einsum_replacer";

  NeuronLoopedEinsumReplacer() = default;
  explicit NeuronLoopedEinsumReplacer(const PassOptions& options) : options_(options) {}

  absl::string_view name() const override { return kName; }
  absl::StatusOr<bool> Run(HloModule* module) override;
  nlohmann::json ReportDetails() const override;
  std::vector<std::string> Warnings() const override { return warnings_; }
  // One line per candidate dot of the last Run, in the order seen.
  std::vector<std::string> Explanations() const override;
  // "N candidate dot(s), F fused (E exact ...); nxd=.. aggressive=.. ..." (in the report).
  std::string Summary() const;
  std::string ChangeSummary() const override;

  // One entry per candidate dot of the last Run, in the order seen (empty
  // without PassOptions::record_details).
  struct Candidate {
    std::string computation;
    std::string dot;
    bool fused = false;
    std::string matcher;         // "LHS", ..., or "none"
    std::string reason;          // why not fused
    std::string backend_config;  // when fused
    std::string custom_call;     // name of the custom-call that replaced the dot
    bool exact = false;          // when fused
    std::vector<std::string> inexact_reasons;
    std::string explanation;     // the --explain line
  };
  const std::vector<Candidate>& candidates() const { return candidates_; }
  const LoopedEinsumSettings& settings() const { return settings_; }
  // Dots of the last Run whose fold came from the fold memo
  // (LoopedEinsumFoldMemo) instead of a new analysis.
  int64_t fold_memo_hits() const { return fold_memo_.hits(); }
  // Candidates of the last Run refused before the analysis
  // (LoopedEinsumRefusedEarly).
  int64_t early_refusals() const { return early_refusals_; }
  // Room the last Run's kept plans had (tests of the reserve).
  size_t plans_capacity() const { return plans_.capacity(); }
  // The fold memo's Finds of the last Run that ran the matchers (tests of
  // LoopedEinsumFoldMemo::set_lean).
  int64_t fold_memo_matcher_runs() const { return fold_memo_.matcher_runs(); }
  // Folds of the last Run whose ancestors test walked the graph
  // (FoldReadsOnlyAncestors) instead of taking the answer from the check
  // of the kept plan (tests of ancestors_from_check_).
  int64_t ancestor_walks() const { return ancestor_walks_; }

 protected:
  bool InstructionMatchesPattern(HloInstruction* instruction) override;
  absl::StatusOr<HloInstruction*> ExpandInstruction(HloInstruction* instruction) override;
  absl::Span<const HloOpcode> OfferedOpcodes() const override;
  void WillOfferAtMost(size_t count) override;

 private:
  // A dot matched for folding, in the order matched (which is the order of
  // expansion): where its decision is recorded and its kept plan.
  struct Fold {
    const HloInstruction* dot = nullptr;
    size_t outcome = 0;  // into outcomes_
    // Into plans_: the plan from matching, kept for the expansion; kNoPlan
    // when none is kept.
    size_t plan = kNoPlan;
  };
  static constexpr size_t kNoPlan = ~size_t{0};
  // Records the decision for outcome `index` of `dot` (a later one
  // replaces an earlier); returns its Candidate when one is kept (see
  // details_), else nullptr.
  Candidate* Record(size_t index, const HloInstruction& dot, const LoopedEinsumPlan& plan);
  // The Candidate Record kept for outcome `index`, or nullptr.
  Candidate* RecordedCandidate(size_t index);
  struct KeptPlan;
  // Adds reshape(shard) and the custom-call replacing `dot` (plan's shape
  // and backend_config move into them); notes its name in `c` if given.
  // `reads_only_ancestors`: the ancestors test's answer when known (true),
  // else false (AddFold walks the graph for it).
  HloInstruction* AddFold(HloInstruction* dot, KeptPlan& plan, Candidate* c,
                          bool reads_only_ancestors = false);
  // Candidates fused, and those of them exact under the kernel contract.
  struct FoldCounts {
    int64_t fused = 0;
    int64_t exact = 0;
  };
  FoldCounts CountFolds() const;

  PassOptions options_;
  // State of the last Run.
  LoopedEinsumSettings settings_;
  std::string threshold_source_ = "default";
  // The decision for each candidate dot, in the order seen: all the summary
  // and the counts need. Two bytes each.
  struct Outcome {
    bool fused = false;
    bool exact = false;
  };
  std::vector<Outcome> outcomes_;
  // The dots matched for folding in this Run, in order, and the next one
  // to expand: OpExpanderPass expands them in the order matched, skipping
  // the ones an earlier expansion removed.
  std::vector<Fold> folds_;
  size_t next_fold_ = 0;
  // The match-time plans of the dots matched for folding. ExpandInstruction
  // uses a dot's plan as it is when the expansions before it changed
  // nothing the analysis reads (LoopedEinsumReadsOnlyIdsBelow), and decides
  // again otherwise, so the result is the same as deciding again every time
  // (the original's way, and this pass's with HILO_LOOPED_EINSUM_REANALYZE=1:
  // the switch of this saving, measured in docs/performance.md).
  // Only what the expansion reads of a plan (a whole plan is several
  // hundred bytes, moved again each time the vector grows).
  // The reshape's shape is shared when kept (SharedReshapeShape): a kept
  // plan moves as a few pointers when the vector grows.
  struct KeptPlan {
    HloInstruction* shard = nullptr;
    HloInstruction* activation = nullptr;
    SharedShape reshaped_weight_shape;
    std::string backend_config;
    LoopedEinsumMatcher matcher = LoopedEinsumMatcher::kNone;
  };
  std::vector<KeptPlan> plans_;
  bool reanalyze_ = false;
  // The reshapes' shapes made in this Run, shared among equal ones: a module
  // folds many dots of one weight shape, and one shared shape is one block
  // instead of one per reshape, and one entry of the printer's shape-text
  // cache (keyed by address) instead of a miss per reshape.
  // HILO_REPLACER_SHARE_SHAPES=0 gives each reshape its own (the switch of
  // this saving, measured in docs/performance.md).
  SharedShape SharedReshapeShape(Shape shape);
  std::vector<SharedShape> reshape_shapes_;
  bool share_shapes_ = true;
  // Whether AddFold makes the custom call's attribute group in the module's
  // arena (HILO_REPLACER_ARENA_GROUPS=0: on the heap).
  bool arena_groups_ = true;
  // Whether the blocks the fold's operands' user lists move to come from
  // the module's arena (HILO_REPLACER_ARENA_USERS=0: the heap).
  bool arena_users_ = true;
  // Whether a kept plan's check reads only what its matcher's analysis
  // reads (LoopedEinsumReadsOnlyIdsBelow with the matcher;
  // HILO_LOOPED_EINSUM_SHORT_ACTIVATION_CHECK=0: both whole chains).
  bool short_check_ = true;
  // Exact LHS and LHS-RS folds kept by their read key, so that the next
  // dot with an equal key takes the fold without a new analysis
  // (HILO_LOOPED_EINSUM_FOLD_MEMO=0: every dot analysed; also off with
  // record_details, whose explanations need the whole plan, and with
  // HILO_LOOPED_EINSUM_REANALYZE=1).
  LoopedEinsumFoldMemo fold_memo_;
  bool fold_memo_on_ = true;
  // Whether matching reserves its vectors for the offered count
  // (WillOfferAtMost; HILO_REPLACER_RESERVE_PLANS=0: they grow).
  bool reserve_plans_ = true;
  // Whether a dot without exactly one contracting dimension a side is
  // refused without the analysis (LoopedEinsumRefusedEarly; without
  // record_details only: the explanations need the reason;
  // HILO_LOOPED_EINSUM_EARLY_REFUSAL=0: analysed).
  bool early_refusal_ = true;
  int64_t early_refusals_ = 0;
  // Whether the replacer's own bookkeeping takes its lean paths: a memo
  // hit's kept plan built in place (no temporary moved in and destroyed),
  // Record and RecordedCandidate not probing an empty map of inexact
  // candidates, no Record call for an early refusal (its new outcome is
  // already "not fused", and nothing is kept for it), and AddFold switching the arena for loading twice a fold
  // instead of three times, without the per-instruction helper.
  // HILO_REPLACER_LEAN_FOLDS=0: the earlier paths (the switch of this
  // saving, measured in docs/performance.md). The same output either way.
  bool lean_folds_ = true;
  // Whether a kept LHS or LHS-RS plan's check of what the analysis reads
  // (LoopedEinsumReadsOnlyIdsBelow) also tells whether the fold reads only
  // ancestors of the dot, instead of a second walk of the chain
  // (FoldReadsOnlyAncestors); HILO_REPLACER_ANCESTORS_FROM_CHECK=0: the
  // second walk. Where the check does not find the shard, the walk decides.
  bool ancestors_from_check_ = true;
  int64_t ancestor_walks_ = 0;
  // What Record gets for such a dot: a candidate not folded.
  LoopedEinsumPlan refused_plan_;
  // With record_details, candidates_[i] describes outcomes_[i]. Without,
  // candidates_ is empty and only the candidates a warning names (fused,
  // not exact) are kept, here, by outcome index.
  std::vector<Candidate> candidates_;
  absl::flat_hash_map<size_t, Candidate> inexact_;
  std::vector<std::string> warnings_;
};

}  // namespace hilo

#endif  // HILO_PASSES_NEURON_LOOPED_EINSUM_REPLACER_H_

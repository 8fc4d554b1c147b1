// The looped-einsum decision for one dot (seed 000, #63, issue 5): which
// matcher applies, which operand is the weight, whether the original's
// InstructionMatchesPattern accepts it, whether the rewrite can be built
// (collective geometry, reshape), the backend_config, and whether the fold
// is exact under the NKI collective-matmul kernel's contract.
//
// Both NeuronLoopedEinsumReplacer's match and expand steps call
// AnalyzeLoopedEinsumDot, so they can never disagree; the same result feeds
// `--explain` and the report. Never crashes, whatever the graph: every
// condition that would make the rewrite impossible is a "not fused" with a
// reason. O(1) per dot (bounded walks) plus the size of the replica groups.
#ifndef HILO_ANALYSIS_LOOPED_EINSUM_ANALYSIS_H_
#define HILO_ANALYSIS_LOOPED_EINSUM_ANALYSIS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "hilo/analysis/looped_einsum_matchers.h"
#include "hilo/ir/hlo_instruction.h"
#include "hilo/ir/shape.h"

namespace hilo {

// The state-buffer threshold used when neither the flag nor
// NEURON_COLLECTIVE_MATMUL_SB_TO_SB_THRESHOLD_IN_MB gives one (the
// original's constant was not recovered). 16 MiB: two weight shards must
// fit in the state buffer next to activation and output tiles on the
// smallest NeuronCore (v2, 24 MiB). Justified in docs/passes/looped-einsum.md.
inline constexpr int64_t kDefaultSbToSbThresholdMb = 16;

inline constexpr absl::string_view kCollectiveMatmulTarget = "AwsNeuronCollectiveMatmul";

enum class LoopedEinsumMatcher : uint8_t { kNone, kLhs, kLhsRS, kRhs, kRhsRS, kLhsNxD };
// "LHS", "LHS-RS", "RHS", "RHS-RS", "LHS-NxD", "none".
absl::string_view LoopedEinsumMatcherName(LoopedEinsumMatcher matcher);

// The gates, resolved (flag, else environment variable, else default).
struct LoopedEinsumSettings {
  bool nxd = false;         // NEURON_COLLECTIVE_MATMUL_NXD
  bool aggressive = false;  // NEURON_COLLECTIVE_PERMUTE_AGGRESSIVE
  int64_t sb_to_sb_threshold_mb = kDefaultSbToSbThresholdMb;
  bool strict = false;  // refuse folds that are not exact
  // WeightInLHS/RHS also follow bitcast and copy (beyond the original).
  bool weight_chain_copy_bitcast = false;
  // Speed only (the same plans either way): reuse the geometry read from
  // the last explicit replica-group list when the next all-gather shares
  // that list's contents. HILO_LOOPED_EINSUM_GEOMETRY_MEMO=0 turns it off
  // (the switch of this saving, measured in docs/performance.md).
  bool memo_geometry = true;
  // Whether the backend_config text is copied from the last fold's when its
  // four values are the same (a module's folds have one or two
  // configurations). HILO_LOOPED_EINSUM_CONFIG_MEMO=0 writes each (the
  // switch of this saving, measured in docs/performance.md).
  bool memo_config = true;
};

struct LoopedEinsumPlan {
  // A dot one of whose operands reaches an all-gather (a matcher applies,
  // or an all-gather is within kRootAllGatherDepth operand-0 hops): the dots
  // `--explain` talks about. Other instructions are not candidates.
  bool candidate = false;
  // The original's InstructionMatchesPattern accepted it.
  bool pattern_matches = false;
  // Everything holds: the replacer folds this dot.
  bool fold = false;
  // When !fold: the first condition that failed (empty unless asked for).
  std::string reason;

  LoopedEinsumMatcher matcher = LoopedEinsumMatcher::kNone;
  int64_t weight_operand = -1;                    // dot operand that is the gathered weight
  const HloInstruction* weight_parameter = nullptr;  // WeightInLHS/RHS capture (null if not proven)
  HloInstruction* all_gather = nullptr;
  HloInstruction* shard = nullptr;       // the all-gather's operand 0: the pre-gather W
  HloInstruction* activation = nullptr;  // the other dot operand

  // Rewrite parameters (valid when the pattern matched and the rewrite
  // could be built).
  int64_t k = 0;  // contracting extent on the weight side
  int64_t rhs_contracting_dim = 0;
  int64_t tp_degree = 0;
  int64_t num_groups = 0;
  std::string groups_note;  // how tp_degree/num_groups were found, when not written out
  bool use_sb_to_sb = false;
  double weight_mb = 0;  // 2 * bytes(W) * elements(W) / 2^20
  Shape reshaped_weight_shape;
  std::string backend_config;

  // Exactness under the kernel contract (valid when the rewrite could be
  // built): the reasons it is not exact, empty when exact.
  bool exact = false;
  std::vector<std::string> inexact_reasons;
};

// `with_reason` false leaves `reason` empty (everything else is the same):
// building it costs more than the analysis, for a text few callers read.
LoopedEinsumPlan AnalyzeLoopedEinsumDot(HloInstruction* dot, const LoopedEinsumSettings& settings,
                                        bool with_reason = true);

// The analysis's first refusal without the analysis: for a dot without
// exactly one contracting dimension on each side, whether it is a
// candidate (then AnalyzeLoopedEinsumDot(dot, settings, false) gives a plan
// with candidate set and nothing else, whatever the settings); nullopt for
// any other instruction (the analysis decides). An operand reaching an
// all-gather is tried before the matchers: either makes a candidate.
std::optional<bool> LoopedEinsumRefusedEarly(HloInstruction* dot);

// Whether AnalyzeLoopedEinsumDot(dot) reads only instructions whose unique
// id is below `ids_end`. It reads the dot's operands 0 and 1 and, from each,
// the chain of operand-0 ancestors up to kLoopedEinsumChainRead positions
// (the weight search's kWeightSearchHops hops and the three a
// convert(get-tuple-element(x)) check looks past the last), and of those
// only their operand 0, operand count, shape, attributes, name and parent;
// never users or control edges. So when a graph change only adds
// instructions (with ids >= `ids_end`), reroutes operands to them and
// removes dead ones, a dot for which this holds still gets the plan it got
// before the change (NeuronLoopedEinsumReplacer keeps its match-time plan
// on that condition). Bounded: at most 2 * kLoopedEinsumChainRead
// instructions.
inline constexpr int kLoopedEinsumChainRead = kWeightSearchHops + 4;
bool LoopedEinsumReadsOnlyIdsBelow(const HloInstruction* dot, int64_t ids_end);
// The same for a dot whose analysis chose `matcher`, when the instructions
// it read on operand 0's chain are still below `ids_end` (which this
// checks): the analysis then chooses that matcher again, and for LHS and
// LHS-RS it reads operand 1 itself only (shape, parent, name: the
// activation), never its chain, so only position 0 of operand 1 is
// checked. Other matchers: the whole check above. Speed only:
// NeuronLoopedEinsumReplacer uses it unless
// HILO_LOOPED_EINSUM_SHORT_ACTIVATION_CHECK=0 (docs/performance.md).
bool LoopedEinsumReadsOnlyIdsBelow(const HloInstruction* dot, int64_t ids_end,
                                   LoopedEinsumMatcher matcher);
// The same check (with `matcher`), noting in `*shard_within_depth` whether
// `shard` is at one of the first kRootAllGatherDepth + 2 positions of dot
// operand 0's chain (valid when it returns true): one walk for both the
// check and NeuronLoopedEinsumReplacer's ancestors test, which then need
// not walk the chain again. Speed only (HILO_REPLACER_ANCESTORS_FROM_CHECK=0:
// the two walks; docs/performance.md).
bool LoopedEinsumReadsOnlyIdsBelow(const HloInstruction* dot, int64_t ids_end,
                                   LoopedEinsumMatcher matcher, const HloInstruction* shard,
                                   bool* shard_within_depth);

// A memo of AnalyzeLoopedEinsumDot's exact LHS and LHS-RS folds (speed
// only: a module of layers folds one dot per layer, each reading a chain
// of its own instructions that have the shapes, attributes and group
// list of the layer before). Find builds the dot's read key: everything
// AnalyzeLoopedEinsumDot(dot, settings, /*with_reason=*/false) reads of
// the graph when dot operand 0 is all-gather or reshape(all-gather), so
// that two dots with equal keys get equal plans up to the instructions
// the plan points to, which sit at the same positions of their chains:
//  - the dot: its opcode, operand count (2), dimension numbers (by value)
//    and parent (only compared with other instructions' parents);
//  - operand 0's chain of operand-0 ancestors, kLoopedEinsumChainRead
//    positions at most (the analysis never reads further: see
//    LoopedEinsumReadsOnlyIdsBelow), each position's opcode, operand
//    count, shape object (held alive by the memo, so an equal address is
//    the same shape), whether its parent is the dot's, and for an
//    all-gather its collective dimension; for the first all-gather within
//    kRootAllGatherDepth hops (the one the plan reads groups of), its
//    replica-group list, which must be explicit and non-empty (then the
//    geometry reads the list and nothing else: not the module) and is
//    compared by shared contents (held alive too);
//  - operand 1 itself (an LHS dot's activation: the analysis reads its
//    shape and parent only, never its chain): its shape object and
//    whether its parent is the dot's.
// Names are read only for reasons (with_reason false), users and control
// edges never. The settings are the caller's to keep fixed (Clear between
// runs). Only exact folds are kept (the others carry reasons). Per
// replacer Run; NeuronLoopedEinsumReplacer uses it unless
// HILO_LOOPED_EINSUM_FOLD_MEMO=0 (docs/performance.md).
class LoopedEinsumFoldMemo {
 public:
  // What a hit gives for the dot Find was given: the plan's matcher,
  // shard and activation (this dot's), its reshape shape and config.
  struct Hit {
    LoopedEinsumMatcher matcher = LoopedEinsumMatcher::kNone;
    HloInstruction* shard = nullptr;
    HloInstruction* activation = nullptr;
    const SharedShape* reshaped_weight_shape = nullptr;
    const std::string* backend_config = nullptr;
  };
  // True, with `hit` filled, when a kept fold has `dot`'s key. Either way
  // the key stays for Keep (until the next Find).
  bool Find(HloInstruction* dot, Hit* hit);
  // Keeps `plan`, the analysis of the dot last given to Find (the graph
  // unchanged since), when it is an exact LHS or LHS-RS fold whose key was
  // built, with `reshaped_weight_shape` (the shape the caller gives its
  // reshape: equal to the plan's).
  void Keep(const LoopedEinsumPlan& plan, const SharedShape& reshaped_weight_shape);
  // Forgets everything (Clear) or only the kept folds (hits() stays).
  void Clear();
  void ClearEntries();
  int64_t hits() const { return hits_; }
  // Whether Find compares the dot with the kept keys before it runs the
  // LHS and LHS-RS matchers, and then only for a miss (a kept key's chain
  // opcodes already say which matcher applies: an equal key implies it),
  // comparing the dimension numbers element by element (no memcmp calls
  // for one-element lists). Speed only: the same answers
  // (HILO_LOOPED_EINSUM_LEAN_FIND=0: matchers first, operator==;
  // docs/performance.md).
  void set_lean(bool lean) { lean_ = lean; }
  // The Finds since Clear that ran the matchers (tests of the above).
  int64_t matcher_runs() const { return matcher_runs_; }

 private:
  struct Link {
    HloInstruction* inst = nullptr;
    int64_t operand_count = 0;
    int64_t dimension = -1;
    HloOpcode opcode = HloOpcode::kParameter;
    bool same_parent = false;
  };
  struct Key {
    bool valid = false;
    const DotDimensionNumbers* dnums = nullptr;
    int length = 0;
    int root = -1;  // position of the all-gather whose groups are read
    Link links[kLoopedEinsumChainRead];
    HloInstruction* activation = nullptr;
    bool activation_same_parent = false;
  };
  struct Entry {
    DotDimensionNumbers dnums;
    int length = 0;
    int root = -1;
    Link links[kLoopedEinsumChainRead];  // inst unused: shapes[] instead
    SharedShape shapes[kLoopedEinsumChainRead];
    ReplicaGroups groups;
    SharedShape activation_shape;
    bool activation_same_parent = false;
    LoopedEinsumMatcher matcher = LoopedEinsumMatcher::kNone;
    int shard_position = -1;
    SharedShape reshaped_weight_shape;
    std::string backend_config;
  };
  // Builds key_ for `dot`; false (key_ not valid) when it has none.
  bool BuildKey(HloInstruction* dot);
  // Whether `dot`'s key is `entry`'s (without building it); `*shard` gets
  // the instruction at the entry's shard position.
  bool HasKey(HloInstruction* dot, const Entry& entry, HloInstruction** shard) const;
  // Whether a kept entry has `dot`'s key: the entry that served last first.
  bool FindEntry(HloInstruction* dot, Hit* hit);

  Key key_;
  // The two most recent kept folds (a layer may fold two kinds of dot).
  std::vector<Entry> entries_;
  size_t next_ = 0;      // the entry Keep replaces next
  size_t last_hit_ = 0;  // the entry Find tries first
  int64_t hits_ = 0;
  bool lean_ = true;
  int64_t matcher_runs_ = 0;
};

// "rhs_contracting_dim=R,tp_degree=G,num_groups=N,use_sb_to_sb=B".
std::string MakeCollectiveMatmulBackendConfig(int64_t rhs_contracting_dim, int64_t tp_degree,
                                              int64_t num_groups, bool use_sb_to_sb);

// use_sb_to_sb: 2 * bytes(element type) * elements <= threshold MiB (exact
// integer comparison; equal counts as fitting).
bool FitsSbToSb(PrimitiveType element_type, int64_t elements, int64_t threshold_mb);

// One `--explain` line for a candidate: "<dot>: fused as ..." or
// "<dot>: not fused: <reason>".
std::string ExplainLoopedEinsumPlan(const HloInstruction& dot, const LoopedEinsumPlan& plan);

}  // namespace hilo

#endif  // HILO_ANALYSIS_LOOPED_EINSUM_ANALYSIS_H_

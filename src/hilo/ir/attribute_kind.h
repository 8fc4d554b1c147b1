// The attributes the text format gives a typed meaning: HloInstruction's
// typed fields and the attributes that name computations. The parser reads
// and the printer writes each by its kind, so a name is classified once, by
// the same table, on both sides.
#ifndef HILO_IR_ATTRIBUTE_KIND_H_
#define HILO_IR_ATTRIBUTE_KIND_H_

#include <cstddef>
#include <cstdint>
#include <iterator>

#include "absl/strings/string_view.h"

namespace hilo {
namespace text_attribute {

// XLA's order for attributes that were not written in the text (set by a
// pass). Every typed attribute of HloInstruction is here, so an attribute's
// index in this list (its Attr) is also what the printer dispatches on.
inline constexpr absl::string_view kCanonicalOrder[] = {
    "index", "dimensions", "channel_id", "replica_groups", "constrain_layout",
    "use_global_device_ids", "source_target_pairs", "lhs_batch_dims", "lhs_contracting_dims",
    "rhs_batch_dims", "rhs_contracting_dims", "custom_call_target", "api_version",
    "to_apply", "condition", "body", "calls", "branch_computations", "true_computation",
    "false_computation", "called_computations", "select", "scatter", "sharding",
    "frontend_attributes", "control-predecessors", "metadata", "backend_config"};

enum Attr : int {
  kNotCanonical = -1,
  kIndex,
  kDimensions,
  kChannelId,
  kReplicaGroups,
  kConstrainLayout,
  kUseGlobalDeviceIds,
  kSourceTargetPairs,
  kLhsBatchDims,
  kLhsContractingDims,
  kRhsBatchDims,
  kRhsContractingDims,
  kCustomCallTarget,
  kApiVersion,
  kToApply,  // kToApply..kScatter name computations
  kCondition,
  kBody,
  kCalls,
  kBranchComputations,
  kTrueComputation,
  kFalseComputation,
  kCalledComputations,
  kSelect,
  kScatter,
  kSharding,
  kFrontendAttributes,
  kControlPredecessors,
  kMetadata,
  kBackendConfig,
  kAttrCount,
};
static_assert(std::size(kCanonicalOrder) == kAttrCount);
static_assert(kAttrCount <= 32, "the printer keeps a 32-bit mask of them");

// Whether the attribute's value names computations (`to_apply=%add`).
inline bool NamesComputations(Attr attr) { return attr >= kToApply && attr <= kScatter; }

// kCanonicalOrder's names by length: a name is compared with the at most
// four of its length only. (Built at compile time: a longer name, or a
// fifth of one length, fails the build.)
inline constexpr size_t kMaxAttrNameLength = 21;
inline constexpr int kMaxAttrsOfOneLength = 4;
struct AttrsByLength {
  int8_t attrs[kMaxAttrNameLength + 1][kMaxAttrsOfOneLength];
};
constexpr AttrsByLength MakeAttrsByLength() {
  AttrsByLength table{};
  for (auto& row : table.attrs) {
    for (int8_t& attr : row) attr = kNotCanonical;
  }
  for (int attr = 0; attr < kAttrCount; ++attr) {
    int8_t* row = table.attrs[kCanonicalOrder[attr].size()];
    int i = 0;
    while (row[i] != kNotCanonical) ++i;
    row[i] = static_cast<int8_t>(attr);
  }
  return table;
}
inline constexpr AttrsByLength kAttrsByLength = MakeAttrsByLength();

// The Attr of attribute `name` (kNotCanonical for any other name).
inline Attr Classify(absl::string_view name) {
  if (name.empty() || name.size() > kMaxAttrNameLength) return kNotCanonical;
  for (int8_t attr : kAttrsByLength.attrs[name.size()]) {
    if (attr == kNotCanonical) break;
    // Names of one length mostly differ in their first or last byte: those
    // are told apart without comparing the rest.
    const absl::string_view candidate = kCanonicalOrder[attr];
    if (name.front() == candidate.front() && name.back() == candidate.back() &&
        name == candidate) {
      return static_cast<Attr>(attr);
    }
  }
  return kNotCanonical;
}

}  // namespace text_attribute
}  // namespace hilo

#endif  // HILO_IR_ATTRIBUTE_KIND_H_

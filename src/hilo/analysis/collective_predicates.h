// Collective predicates: the opcode sets the stream_id / channel_id passes
// (docs/passes/stream-and-channel-ids.md) use to recognise collectives, and
// NextChannelId.
//
// The specification (seed 001) gives three bitmask predicates over opcode
// bytes and one class-based one. They select different sets on purpose and
// must not be cross-applied:
//   IsCollective               neuron::IsCollective, used by the enforcer
//   IsChannelInstruction       hlo_query::NextChannelId's scan
//   IsStreamIdCheckedCollective the checker's inlined scan
//   IsTypedCollective          the injector's DynCast<HloCollectiveInstruction>
// tests/unit/collective_predicates_test.cc evaluates the seed's bitmask
// formulas over the whole opcode table and checks they equal these sets.
#ifndef HILO_ANALYSIS_COLLECTIVE_PREDICATES_H_
#define HILO_ANALYSIS_COLLECTIVE_PREDICATES_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/functional/function_ref.h"
#include "hilo/ir/hlo_computation.h"
#include "hilo/ir/hlo_instruction.h"
#include "hilo/ir/hlo_module.h"
#include "hilo/ir/hlo_opcode.h"
#include "hilo/ir/replica_groups.h"

namespace hilo {

// all-gather, all-reduce, all-to-all, collective-permute, recv,
// reduce-scatter, send.
bool IsCollective(HloOpcode opcode);
inline bool IsCollective(const HloInstruction& instruction) {
  return IsCollective(instruction.opcode());
}

// The instructions that carry a channel_id (XLA's HloChannelInstruction):
// all-gather, all-gather-start, all-reduce, all-reduce-start, all-to-all,
// collective-broadcast, collective-permute, collective-permute-start,
// ragged-all-to-all, recv, recv-done, reduce-scatter, send, send-done.
// recv-done is included: see the decision in docs/passes/stream-and-channel-ids.md.
bool IsChannelInstruction(HloOpcode opcode);
inline bool IsChannelInstruction(const HloInstruction& instruction) {
  return IsChannelInstruction(instruction.opcode());
}

// The checker's set: all-gather, all-gather-start, all-reduce,
// all-reduce-start, all-to-all, collective-broadcast, ragged-all-to-all,
// reduce-scatter.
bool IsStreamIdCheckedCollective(HloOpcode opcode);
inline bool IsStreamIdCheckedCollective(const HloInstruction& instruction) {
  return IsStreamIdCheckedCollective(instruction.opcode());
}

// The injector's typed test: the instructions that carry replica groups
// (XLA's HloCollectiveInstruction subclasses). Same eight opcodes as the
// checker's set.
bool IsTypedCollective(HloOpcode opcode);
inline bool IsTypedCollective(const HloInstruction& instruction) {
  return IsTypedCollective(instruction.opcode());
}

// 1 + the largest channel_id on any IsChannelInstruction in any computation;
// at least 1.
int64_t NextChannelId(const HloModule& module);

// The replica groups a typed collective is compared by: its
// `replica_groups=` attribute, or the empty explicit list `{}` when it has
// none (XLA's replica_groups() of a collective without the attribute).
const ReplicaGroups& ReplicaGroupsOrEmpty(const HloInstruction& instruction);

// Compares many replica groups against one fixed exemplar with exactly
// ReplicaGroupsEqual's result, expanding the exemplar once instead of on
// every comparison, and each distinct iota list at most once. Not
// thread-safe (it memoizes).
class ReplicaGroupsMatcher {
 public:
  explicit ReplicaGroupsMatcher(ReplicaGroups exemplar);
  const ReplicaGroups& exemplar() const { return exemplar_; }
  bool Matches(const ReplicaGroups& groups) const;

 private:
  ReplicaGroups exemplar_;
  // nullopt when the exemplar does not expand (raw form, bad iota).
  std::optional<std::vector<std::vector<int64_t>>> expanded_;
  // Result per iota list already compared (by its text).
  mutable absl::flat_hash_map<std::string, bool> iota_memo_;
};

// Calls `visit` on the instructions of `computation` in exactly the order of
// computation.MakeInstructionPostOrder(), stopping as soon as `visit`
// returns true. The injector's discovery scans only need the first matching
// collective in post order; stopping there avoids building the post order
// of a whole large computation. Iterative (explicit stack).
void WalkPostOrderUntil(const HloComputation& computation,
                        absl::FunctionRef<bool(const HloInstruction*)> visit);

}  // namespace hilo

#endif  // HILO_ANALYSIS_COLLECTIVE_PREDICATES_H_

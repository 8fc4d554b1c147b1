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

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/functional/function_ref.h"
#include "absl/types/span.h"
#include "hilo/ir/hlo_computation.h"
#include "hilo/ir/hlo_instruction.h"
#include "hilo/ir/hlo_module.h"
#include "hilo/ir/hlo_opcode.h"
#include "hilo/ir/prefetch.h"
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
// One step of NextChannelId: `next` after also seeing `id`. An id of
// INT64_MAX has no successor: the result saturates rather than overflows.
inline int64_t NextChannelIdAfter(int64_t next, const std::optional<int64_t>& id) {
  if (id.has_value() && *id >= next) return *id == INT64_MAX ? INT64_MAX : *id + 1;
  return next;
}

// A set of opcodes as a 256-bit mask: one test per instruction on the scans
// below instead of a call through a predicate.
class OpcodeSet {
 public:
  explicit OpcodeSet(bool (*predicate)(HloOpcode));
  bool contains(HloOpcode opcode) const {
    const unsigned bit = static_cast<uint8_t>(opcode);
    return (words_[bit >> 6] >> (bit & 63)) & 1;
  }

 private:
  std::array<uint64_t, 4> words_ = {};
};

// Hints the cache line holding `instruction`'s opcode. A scan over every
// instruction of a large module pays one cache miss per instruction (each
// instruction is its own heap object); hinting a few positions ahead lets
// those misses overlap instead of being paid one after the other. The
// opcode is stored right before the shape (hlo_instruction.h), and opcode()
// returns a copy, so the shape's address stands for it: if the layout
// changes, only the hint gets worse.
inline void PrefetchOpcode(const HloInstruction* instruction) {
  PrefetchLine(&instruction->shape());
}

// Hints the first and the last byte of `*field`: for an std::optional
// whose value spans cache lines, the start of the value and the engaged
// flag after it.
template <typename T>
inline void PrefetchEnds(const T* field) {
  PrefetchLine(field);
  PrefetchLine(reinterpret_cast<const char*>(field) + sizeof(T) - 1);
}

// Appends to `out` the instructions of `computation` whose opcode is in
// `select`, in written order (the order of computation.instructions()), and
// to `subset_out` those of them whose opcode is also in `subset`.
void AppendInstructionsWithOpcode(const HloComputation& computation, const OpcodeSet& select,
                                  std::vector<HloInstruction*>* out, const OpcodeSet& subset,
                                  std::vector<HloInstruction*>* subset_out);

// A module's channel instructions (IsChannelInstruction) and, among them,
// its typed collectives (IsTypedCollective), each list computation by
// computation in module order (module.computations()) and in list order
// within a computation.
struct CollectiveScan {
  std::vector<HloInstruction*> channel;
  std::vector<HloInstruction*> typed;
  // Computation c's channel instructions are channel[channel_begin[c],
  // channel_begin[c + 1]), its typed collectives typed[typed_begin[c],
  // typed_begin[c + 1]); one entry per computation, and one more.
  std::vector<size_t> channel_begin;
  std::vector<size_t> typed_begin;
};

// The scan of `module` as it is now: one sweep over every computation's
// instructions (AppendInstructionsWithOpcode). Never kept.
CollectiveScan SweepCollectives(const HloModule& module);

// SweepCollectives(module)'s result, kept: the last scan on this thread is
// kept with its module's channel_generation() and channel_removals(). While
// the generation is unchanged it is given again, without the instructions
// removed since (those with no parent; hlo_module.h says why that is then
// exactly the module's list). The pipeline's checker, injector and enforcer
// then share one sweep of a large module, the looped-einsum replacer's
// removals of all-gathers between them included. What the instructions hold
// (channel_id, stream_id, replica groups) is read from them, never kept
// here. HILO_COLLECTIVE_SCAN_CACHE=0 sweeps on every call (the switch of
// this saving, measured in docs/performance.md).
std::shared_ptr<const CollectiveScan> ScanCollectives(const HloModule& module);

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

// Structural equivalence: the cheapest sound verdict (issue 17, item 5).
//
// Most runs of the collective passes over a real dump change nothing that
// the values depend on: they add stream ids (frontend attributes), renumber
// channel ids, or fire nowhere. Two modules whose instructions are the same,
// in the same computations, once the attributes that cannot change a value
// are set aside, compute the same function, whatever their size: no run is
// needed. Set aside (semantics-free for the values, in XLA as here):
// `metadata`, `frontend_attributes`, `backend_config` of instructions other
// than custom-calls (backend scheduling hints; a custom-call's config is its
// contract and is compared), and the *value* of `channel_id` on instructions
// other than send/recv (its presence decides the collective's group mode and
// is compared; send/recv pair by value, so theirs is compared too). On a
// grid of one partition, the group mode of all-gather, all-reduce and
// reduce-scatter (and their -start) does not depend on `channel_id` or
// `use_global_device_ids` at all (replica ids, replica-and-partition ids
// and flattened ids all name the same devices when P = 1), so both are set
// aside there; the unique-channel-id pass adds channel ids to such
// collectives of every torch-xla dump.
#ifndef HILO_EVAL_STRUCTURAL_H_
#define HILO_EVAL_STRUCTURAL_H_

#include <optional>
#include <string>

#include "hilo/ir/hlo_computation.h"
#include "hilo/ir/hlo_instruction.h"
#include "hilo/ir/hlo_module.h"

namespace hilo {
namespace eval {

// The instruction as text with the set-aside attributes removed (and
// `control-predecessors`, which order execution and change no value).
std::string CanonicalInstructionText(const HloInstruction& instruction, int64_t num_partitions);
// The instruction as text without `metadata` and `control-predecessors`:
// what cone.cc copies into an extracted module, where the instructions it
// names may be absent.
std::string InstructionTextForExtraction(const HloInstruction& instruction);

// nullopt when the two computations (of the same name) are structurally
// equivalent, instruction for instruction; otherwise the first difference.
// Computations they call are not looked into.
std::optional<std::string> ComputationDifference(const HloComputation& before,
                                                 const HloComputation& after, int64_t num_partitions);

// nullopt when the modules are structurally equivalent (above); otherwise
// the first difference, e.g. "computation main: %dot.5 differs".
// `num_partitions`: of the device grid both run on.
std::optional<std::string> StructuralDifference(const HloModule& before, const HloModule& after,
                                                int64_t num_partitions);

}  // namespace eval
}  // namespace hilo

#endif  // HILO_EVAL_STRUCTURAL_H_

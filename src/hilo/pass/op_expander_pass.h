// OpExpanderPass: the driver shared by passes that rewrite one instruction
// at a time (XLA's OpExpanderPass).
//
// Run collects, for every computation in module order, the instructions
// that match the pattern, in post order, before changing anything; then
// expands each. ExpandInstruction may return
//   - a new instruction it added to the computation,
//   - an existing instruction (pure rerouting: nothing is added), or
//   - nullptr, or the instruction itself: no change.
// For a non-null result different from the instruction, Run replaces every
// use of the instruction (and its root role) with the result, carries
// metadata and frontend attributes over when the result has none, and
// removes the instruction and the chain of operands it leaves dead
// (collectives included). An instruction removed by an earlier expansion
// is skipped.
//
// A pass that names the opcodes it can match (OfferedOpcodes) is offered
// only instructions with those opcodes, in the same post order.
#ifndef HILO_PASS_OP_EXPANDER_PASS_H_
#define HILO_PASS_OP_EXPANDER_PASS_H_

#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "hilo/pass/hlo_pass_interface.h"

namespace hilo {

class OpExpanderPass : public HloPassInterface {
 public:
  absl::StatusOr<bool> Run(HloModule* module) override;
  // Every instruction an expansion added (found by unique id: new ones are
  // numbered above every old one), the users of each replaced instruction
  // (but those whose only change is a replacement with the same shape
  // object: ReroutedUserNeedsNoCheck in hlo_verifier.h) and an existing
  // instruction that took its place.
  const std::vector<const HloInstruction*>* touched_instructions() const override {
    return &touched_;
  }
  // True when every replacing expansion of the last Run called
  // NoteExpansionReadsOnlyAncestors.
  bool touched_made_no_cycle() const override { return made_no_cycle_; }

 protected:
  virtual bool InstructionMatchesPattern(HloInstruction* instruction) = 0;
  virtual absl::StatusOr<HloInstruction*> ExpandInstruction(HloInstruction* instruction) = 0;
  // The opcodes InstructionMatchesPattern can accept: instructions with
  // other opcodes are not offered to it, so the pass must neither match
  // them nor record anything about them. Empty (the default): every
  // instruction is offered.
  virtual absl::Span<const HloOpcode> OfferedOpcodes() const { return {}; }
  // Called once a Run, before any InstructionMatchesPattern, when the pass
  // knows how many instructions it will offer at most (`count`, the
  // instructions of offered opcodes in the computations it walks): room
  // for what matching keeps can be reserved. Not called when the count is
  // not known (no OfferedOpcodes, or a switch at 0). A hint only.
  virtual void WillOfferAtMost(size_t count) { (void)count; }

  // During ExpandInstruction: the instructions added by the expansions of
  // this Run in the computation being expanded have unique ids >= this (the
  // module numbers instructions in order of addition; this is one past the
  // largest id the computation had when matching began). Every other
  // instruction of that computation is as it was when matched, except for
  // operands an expansion rerouted to an added instruction.
  int64_t added_ids_begin() const { return old_ids_end_; }

  // Called by ExpandInstruction when what it returns replaces the
  // instruction I, every instruction it added reads only instructions it
  // added or strict ancestors of I (I's operands, their operands, ...;
  // control predecessors included), and it changed no other edge. Then
  // replacing I cannot close a cycle in an acyclic computation: an edge
  // into an added instruction comes from an added one or is a user of I
  // rerouted to the replacement; an added instruction leads only to added
  // ones or to ancestors of I, and from an ancestor of I old edges lead only
  // to ancestors of I, none of which was a user of I (that would have been
  // a cycle through I); so no path leads from the replacement back to a
  // rerouted user. Removing I and its dead operands removes edges (and
  // relays a control edge pred -> succ only where pred -> I -> succ was a
  // path). docs/pass-framework.md states it; the touched-set check then
  // leaves out the cycle search.
  void NoteExpansionReadsOnlyAncestors() { expansion_vouched_ = true; }

 private:
  std::vector<const HloInstruction*> touched_;
  int64_t old_ids_end_ = 0;
  bool made_no_cycle_ = false;
  bool expansion_vouched_ = false;
};

}  // namespace hilo

#endif  // HILO_PASS_OP_EXPANDER_PASS_H_

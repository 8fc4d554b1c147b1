// VerifyHloModule: structural and shape checks of an HloModule.
//
// Returns OK or a FailedPrecondition status whose message names the
// computation and instruction and says what is wrong (the first problem
// found, in module order). Never aborts, whatever the module. Frontend
// attributes are not read: HloPassPipeline does not verify again after a
// pass that changed nothing else (HloPassInterface::ChangeScope).
#ifndef HILO_ANALYSIS_HLO_VERIFIER_H_
#define HILO_ANALYSIS_HLO_VERIFIER_H_

#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "hilo/ir/hlo_instruction.h"
#include "hilo/ir/hlo_module.h"
#include "hilo/ir/hlo_opcode.h"

namespace hilo {

struct HloVerifierOptions {
  // Floating-point element types may differ where a shape is otherwise
  // required to match (bf16 operand, f32 result), as with XLA's verifier
  // under allow_mixed_precision, which XLA's own tests (HloTestBase) enable
  // and which many corpus modules rely on. Integer, pred, token and
  // floating-point classes never mix.
  bool allow_mixed_precision = true;
};

absl::Status VerifyHloModule(const HloModule& module);
absl::Status VerifyHloModule(const HloModule& module, const HloVerifierOptions& options);

// The checks of VerifyHloModule that concern `touched` (instructions a
// pass added, or whose operands or users it changed), for a module that was
// valid before that change: each touched instruction's parent, operands,
// users, control edges, arity and shape; its name is non-empty, known to
// the module's name index; every computation
// holding one has its root and no cycle (one linear search each).
// Instructions no longer in a computation are skipped. A touched parameter
// or instruction that calls computations makes it verify the whole module.
// HloPassPipeline uses it for passes that list what they touched
// (docs/pass-framework.md).
absl::Status VerifyHloInstructions(const HloModule& module,
                                  absl::Span<const HloInstruction* const> touched);

// Whether a user whose only change is that an operand was swapped for an
// instruction with the very same shape object (HloInstruction::shape()
// returning one object, e.g. a replacement made with the old one's
// shared_shape()) can be left out of `touched`, given that the replacement
// is in it. For such a user every check above gives the answer it gave on
// the valid module before the change:
//   - its parent, name, arity, users and control edges did not change;
//   - the swapped operand edge is checked from the replacement's side:
//     CheckUsers finds the user among the replacement's users (the swap,
//     ReplaceOperandWithAll, adds it there in the same step), in the
//     replacement's computation and using it; so the operand is in the
//     user's computation and lists the user;
//   - its shape check reads, of its operands, only their shapes (the same
//     objects as before), except send-done's and recv-done's, which read the
//     operand's opcode and channel id (VerifyDone): those users are listed;
//   - a cycle through the new edge is found by the cycle search of the
//     replacement's computation (the same computation);
//   - an instruction that calls computations makes VerifyHloInstructions
//     verify the whole module for its call graph; the user's calls did not
//     change, so leaving it out only skips that repeat.
// A new shape check that reads more of an operand than its shape must be
// added to the exceptions here (tested by
// IncrementalVerificationTest.AReroutedUserWithTheSameShapeObjectIsNotListed).
bool ReroutedUserNeedsNoCheck(HloOpcode user_opcode);

// Where the problem a failed verification reports is: its computation and,
// when it is one instruction's, that instruction (names without '%'; empty
// for a problem of the computation as a whole). Carried by the status
// VerifyHloModule returns, as a payload, so that a tool can point at the
// text the module was parsed from (FindDefinition in text/source_location.h).
struct VerifierLocation {
  std::string computation;
  std::string instruction;
};
std::optional<VerifierLocation> GetVerifierLocation(const absl::Status& status);

}  // namespace hilo

#endif  // HILO_ANALYSIS_HLO_VERIFIER_H_

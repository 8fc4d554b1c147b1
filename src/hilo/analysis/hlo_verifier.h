// VerifyHloModule: structural and shape checks of an HloModule.
//
// Returns OK or a FailedPrecondition status whose message names the
// computation and instruction and says what is wrong (the first problem
// found, in module order). Never aborts, whatever the module. Frontend
// attributes are not read: HloPassPipeline does not verify again after a
// pass that changed nothing else (HloPassInterface::ChangeScope).
#ifndef HILO_ANALYSIS_HLO_VERIFIER_H_
#define HILO_ANALYSIS_HLO_VERIFIER_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

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

// The per-instruction shape checks of VerifyHloModule run ahead, on
// instructions of a module still being built (hilo-opt runs them on its
// verifier thread while the parser reads the rest of the module: docs/
// verifier.md, "Checking ahead"). Each check that passes is remembered, and
// VerifyHloModule(module, precheck) skips it; one that fails is only not
// remembered, so the verdict and its message are those of VerifyHloModule
// whatever ran ahead. Not thread-safe itself: one thread calls Check and
// then VerifyHloModule.
class HloShapePrecheck {
 public:
  explicit HloShapePrecheck(const HloVerifierOptions& options = {});
  ~HloShapePrecheck();
  HloShapePrecheck(const HloShapePrecheck&) = delete;
  HloShapePrecheck& operator=(const HloShapePrecheck&) = delete;

  // Whether Check(inst) may run on another thread from now on while the
  // builder still adds users and control edges to `inst` and its operands
  // (nothing else of them may change: opcode, shape, operands, attributes,
  // called computations, and the module's replica and partition counts).
  // Asked on the building thread: a check that reads the attribute block
  // the builder may still allocate (HloInstruction::has_uncommon_block),
  // or other instructions' attributes, or called computations, is not
  // run ahead.
  // Inline: asked on the parsing thread for every instruction it reports.
  static bool MayCheckAhead(const HloInstruction& inst) {
    switch (inst.opcode()) {
      // The checks of these read called computations (built later, maybe)
      // or the operand's attribute block.
      case HloOpcode::kWhile:
      case HloOpcode::kConditional:
      case HloOpcode::kCall:
      case HloOpcode::kSendDone:
      case HloOpcode::kRecvDone:
        return false;
      // These read their own attribute block (replica groups, channel, dot
      // dimensions): only once it exists can a user added meanwhile (which
      // may allocate it for its rare group) not race with the check.
      case HloOpcode::kDot:
      case HloOpcode::kAllGather:
      case HloOpcode::kReduceScatter:
      case HloOpcode::kAllReduce:
      case HloOpcode::kSend:
      case HloOpcode::kRecv:
        return inst.has_uncommon_block();
      // The others read the opcode, shape, operands' shapes, dimensions and
      // tuple index: final once built.
      default:
        return true;
    }
  }
  // Runs the shape check of `inst` (with the arity and operand checks it
  // relies on), all instructions of one module.
  void Check(const HloInstruction& inst);
  // How many checks passed (for tests).
  int64_t passed_count() const { return passed_count_; }

 private:
  friend absl::Status VerifyHloModule(const HloModule& module, const HloShapePrecheck& precheck);
  class Checker;
  bool Passed(const HloInstruction& inst) const;

  HloVerifierOptions options_;
  std::unique_ptr<Checker> checker_;  // made for the first instruction's module
  std::vector<uint64_t> passed_;      // one bit per unique id
  int64_t passed_count_ = 0;
};

// VerifyHloModule with the precheck's options, skipping the checks that
// passed in `precheck` (which saw instructions of this module only, and
// none of them changed since).
absl::Status VerifyHloModule(const HloModule& module, const HloShapePrecheck& precheck);

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
// The same; `search_cycles` false leaves out the cycle search, for a change
// its maker proved cannot close a cycle (HloPassInterface::touched_made_no_cycle).
absl::Status VerifyHloInstructions(const HloModule& module,
                                  absl::Span<const HloInstruction* const> touched,
                                  bool search_cycles);

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

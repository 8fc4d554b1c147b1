// HloDCE (`dce`): dead code elimination.
//
// Removes, in every computation, each instruction that nothing uses: not
// the root, no users, no side effect (HloComputation::HasSideEffect keeps
// parameters, send/recv and their done ops, infeed/outfeed, rng ops and
// custom-calls marked custom_call_has_side_effect=true) and no control
// dependency (an ordering edge is a use we do not second-guess, as the IR's
// RemoveInstructionAndUnusedOperands does). Removing an instruction can
// make its operands dead; they are removed too, with a worklist, so a dead
// chain of any length goes in one linear run. Collectives are ordinary
// instructions here: an unused all-gather is removed.
//
// Then every computation no live instruction reaches from the entry
// computation (through to_apply, body, calls, ...) is removed, as XLA's DCE
// removes dead computations. A module without an entry computation keeps
// all its computations.
//
// Report details: "removed_instructions", "removed_computations".
#ifndef HILO_PASS_HLO_DCE_H_
#define HILO_PASS_HLO_DCE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "hilo/pass/hlo_pass_interface.h"

namespace hilo {

class HloDCE : public HloPassInterface {
 public:
  static constexpr absl::string_view kName = "dce";
  absl::string_view name() const override { return kName; }
  absl::StatusOr<bool> Run(HloModule* module) override;
  nlohmann::json ReportDetails() const override;
  std::string ChangeSummary() const override;
  // Nothing: it only removes dead instructions (no control edges to relay)
  // and unreachable computations, which leaves what stays valid; the
  // pipeline then checks nothing for it (docs/pass-framework.md).
  const std::vector<const HloInstruction*>* touched_instructions() const override {
    return &no_instructions_;
  }

  int64_t removed_instructions() const { return removed_instructions_; }
  int64_t removed_computations() const { return removed_computations_; }

 private:
  // ChangeSummary() names the first few removed instructions.
  static constexpr size_t kNamesInSummary = 3;
  std::vector<std::string> first_removed_;
  int64_t removed_instructions_ = 0;
  int64_t removed_computations_ = 0;
  const std::vector<const HloInstruction*> no_instructions_;
};

}  // namespace hilo

#endif  // HILO_PASS_HLO_DCE_H_

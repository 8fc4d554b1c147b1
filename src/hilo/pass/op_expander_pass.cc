#include "hilo/pass/op_expander_pass.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "hilo/ir/hlo_computation.h"

namespace hilo {

absl::StatusOr<bool> OpExpanderPass::Run(HloModule* module) {
  bool changed = false;
  // As XLA's OpExpanderPass::Run: fusion computations are left alone.
  for (HloComputation* computation : module->MakeNonfusionComputations()) {
    std::vector<HloInstruction*> matching;
    for (HloInstruction* inst : computation->MakeInstructionPostOrder()) {
      if (InstructionMatchesPattern(inst)) matching.push_back(inst);
    }
    for (HloInstruction* inst : matching) {
      if (inst->parent() != computation) continue;  // removed by an earlier expansion
      absl::StatusOr<HloInstruction*> expanded = ExpandInstruction(inst);
      if (!expanded.ok()) {
        return absl::Status(expanded.status().code(),
                            absl::StrCat(name(), ": expanding ", inst->name(), " in ",
                                         computation->name(), ": ", expanded.status().message()));
      }
      HloInstruction* replacement = *expanded;
      if (replacement == nullptr || replacement == inst) continue;
      absl::Status status = computation->ReplaceInstruction(inst, replacement);
      if (!status.ok()) {
        return absl::Status(status.code(), absl::StrCat(name(), ": ", status.message()));
      }
      changed = true;
    }
  }
  return changed;
}

}  // namespace hilo

#include "hilo/pass/hlo_dce.h"

#include <memory>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "hilo/ir/hlo_computation.h"

namespace hilo {
namespace {

bool IsDead(const HloInstruction* inst) {
  const HloComputation* computation = inst->parent();
  return computation != nullptr && inst->users().empty() &&
         inst != computation->root_instruction() && !HloComputation::HasSideEffect(inst) &&
         inst->control_predecessors().empty() && inst->control_successors().empty();
}

}  // namespace

absl::StatusOr<bool> HloDCE::Run(HloModule* module) {
  removed_instructions_ = 0;
  removed_computations_ = 0;
  first_removed_.clear();

  for (HloComputation* computation : module->computations()) {
    // The list read in place (nothing is removed until the sweep is done).
    std::vector<HloInstruction*> worklist;
    for (const std::unique_ptr<HloInstruction>& inst : computation->instruction_slots()) {
      if (inst != nullptr && IsDead(inst.get())) worklist.push_back(inst.get());
    }
    while (!worklist.empty()) {
      HloInstruction* inst = worklist.back();
      worklist.pop_back();
      // Listed twice (an operand of several removed users) or already gone.
      if (inst->parent() != computation || !IsDead(inst)) continue;
      std::vector<HloInstruction*> operands(inst->operands().begin(), inst->operands().end());
      if (first_removed_.size() < kNamesInSummary) first_removed_.push_back(absl::StrCat("%", inst->name()));
      absl::Status status = computation->RemoveInstruction(inst);
      if (!status.ok()) {
        return absl::InternalError(absl::StrCat("removing ", inst->name(), " from ",
                                                computation->name(), ": ", status.message()));
      }
      ++removed_instructions_;
      for (HloInstruction* operand : operands) {
        if (IsDead(operand)) worklist.push_back(operand);
      }
    }
  }

  HloComputation* entry = module->entry_computation();
  if (entry != nullptr) {
    absl::flat_hash_set<const HloComputation*> reachable = {entry};
    std::vector<const HloComputation*> stack = {entry};
    while (!stack.empty()) {
      const HloComputation* computation = stack.back();
      stack.pop_back();
      // In place: no copy of the list, no vector of called computations per
      // instruction.
      for (const std::unique_ptr<HloInstruction>& inst : computation->instruction_slots()) {
        if (inst == nullptr) continue;
        for (const CalledComputationAttribute& attr : inst->called_computation_attributes()) {
          for (const HloComputation* called : attr.computations) {
            if (called != nullptr && reachable.insert(called).second) stack.push_back(called);
          }
        }
      }
    }
    // Unreachable computations may call each other; removing them all at
    // once leaves no dangling caller behind.
    for (HloComputation* computation : module->computations()) {
      if (!reachable.contains(computation)) {
        module->RemoveComputation(computation);
        ++removed_computations_;
      }
    }
  }
  return removed_instructions_ > 0 || removed_computations_ > 0;
}

std::string HloDCE::ChangeSummary() const {
  if (removed_instructions_ == 0 && removed_computations_ == 0) return "";
  std::string summary =
      absl::StrCat("removed ", CountOf(removed_instructions_, "dead instruction"));
  if (!first_removed_.empty()) {
    absl::StrAppend(&summary, " (", absl::StrJoin(first_removed_, ", "),
                    removed_instructions_ > static_cast<int64_t>(first_removed_.size()) ? ", ..." : "",
                    ")");
  }
  if (removed_computations_ > 0) {
    absl::StrAppend(&summary, " and ", CountOf(removed_computations_, "unreachable computation"));
  }
  return summary;
}

nlohmann::json HloDCE::ReportDetails() const {
  nlohmann::json details = nlohmann::json::object();
  details["removed_instructions"] = removed_instructions_;
  details["removed_computations"] = removed_computations_;
  return details;
}

}  // namespace hilo

#include "hilo/pass/hlo_dce.h"

#include <memory>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "hilo/ir/env_switch.h"
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
  // The reachability below needs, of each computation, the live
  // instructions that call computations. The sweep for dead instructions
  // notes them as it goes (they are few: a layer's all-reduce and its
  // `to_apply`), so the reachability reads those instead of sweeping every
  // reachable computation's list a second time (the list of a large module
  // is read from memory once instead of twice). HILO_DCE_ONE_SWEEP=0: the
  // second sweep (the switch of this saving, measured in
  // docs/performance.md).
  const bool one_sweep = !EnvSwitchIsZero("HILO_DCE_ONE_SWEEP");
  std::vector<const HloInstruction*> callers;
  // Of each computation with callers: where its run of `callers` ends (it
  // starts where the previous computation's ended).
  absl::flat_hash_map<const HloComputation*, std::pair<size_t, size_t>> caller_runs;

  for (HloComputation* computation : module->computations()) {
    // The list read in place (nothing is removed until the sweep is done).
    std::vector<HloInstruction*> worklist;
    const size_t callers_begin = callers.size();
    for (HloInstruction* inst : computation->instruction_slots()) {
      if (inst == nullptr) continue;
      if (one_sweep && !inst->called_computation_attributes().empty()) callers.push_back(inst);
      // Most instructions have a user: that test first, inline.
      if (inst->users().empty() && IsDead(inst)) worklist.push_back(inst);
    }
    if (callers.size() > callers_begin) {
      caller_runs.emplace(computation, std::make_pair(callers_begin, callers.size()));
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
    auto reach_from = [&](const HloInstruction& inst) {
      for (const CalledAttributeView& attr : inst.called_computation_attributes()) {
        for (const HloComputation* called : attr.computations) {
          if (called != nullptr && reachable.insert(called).second) stack.push_back(called);
        }
      }
    };
    while (!stack.empty()) {
      const HloComputation* computation = stack.back();
      stack.pop_back();
      if (one_sweep) {
        const auto run = caller_runs.find(computation);
        if (run == caller_runs.end()) continue;
        for (size_t i = run->second.first; i < run->second.second; ++i) {
          // Removed by the sweep above: not live.
          if (callers[i]->parent() == computation) reach_from(*callers[i]);
        }
        continue;
      }
      // In place: no copy of the list, no vector of called computations per
      // instruction.
      for (HloInstruction* inst : computation->instruction_slots()) {
        if (inst != nullptr) reach_from(*inst);
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

#include "hilo/pass/op_expander_pass.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "hilo/analysis/hlo_verifier.h"
#include "hilo/ir/env_switch.h"
#include "hilo/ir/hlo_computation.h"

namespace hilo {

namespace {

// Every computation's offered instructions in list order and the end of its
// unique ids, with the computations that fusions call, from one scan of
// every instruction made before anything is expanded: the scan
// HloModule::MakeNonfusionComputations makes for the fused set is the same
// walk, so the two are one (HILO_EXPANDER_ONE_SCAN=0: two walks, docs/
// performance.md). Valid for a computation only while nothing has been
// expanded in this run (an expansion may add to or remove from any
// computation); after that OpExpanderPass::Run lists the computation again.
struct ModuleScan {
  std::vector<HloComputation*> computations;  // all of them, module order
  std::vector<size_t> begins;                 // of each one's in `listed`, and the end
  std::vector<int64_t> ids_ends;              // its largest unique id + 1 (0 if empty)
  std::vector<HloInstruction*> listed;
  absl::flat_hash_set<const HloComputation*> fused;  // as MakeNonfusionComputations
};

void ScanModule(const HloModule& module, const std::array<bool, 256>& offered, ModuleScan* scan) {
  scan->computations = module.computations();
  scan->begins.reserve(scan->computations.size() + 1);
  scan->ids_ends.reserve(scan->computations.size());
  for (const HloComputation* computation : scan->computations) {
    scan->begins.push_back(scan->listed.size());
    int64_t ids_end = 0;
    for (HloInstruction* slot : computation->instruction_slots()) {
      if (slot == nullptr) continue;
      ids_end = std::max(ids_end, slot->unique_id() + 1);
      const HloOpcode opcode = slot->opcode();
      if (offered[static_cast<uint8_t>(opcode)]) scan->listed.push_back(slot);
      if (opcode == HloOpcode::kFusion) {
        for (const HloComputation* called : slot->called_computations("calls")) {
          scan->fused.insert(called);
        }
      }
    }
    scan->ids_ends.push_back(ids_end);
  }
  scan->begins.push_back(scan->listed.size());
}

}  // namespace

absl::StatusOr<bool> OpExpanderPass::Run(HloModule* module) {
  bool changed = false;
  touched_.clear();
  made_no_cycle_ = true;
  // Which opcodes are offered to InstructionMatchesPattern (by value).
  std::array<bool, 256> offered;
  const absl::Span<const HloOpcode> opcodes = OfferedOpcodes();
  offered.fill(opcodes.empty());
  for (HloOpcode opcode : opcodes) offered[static_cast<uint8_t>(opcode)] = true;
  // As XLA's OpExpanderPass::Run: fusion computations are left alone.
  // HILO_EXPANDER_LIST_ORDER=0: always walk the post order (the switch of
  // the saving below, measured in docs/performance.md).
  const bool list_order = !opcodes.empty() && !EnvSwitchIsZero("HILO_EXPANDER_LIST_ORDER");
  std::vector<HloInstruction*> listed;
  // HILO_EXPANDER_SKIP_REROUTED_USERS=0: list every user of a replaced
  // instruction (the switch of the saving below, docs/performance.md).
  const bool skip_rerouted_users = !EnvSwitchIsZero("HILO_EXPANDER_SKIP_REROUTED_USERS");
  const bool one_scan = list_order && !EnvSwitchIsZero("HILO_EXPANDER_ONE_SCAN");
  ModuleScan scan;
  if (one_scan) {
    ScanModule(*module, offered, &scan);
    WillOfferAtMost(scan.listed.size());
  }
  const std::vector<HloComputation*> computations =
      one_scan ? scan.computations : module->MakeNonfusionComputations();
  bool expanded_any = false;  // ExpandInstruction called: `scan` may be stale
  for (size_t k = 0; k < computations.size(); ++k) {
    HloComputation* computation = computations[k];
    if (one_scan && scan.fused.contains(computation)) continue;
    std::vector<HloInstruction*> matching;
    // Instructions added from here on have larger unique ids (the module
    // numbers them in order of addition).
    int64_t old_ids_end = 0;
    // The offered instructions in list order. When each depends on the one
    // listed before it, the post order has them in list order too (its
    // other instructions are never offered), so they are matched as listed
    // and the walk is not needed: the same calls in the same order. A
    // module of layers has its dots in such a chain.
    listed.clear();
    absl::Span<HloInstruction* const> offered_listed;
    if (one_scan && !expanded_any) {
      offered_listed = absl::MakeConstSpan(scan.listed).subspan(
          scan.begins[k], scan.begins[k + 1] - scan.begins[k]);
      old_ids_end = scan.ids_ends[k];
    } else if (list_order) {
      for (HloInstruction* slot : computation->instruction_slots()) {
        if (slot == nullptr) continue;
        old_ids_end = std::max(old_ids_end, slot->unique_id() + 1);
        if (offered[static_cast<uint8_t>(slot->opcode())]) listed.push_back(slot);
      }
      offered_listed = listed;
    }
    if (list_order && computation->IsDependencyChain(offered_listed)) {
      for (HloInstruction* inst : offered_listed) {
        if (InstructionMatchesPattern(inst)) matching.push_back(inst);
      }
    } else {
      computation->WalkPostOrderUntil([&](HloInstruction* inst) {
        old_ids_end = std::max(old_ids_end, inst->unique_id() + 1);
        if (offered[static_cast<uint8_t>(inst->opcode())] && InstructionMatchesPattern(inst)) {
          matching.push_back(inst);
        }
        return false;
      });
    }
    old_ids_end_ = old_ids_end;
    bool computation_changed = false;
    for (HloInstruction* inst : matching) {
      if (inst->parent() != computation) continue;  // removed by an earlier expansion
      expansion_vouched_ = false;
      expanded_any = true;
      absl::StatusOr<HloInstruction*> expanded = ExpandInstruction(inst);
      if (!expanded.ok()) {
        return absl::Status(expanded.status().code(),
                            absl::StrCat(name(), ": expanding ", inst->name(), " in ",
                                         computation->name(), ": ", expanded.status().message()));
      }
      HloInstruction* replacement = *expanded;
      if (replacement == nullptr || replacement == inst) continue;
      made_no_cycle_ &= expansion_vouched_;
      touched_.push_back(replacement);
      // A user only rerouted to a replacement with the very same shape
      // object has nothing left to check (VerifyHloInstructions would give
      // the answer it gave before the change): see
      // ReroutedUserNeedsNoCheck in hlo_verifier.h.
      const bool same_shape = skip_rerouted_users && &replacement->shape() == &inst->shape();
      for (HloInstruction* user : inst->users()) {
        if (!same_shape || !ReroutedUserNeedsNoCheck(user->opcode())) touched_.push_back(user);
      }
      absl::Status status = computation->ReplaceInstruction(inst, replacement);
      if (!status.ok()) {
        return absl::Status(status.code(), absl::StrCat(name(), ": ", status.message()));
      }
      changed = true;
      computation_changed = true;
    }
    if (!computation_changed) continue;
    // The added instructions are at the end of the list, in order of
    // addition. (Their operands gained users: checking the added ones checks
    // those edges from both sides.)
    const absl::Span<HloInstruction* const> after = computation->instruction_slots();
    for (auto it = after.rbegin(); it != after.rend(); ++it) {
      if (*it == nullptr) continue;
      if ((*it)->unique_id() < old_ids_end) break;
      touched_.push_back(*it);
    }
  }
  return changed;
}

}  // namespace hilo

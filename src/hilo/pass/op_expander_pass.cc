#include "hilo/pass/op_expander_pass.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "hilo/ir/env_switch.h"
#include "hilo/ir/hlo_computation.h"

namespace hilo {
namespace {

// Which opcodes are offered to InstructionMatchesPattern (by value).
using OpcodeFilter = std::array<bool, 256>;

// The instructions of `computation` that `offered` accepts, in WalkPostOrderUntil's order, when that
// order follows from the dependencies alone:
//   - every operand and control predecessor of the computation has a
//     smaller unique id than its user (so the computation is acyclic and a
//     path between two instructions only passes ids between theirs), and
//   - each offered instruction is reached from the next one in the list
//     through operands and control predecessors.
// A post order lists such a chain of dependencies in its own order, so the
// walk would offer them in list order. nullopt otherwise, and when the
// searches would together visit more than the computation holds (the walk
// then costs no more). `ids_end` gets one past the largest unique id.
std::optional<std::vector<HloInstruction*>> ChainInListOrder(const HloComputation* computation,
                                                             const OpcodeFilter& offered,
                                                             int64_t* ids_end) {
  std::vector<HloInstruction*> chain;
  int64_t min_id = INT64_MAX;
  int64_t max_id = -1;
  size_t edges = 0;
  const size_t live = static_cast<size_t>(computation->instruction_count());
  for (const std::unique_ptr<HloInstruction>& slot : computation->instruction_slots()) {
    HloInstruction* inst = slot.get();
    if (inst == nullptr) continue;
    const int64_t id = inst->unique_id();
    min_id = std::min(min_id, id);
    max_id = std::max(max_id, id);
    const HloInstruction::InstructionList& operands = inst->operands();
    for (const HloInstruction* dep : operands) {
      if (ABSL_PREDICT_FALSE(dep->unique_id() >= id) && dep->parent() == computation) {
        return std::nullopt;
      }
    }
    const std::vector<HloInstruction*>& preds = inst->control_predecessors();
    for (const HloInstruction* dep : preds) {
      if (dep->unique_id() >= id && dep->parent() == computation) return std::nullopt;
    }
    edges += operands.size() + preds.size();
    if (offered[static_cast<uint8_t>(inst->opcode())]) chain.push_back(inst);
  }
  *ids_end = max_id + 1;
  // Ids must be distinct and known for the marks below.
  if (live == 0 || min_id < 0 || static_cast<size_t>(max_id - min_id) + 1 < live) {
    return live == 0 ? std::optional<std::vector<HloInstruction*>>(chain) : std::nullopt;
  }
  // For each consecutive pair (earlier, later): a search from `later` among
  // ids >= earlier's (every path to `earlier` stays there) looks for
  // `earlier`. `mark` holds the number of the search that last reached an
  // instruction, so it is reset for free.
  std::vector<uint32_t> mark(static_cast<size_t>(max_id - min_id) + 1, 0);
  std::vector<const HloInstruction*> stack;
  size_t budget = live + edges;
  uint32_t search = 0;
  for (size_t i = 1; i < chain.size(); ++i) {
    const HloInstruction* earlier = chain[i - 1];
    const int64_t floor = earlier->unique_id();
    ++search;
    stack.assign(1, chain[i]);
    bool found = false;
    while (!stack.empty() && !found) {
      const HloInstruction* inst = stack.back();
      stack.pop_back();
      const size_t n_operands = inst->operands().size();
      const std::vector<HloInstruction*>& preds = inst->control_predecessors();
      if (n_operands + preds.size() + 1 > budget) return std::nullopt;
      budget -= n_operands + preds.size() + 1;
      for (size_t k = 0; k < n_operands + preds.size(); ++k) {
        const HloInstruction* dep = k < n_operands ? inst->operand(k) : preds[k - n_operands];
        if (dep == earlier) {
          found = true;
          break;
        }
        if (dep->unique_id() < floor || dep->parent() != computation) continue;
        uint32_t& m = mark[static_cast<size_t>(dep->unique_id() - min_id)];
        if (m == search) continue;
        m = search;
        stack.push_back(dep);
      }
    }
    if (!found) return std::nullopt;
  }
  return chain;
}

}  // namespace

absl::StatusOr<bool> OpExpanderPass::Run(HloModule* module) {
  bool changed = false;
  touched_.clear();
  OpcodeFilter offered;
  const absl::Span<const HloOpcode> opcodes = OfferedOpcodes();
  offered.fill(opcodes.empty());
  for (HloOpcode opcode : opcodes) offered[static_cast<uint8_t>(opcode)] = true;
  // HILO_OP_EXPANDER_WALK=1: always walk (the switch of ChainInListOrder's saving).
  const bool chain_allowed = !opcodes.empty() && !EnvSwitchIsOne("HILO_OP_EXPANDER_WALK");
  // As XLA's OpExpanderPass::Run: fusion computations are left alone.
  for (HloComputation* computation : module->MakeNonfusionComputations()) {
    std::vector<HloInstruction*> matching;
    // Instructions added from here on have larger unique ids (the module
    // numbers them in order of addition).
    int64_t old_ids_end = 0;
    std::optional<std::vector<HloInstruction*>> chain;
    if (chain_allowed) chain = ChainInListOrder(computation, offered, &old_ids_end);
    if (chain.has_value()) {
      for (HloInstruction* inst : *chain) {
        if (InstructionMatchesPattern(inst)) matching.push_back(inst);
      }
    } else {
      old_ids_end = 0;
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
      absl::StatusOr<HloInstruction*> expanded = ExpandInstruction(inst);
      if (!expanded.ok()) {
        return absl::Status(expanded.status().code(),
                            absl::StrCat(name(), ": expanding ", inst->name(), " in ",
                                         computation->name(), ": ", expanded.status().message()));
      }
      HloInstruction* replacement = *expanded;
      if (replacement == nullptr || replacement == inst) continue;
      touched_.push_back(replacement);
      touched_.insert(touched_.end(), inst->users().begin(), inst->users().end());
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
    const absl::Span<const std::unique_ptr<HloInstruction>> after = computation->instruction_slots();
    for (auto it = after.rbegin(); it != after.rend(); ++it) {
      if (*it == nullptr) continue;
      if ((*it)->unique_id() < old_ids_end) break;
      touched_.push_back(it->get());
    }
  }
  return changed;
}

}  // namespace hilo

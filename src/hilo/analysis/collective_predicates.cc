#include "hilo/analysis/collective_predicates.h"

#include <algorithm>
#include <vector>

#include "absl/container/flat_hash_map.h"

#include "hilo/ir/hlo_computation.h"

namespace hilo {

// The sets are written as opcode lists rather than as the seed's bitmasks so
// that a wrong mask in the test (which evaluates the masks literally) can not
// hide a wrong set here.

bool IsCollective(HloOpcode opcode) {
  switch (opcode) {
    case HloOpcode::kAllGather:
    case HloOpcode::kAllReduce:
    case HloOpcode::kAllToAll:
    case HloOpcode::kCollectivePermute:
    case HloOpcode::kRecv:
    case HloOpcode::kReduceScatter:
    case HloOpcode::kSend:
      return true;
    default:
      return false;
  }
}

bool IsChannelInstruction(HloOpcode opcode) {
  switch (opcode) {
    case HloOpcode::kAllGather:
    case HloOpcode::kAllGatherStart:
    case HloOpcode::kAllReduce:
    case HloOpcode::kAllReduceStart:
    case HloOpcode::kAllToAll:
    case HloOpcode::kCollectiveBroadcast:
    case HloOpcode::kCollectivePermute:
    case HloOpcode::kCollectivePermuteStart:
    case HloOpcode::kRaggedAllToAll:
    case HloOpcode::kRecv:
    case HloOpcode::kRecvDone:
    case HloOpcode::kReduceScatter:
    case HloOpcode::kSend:
    case HloOpcode::kSendDone:
      return true;
    default:
      return false;
  }
}

bool IsStreamIdCheckedCollective(HloOpcode opcode) {
  switch (opcode) {
    case HloOpcode::kAllGather:
    case HloOpcode::kAllGatherStart:
    case HloOpcode::kAllReduce:
    case HloOpcode::kAllReduceStart:
    case HloOpcode::kAllToAll:
    case HloOpcode::kCollectiveBroadcast:
    case HloOpcode::kRaggedAllToAll:
    case HloOpcode::kReduceScatter:
      return true;
    default:
      return false;
  }
}

bool IsTypedCollective(HloOpcode opcode) {
  // The typed route is XLA's HloCollectiveInstruction class, which the IR
  // models once.
  return HloInstruction::IsCollectiveWithReplicaGroups(opcode);
}

int64_t NextChannelId(const HloModule& module) {
  int64_t next = 1;
  for (const HloComputation* computation : module.computations()) {
    for (const HloInstruction* instruction : computation->instructions()) {
      if (!IsChannelInstruction(*instruction)) continue;
      const std::optional<int64_t>& id = instruction->channel_id();
      // An id of INT64_MAX has no successor; saturate rather than overflow.
      if (id.has_value() && *id >= next) next = *id == INT64_MAX ? INT64_MAX : *id + 1;
    }
  }
  return next;
}

const ReplicaGroups& ReplicaGroupsOrEmpty(const HloInstruction& instruction) {
  static const ReplicaGroups* const kEmpty = new ReplicaGroups();
  return instruction.replica_groups().has_value() ? *instruction.replica_groups() : *kEmpty;
}

ReplicaGroupsMatcher::ReplicaGroupsMatcher(ReplicaGroups exemplar)
    : exemplar_(std::move(exemplar)) {
  auto expanded = exemplar_.Expand();
  if (expanded.ok()) expanded_ = *std::move(expanded);
}

bool ReplicaGroupsMatcher::Matches(const ReplicaGroups& groups) const {
  // Explicit groups (the common case) need one comparison: if they equal an
  // exemplar of the same form they equal its expansion, and an exemplar
  // that does not expand (raw, bad iota) is never equal to explicit groups.
  if (groups.form() == ReplicaGroups::Form::kExplicit) {
    return expanded_.has_value() && groups.explicit_groups() == *expanded_;
  }
  if (groups == exemplar_) return true;
  if (!expanded_.has_value()) return false;
  if (groups.form() != ReplicaGroups::Form::kIota) return false;  // raw: never expands
  // An iota list of another group count or size can not be equal; checking
  // that first avoids expanding lists that can not match, and the memo
  // expands each distinct iota list at most once (an iota list may name up
  // to 2^24 devices, so expanding per collective could be very slow).
  const IotaReplicaGroupList& iota = groups.iota();
  if (iota.num_groups != static_cast<int64_t>(expanded_->size())) return false;
  if (!expanded_->empty() && iota.group_size != static_cast<int64_t>(expanded_->front().size())) {
    return false;
  }
  const std::string key = groups.ToString();
  if (auto it = iota_memo_.find(key); it != iota_memo_.end()) return it->second;
  auto expanded = groups.Expand();
  const bool equal = expanded.ok() && *expanded == *expanded_;
  iota_memo_.emplace(key, equal);
  return equal;
}

void WalkPostOrderUntil(const HloComputation& computation,
                        absl::FunctionRef<bool(const HloInstruction*)> visit) {
  // The same traversal as HloComputation::MakeInstructionPostOrder (tested
  // to give the same order): depth first from every instruction without
  // users or control successors, in list order, operands in order, control
  // predecessors before operands; then whatever only a cycle reaches.
  enum State : uint8_t { kVisiting = 1, kVisited = 2 };
  absl::flat_hash_map<const HloInstruction*, uint8_t> state;
  auto is_new = [&](const HloInstruction* inst) { return !state.contains(inst); };
  auto is_ours = [&](const HloInstruction* inst) { return inst->parent() == &computation; };
  std::vector<const HloInstruction*> stack;
  // True when `visit` asked to stop.
  auto visit_from = [&](const HloInstruction* root) {
    stack.clear();
    stack.push_back(root);
    while (!stack.empty()) {
      const HloInstruction* current = stack.back();
      auto it = state.find(current);
      if (it != state.end() && it->second == kVisited) {
        stack.pop_back();
        continue;
      }
      if (it != state.end() && it->second == kVisiting) {
        it->second = kVisited;
        stack.pop_back();
        if (visit(current)) return true;
        continue;
      }
      state.emplace(current, kVisiting);
      const std::vector<HloInstruction*>& operands = current->operands();
      for (auto op = operands.rbegin(); op != operands.rend(); ++op) {
        if (is_ours(*op) && is_new(*op)) stack.push_back(*op);
      }
      for (const HloInstruction* pred : current->control_predecessors()) {
        if (is_ours(pred) && is_new(pred)) stack.push_back(pred);
      }
    }
    return false;
  };
  const std::vector<HloInstruction*> instructions = computation.instructions();
  for (const HloInstruction* inst : instructions) {
    if (inst->users().empty() && inst->control_successors().empty() && is_new(inst)) {
      if (visit_from(inst)) return;
    }
  }
  for (const HloInstruction* inst : instructions) {
    if (is_new(inst)) {
      if (visit_from(inst)) return;
    }
  }
}

}  // namespace hilo

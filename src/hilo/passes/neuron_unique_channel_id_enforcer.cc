#include "hilo/passes/neuron_unique_channel_id_enforcer.h"

#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "hilo/analysis/collective_predicates.h"
#include "hilo/ir/hlo_computation.h"

namespace hilo {
namespace {

bool IsSendOrRecv(const HloInstruction& instruction) {
  return instruction.opcode() == HloOpcode::kSend || instruction.opcode() == HloOpcode::kRecv;
}

// The group mode XLA derives for a collective that now has a channel_id
// (GetCollectiveOpGroupMode): ops with a use_global_device_ids field become
// cross-replica-and-partition (or flattened-id), the others cross-partition.
// Without a channel_id all of them were cross-replica.
absl::string_view GroupModeWithChannelId(const HloInstruction& instruction) {
  switch (instruction.opcode()) {
    case HloOpcode::kAllReduce:
    case HloOpcode::kAllGather:
    case HloOpcode::kReduceScatter:
      return instruction.use_global_device_ids().value_or(false) ? "flattened_id"
                                                                 : "cross_replica_and_partition";
    default:
      return "cross_partition";
  }
}

std::string IdText(const std::optional<int64_t>& id) {
  return id.has_value() ? absl::StrCat(*id) : std::string("none");
}

}  // namespace

absl::StatusOr<bool> NeuronUniqueChannelIdEnforcer::Run(HloModule* module) {
  renumbered_.clear();
  warnings_.clear();

  int64_t next = NextChannelId(*module);
  first_new_id_ = next;
  // NextChannelId saturates at INT64_MAX; past that no fresh id exists.
  bool exhausted = false;
  const int64_t partitions = module->num_partitions().value_or(1);

  absl::flat_hash_set<std::optional<int64_t>> seen;
  const std::vector<HloComputation*> computations = module->computations();

  if (skip_send_recv_) {
    // send/recv keep their ids, so nothing else may take them: reserve them
    // before the walk, whatever their position.
    for (const HloComputation* computation : computations) {
      for (const HloInstruction* instruction : computation->instructions()) {
        if (IsSendOrRecv(*instruction) && instruction->channel_id().has_value()) {
          seen.insert(instruction->channel_id());
        }
      }
    }
  }

  for (HloComputation* computation : computations) {
    for (HloInstruction* instruction : computation->instructions()) {
      if (!IsCollective(*instruction)) continue;
      if (skip_send_recv_ && IsSendOrRecv(*instruction)) continue;
      const std::optional<int64_t> old_id = instruction->channel_id();
      if (!seen.contains(old_id)) {
        seen.insert(old_id);
        continue;
      }
      if (exhausted || seen.contains(std::optional<int64_t>(next))) {
        return absl::ResourceExhaustedError(absl::StrCat(
            kName, ": no fresh channel_id for instruction ", instruction->name(),
            " in computation ", computation->name(), ": the module already uses channel_id ",
            INT64_MAX));
      }
      instruction->set_channel_id(next);
      seen.insert(std::optional<int64_t>(next));
      renumbered_.push_back(Renumbering{computation->name(), instruction->name(),
                                        std::string(HloOpcodeString(instruction->opcode())),
                                        old_id, next});

      if (IsSendOrRecv(*instruction)) {
        std::vector<std::string> done_ops;
        for (const HloInstruction* user : instruction->users()) {
          if (user->opcode() == HloOpcode::kSendDone || user->opcode() == HloOpcode::kRecvDone) {
            done_ops.push_back(absl::StrCat(HloOpcodeString(user->opcode()), " ", user->name(),
                                            " (channel_id=", IdText(user->channel_id()), ")"));
          }
        }
        warnings_.push_back(absl::StrCat(
            HloOpcodeString(instruction->opcode()), " ", instruction->name(), " in ",
            computation->name(), " renumbered from channel_id=", IdText(old_id), " to ", next,
            ": it no longer pairs with ",
            done_ops.empty() ? std::string("its peer")
                             : absl::StrCat(absl::StrJoin(done_ops, ", "), " or its peer"),
            "; the verifier rejects the module. --unique-channel-ids-skip-send-recv leaves "
            "send/recv alone"));
      } else if (!old_id.has_value() && partitions > 1) {
        warnings_.push_back(absl::StrCat(
            HloOpcodeString(instruction->opcode()), " ", instruction->name(), " in ",
            computation->name(), " had no channel_id and now has channel_id=", next,
            ": with num_partitions=", partitions, " its group mode changes from cross_replica to ",
            GroupModeWithChannelId(*instruction)));
      }

      if (next == INT64_MAX) {
        exhausted = true;
      } else {
        ++next;
      }
    }
  }
  return !renumbered_.empty();
}

nlohmann::json NeuronUniqueChannelIdEnforcer::ReportDetails() const {
  nlohmann::json details = nlohmann::json::object();
  details["skip_send_recv"] = skip_send_recv_;
  details["next_channel_id"] = first_new_id_;
  nlohmann::json renumbered = nlohmann::json::array();
  for (const Renumbering& r : renumbered_) {
    renumbered.push_back({{"computation", r.computation},
                          {"instruction", r.instruction},
                          {"opcode", r.opcode},
                          {"old_channel_id", r.old_id.has_value() ? nlohmann::json(*r.old_id)
                                                                  : nlohmann::json(nullptr)},
                          {"new_channel_id", r.new_id}});
  }
  details["renumbered"] = std::move(renumbered);
  details["warnings"] = warnings_;
  return details;
}

std::vector<std::string> NeuronUniqueChannelIdEnforcer::Explanations() const {
  std::vector<std::string> lines;
  lines.reserve(renumbered_.size());
  for (const Renumbering& r : renumbered_) {
    lines.push_back(absl::StrCat(
        r.computation, "/", r.instruction, " (", r.opcode, "): ",
        r.old_id.has_value() ? absl::StrCat("channel_id=", *r.old_id, " is already used by")
                             : std::string("has no channel_id, as does"),
        " an earlier collective; now channel_id=", r.new_id));
  }
  return lines;
}

}  // namespace hilo

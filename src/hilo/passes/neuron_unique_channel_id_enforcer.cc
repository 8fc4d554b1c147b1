#include "hilo/passes/neuron_unique_channel_id_enforcer.h"

#include <cstdint>
#include <utility>
#include <vector>

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

// The channel ids seen so far, a missing id being a value of its own. Ids in
// [0, dense_limit) are bits of a bitmap (one test per collective, no
// hashing); any other id goes to a hash set, so every int64 works.
class ChannelIdSet {
 public:
  // `next` is one past the largest existing id and `count` bounds the number
  // of fresh ids: the bitmap covers them all unless that would be much
  // larger than the ids could fill.
  ChannelIdSet(int64_t next, int64_t count) {
    const int64_t limit = next > INT64_MAX - count ? INT64_MAX : next + count;
    if (limit <= 64 * count + 4096) dense_limit_ = limit;
    bits_.resize(static_cast<size_t>(dense_limit_ / 64 + 1));
  }
  bool Contains(const std::optional<int64_t>& id) const {
    if (!id.has_value()) return none_;
    if (*id >= 0 && *id < dense_limit_) return (bits_[*id >> 6] >> (*id & 63)) & 1;
    return sparse_.contains(*id);
  }
  // True if `id` was not in the set before (as std::set::insert's second).
  bool Insert(const std::optional<int64_t>& id) {
    if (!id.has_value()) return !std::exchange(none_, true);
    if (*id >= 0 && *id < dense_limit_) {
      uint64_t& word = bits_[*id >> 6];
      const uint64_t bit = uint64_t{1} << (*id & 63);
      const bool inserted = (word & bit) == 0;
      word |= bit;
      return inserted;
    }
    return sparse_.insert(*id).second;
  }

 private:
  int64_t dense_limit_ = 0;
  std::vector<uint64_t> bits_;
  absl::flat_hash_set<int64_t> sparse_;
  bool none_ = false;
};

// Whether a collective that had no channel_id and gets one now takes
// different devices: with the channel_id its groups (or pairs) name
// `mode`'s ids instead of replicas within a partition. With one partition,
// cross_replica_and_partition and flattened ids name the same devices as
// cross_replica; cross_partition names partitions, which differ from
// replicas unless the module runs on one device (XLA's defaults for absent
// counts are 1).
bool ParticipantsChange(absl::string_view mode, int64_t replicas, int64_t partitions) {
  if (mode == "cross_partition") return replicas > 1 || partitions > 1;
  return partitions > 1;
}

std::string IdText(const std::optional<int64_t>& id) {
  return id.has_value() ? absl::StrCat(*id) : std::string("none");
}

}  // namespace

absl::StatusOr<bool> NeuronUniqueChannelIdEnforcer::Run(HloModule* module) {
  renumbered_.clear();
  warnings_.clear();

  // One sweep over every computation's instructions collects the channel
  // instructions (a superset of IsCollective; the checker's sweep, less the
  // ones removed since, when nothing added one: ScanCollectives);
  // NextChannelId and the walk below only look at those.
  const std::shared_ptr<const CollectiveScan> scan = ScanCollectives(*module);
  const std::vector<HloInstruction*>& channel_instructions = scan->channel;

  // One more pass over them reads each channel_id once: it gives `next`
  // (NextChannelId) and the ids of the collectives to check, so the walk
  // below reads a compact array and touches an instruction only to
  // renumber it.
  struct Candidate {
    HloInstruction* instruction;
    std::optional<int64_t> id;
  };
  std::vector<Candidate> candidates;
  candidates.reserve(channel_instructions.size());
  // send/recv keep their ids when skipped, so nothing else may take them.
  std::vector<int64_t> reserved_ids;
  int64_t next = 1;
  constexpr size_t kAhead = 8;
  const size_t n = channel_instructions.size();
  for (size_t i = 0; i < n; ++i) {
    if (i + kAhead < n) {
      PrefetchOpcode(channel_instructions[i + kAhead]);
      PrefetchEnds(&channel_instructions[i + kAhead]->channel_id());
    }
    HloInstruction* instruction = channel_instructions[i];
    const std::optional<int64_t>& id = instruction->channel_id();
    next = NextChannelIdAfter(next, id);
    if (!IsCollective(*instruction)) continue;
    if (skip_send_recv_ && IsSendOrRecv(*instruction)) {
      if (id.has_value()) reserved_ids.push_back(*id);
      continue;
    }
    candidates.push_back(Candidate{instruction, id});
  }
  first_new_id_ = next;
  // NextChannelId saturates at INT64_MAX; past that no fresh id exists.
  bool exhausted = false;
  const int64_t partitions = module->num_partitions().value_or(1);
  const int64_t replicas = module->replica_count().value_or(1);

  // The ids are usually small: size the dense part for all of them, the
  // fresh ones included.
  ChannelIdSet seen(next, static_cast<int64_t>(n));
  // Reserved before the walk, whatever their position.
  for (int64_t id : reserved_ids) seen.Insert(id);

  for (const Candidate& candidate : candidates) {
    HloInstruction* instruction = candidate.instruction;
    const std::optional<int64_t>& old_id = candidate.id;
    if (seen.Insert(old_id)) continue;
    // Channel instructions are live members of a computation.
    const HloComputation* computation = instruction->parent();
    if (exhausted || seen.Contains(next)) {
      return absl::ResourceExhaustedError(absl::StrCat(
          kName, ": no fresh channel_id for instruction ", instruction->name(),
          " in computation ", computation->name(), ": the module already uses channel_id ",
          INT64_MAX));
    }
    instruction->set_channel_id(next);
    seen.Insert(next);
    renumbered_.push_back(Renumbering{std::string(computation->name()), std::string(instruction->name()),
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
    } else if (!old_id.has_value()) {
      const absl::string_view mode = GroupModeWithChannelId(*instruction);
      if (partitions > 1) {
        warnings_.push_back(absl::StrCat(
            HloOpcodeString(instruction->opcode()), " ", instruction->name(), " in ",
            computation->name(), " had no channel_id and now has channel_id=", next,
            ": with num_partitions=", partitions, " its group mode changes from cross_replica to ",
            mode));
      } else if (ParticipantsChange(mode, replicas, partitions)) {
        // One partition (torch-xla's usual module): the groups or pairs now
        // name partitions that do not exist.
        warnings_.push_back(absl::StrCat(
            HloOpcodeString(instruction->opcode()), " ", instruction->name(), " in ",
            computation->name(), " had no channel_id and now has channel_id=", next,
            ": with replica_count=", replicas, " and num_partitions=1 its group mode changes from "
            "cross_replica to ", mode, ": its ",
            instruction->opcode() == HloOpcode::kCollectivePermute ? "source_target_pairs"
                                                                    : "replica_groups",
            " now name partitions (there is 1) instead of the ", replicas,
            " replicas, so the devices that take part change"));
      }
    }

    if (next == INT64_MAX) {
      exhausted = true;
    } else {
      ++next;
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

std::string NeuronUniqueChannelIdEnforcer::ChangeSummary() const {
  if (renumbered_.empty()) return "";
  int64_t had_none = 0;
  for (const Renumbering& r : renumbered_) had_none += r.old_id.has_value() ? 0 : 1;
  const int64_t reused = static_cast<int64_t>(renumbered_.size()) - had_none;
  std::string summary = absl::StrCat(
      "gave a fresh channel_id to ", CountOf(static_cast<int64_t>(renumbered_.size()), "collective"),
      " (");
  if (reused > 0) absl::StrAppend(&summary, reused, " reused an earlier collective's id");
  if (reused > 0 && had_none > 0) absl::StrAppend(&summary, ", ");
  if (had_none > 0) absl::StrAppend(&summary, had_none, " had none");
  return summary + ")";
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

#include "hilo/analysis/collective_predicates.h"

#include <algorithm>
#include <memory>
#include <vector>

#include "absl/container/flat_hash_map.h"

#include "hilo/ir/env_switch.h"
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
  // The IR keeps the list: the module's channel generation follows these
  // instructions (ScanCollectives relies on it being exactly this set).
  return IsChannelOpcode(opcode);
}

bool IsStreamIdCheckedCollective(HloOpcode opcode) {
  // The checker's bitmask selects exactly the eight opcodes of the typed
  // route (collective_predicates_test evaluates the seed's formula over the
  // opcode table and checks it), so both read the IR's one list.
  return HloInstruction::IsCollectiveWithReplicaGroups(opcode);
}

bool IsTypedCollective(HloOpcode opcode) {
  // The typed route is XLA's HloCollectiveInstruction class, which the IR
  // models once.
  return HloInstruction::IsCollectiveWithReplicaGroups(opcode);
}

int64_t NextChannelId(const HloModule& module) {
  const std::shared_ptr<const CollectiveScan> scan = ScanCollectives(module);
  const std::vector<HloInstruction*>& channel_instructions = scan->channel;
  constexpr size_t kAhead = 8;
  const size_t n = channel_instructions.size();
  int64_t next = 1;
  for (size_t i = 0; i < n; ++i) {
    if (i + kAhead < n) PrefetchEnds(&channel_instructions[i + kAhead]->channel_id());
    next = NextChannelIdAfter(next, channel_instructions[i]->channel_id());
  }
  return next;
}

namespace {

const OpcodeSet& TypedOpcodes() {
  static const OpcodeSet* const kTyped = new OpcodeSet(&IsTypedCollective);
  return *kTyped;
}

// `kept` without the instructions removed since it was made (no parent).
CollectiveScan WithoutRemoved(const CollectiveScan& kept) {
  const OpcodeSet& typed = TypedOpcodes();
  CollectiveScan scan;
  const size_t computations = kept.channel_begin.size() - 1;
  scan.channel_begin.reserve(computations + 1);
  scan.typed_begin.reserve(computations + 1);
  scan.channel.reserve(kept.channel.size());
  scan.typed.reserve(kept.typed.size());
  for (size_t c = 0; c < computations; ++c) {
    scan.channel_begin.push_back(scan.channel.size());
    scan.typed_begin.push_back(scan.typed.size());
    for (size_t i = kept.channel_begin[c]; i < kept.channel_begin[c + 1]; ++i) {
      HloInstruction* instruction = kept.channel[i];
      if (instruction->parent() == nullptr) continue;
      scan.channel.push_back(instruction);
      if (typed.contains(instruction->opcode())) scan.typed.push_back(instruction);
    }
  }
  scan.channel_begin.push_back(scan.channel.size());
  scan.typed_begin.push_back(scan.typed.size());
  return scan;
}

}  // namespace

CollectiveScan SweepCollectives(const HloModule& module) {
  static const OpcodeSet* const kChannelOpcodes = new OpcodeSet(&IsChannelInstruction);
  CollectiveScan scan;
  const std::vector<HloComputation*> computations = module.computations();
  scan.channel_begin.reserve(computations.size() + 1);
  scan.typed_begin.reserve(computations.size() + 1);
  for (const HloComputation* computation : computations) {
    scan.channel_begin.push_back(scan.channel.size());
    scan.typed_begin.push_back(scan.typed.size());
    // The typed collectives are channel instructions.
    AppendInstructionsWithOpcode(*computation, *kChannelOpcodes, &scan.channel, TypedOpcodes(),
                                 &scan.typed);
  }
  scan.channel_begin.push_back(scan.channel.size());
  scan.typed_begin.push_back(scan.typed.size());
  return scan;
}

std::shared_ptr<const CollectiveScan> ScanCollectives(const HloModule& module) {
  if (EnvSwitchIsZero("HILO_COLLECTIVE_SCAN_CACHE")) {
    return std::make_shared<const CollectiveScan>(SweepCollectives(module));
  }
  // Generations are unique in the process (HloModule::channel_generation),
  // so an equal one is this module, with no channel instruction added and
  // no computation added or removed since; the module's address is compared
  // too only to say so plainly.
  struct Kept {
    const HloModule* module = nullptr;
    uint64_t generation = 0;
    uint64_t removals = 0;
    std::shared_ptr<const CollectiveScan> scan;
  };
  thread_local Kept kept;
  if (kept.scan == nullptr || kept.module != &module ||
      kept.generation != module.channel_generation()) {
    kept.scan = std::make_shared<const CollectiveScan>(SweepCollectives(module));
  } else if (kept.removals != module.channel_removals()) {
    kept.scan = std::make_shared<const CollectiveScan>(WithoutRemoved(*kept.scan));
  }
  kept.module = &module;
  kept.generation = module.channel_generation();
  kept.removals = module.channel_removals();
  return kept.scan;
}

OpcodeSet::OpcodeSet(bool (*predicate)(HloOpcode)) {
  for (unsigned bit = 0; bit < 256; ++bit) {
    if (predicate(static_cast<HloOpcode>(bit))) words_[bit >> 6] |= uint64_t{1} << (bit & 63);
  }
}

void AppendInstructionsWithOpcode(const HloComputation& computation, const OpcodeSet& select,
                                  std::vector<HloInstruction*>* out, const OpcodeSet& subset,
                                  std::vector<HloInstruction*>* subset_out) {
  // The list read in place (a removed instruction leaves a null hole).
  const absl::Span<HloInstruction* const> slots = computation.instruction_slots();
  constexpr size_t kAhead = 16;
  const size_t n = slots.size();
  for (size_t i = 0; i < n; ++i) {
    if (i + kAhead < n && slots[i + kAhead] != nullptr) PrefetchOpcode(slots[i + kAhead]);
    HloInstruction* instruction = slots[i];
    if (instruction == nullptr) continue;
    const HloOpcode opcode = instruction->opcode();
    if (!select.contains(opcode)) continue;
    out->push_back(instruction);
    if (subset.contains(opcode)) subset_out->push_back(instruction);
  }
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
  // Contents shared with the exemplar's are equal to them (the parser gives
  // every list written with the same text the same contents): most of a
  // module's collectives repeat the exemplar's text, and this is one
  // pointer comparison instead of comparing every group.
  if (groups.SharesContentsWith(exemplar_)) return true;
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
  computation.WalkPostOrderUntil([&](HloInstruction* inst) { return visit(inst); });
}

}  // namespace hilo

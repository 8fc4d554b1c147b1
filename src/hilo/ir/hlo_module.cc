#include "hilo/ir/hlo_module.h"

#include <atomic>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "hilo/ir/env_switch.h"
#include "hilo/ir/hlo_computation.h"

namespace hilo {

uint64_t HloModule::NewGeneration() {
  static std::atomic<uint64_t> last{0};
  return last.fetch_add(1, std::memory_order_relaxed) + 1;
}

HloModule::~HloModule() {
  // A loader that failed half-way (the parser's errors) ends no bulk load.
  if (InstructionArena::Loading() == &instruction_arena_) InstructionArena::SetLoading(nullptr);
}

const std::string* HloModule::header_attribute(absl::string_view name) const {
  for (const auto& attr : header_attributes_) {
    if (attr.name == name) return &attr.value;
  }
  return nullptr;
}

HloComputation* HloModule::AddComputation(std::unique_ptr<HloComputation> computation,
                                          bool is_entry) {
  HloComputation* comp = computation.get();
  comp->SetParent(this);
  if (GetComputationWithName(comp->name()) != nullptr) {
    const std::string base(comp->name());
    for (int64_t i = 1;; ++i) {
      std::string candidate = absl::StrCat(base, ".", i);
      if (GetComputationWithName(candidate) == nullptr) {
        comp->name_.Assign(candidate);
        break;
      }
    }
  }
  computations_.push_back(std::move(computation));
  computations_by_name_.Insert(computations_.size() - 1, computations_);
  if (is_entry) entry_ = comp;
  NoteChannelInstructionsChanged();
  return comp;
}

std::vector<HloComputation*> HloModule::computations() const {
  std::vector<HloComputation*> result;
  result.reserve(computations_.size());
  for (const auto& c : computations_) result.push_back(c.get());
  return result;
}

std::vector<HloComputation*> HloModule::MakeNonfusionComputations() const {
  absl::flat_hash_set<const HloComputation*> fused;
  for (const auto& c : computations_) {
    for (const auto& inst : c->instruction_slots()) {  // read in place: no copy
      if (inst == nullptr || inst->opcode() != HloOpcode::kFusion) continue;
      for (const HloComputation* called : inst->called_computations("calls")) fused.insert(called);
    }
  }
  std::vector<HloComputation*> result;
  result.reserve(computations_.size() - fused.size());
  for (const auto& c : computations_) {
    if (!fused.contains(c.get())) result.push_back(c.get());
  }
  return result;
}

HloComputation* HloModule::GetComputationWithName(absl::string_view name) const {
  const int64_t position = computations_by_name_.Find(name, computations_);
  return position < 0 ? nullptr : computations_[position].get();
}

void HloModule::RemoveComputation(HloComputation* computation) {
  for (auto it = computations_.begin(); it != computations_.end(); ++it) {
    if (it->get() == computation) {
      if (entry_ == computation) entry_ = nullptr;
      KeepNamesOf(*computation);
      computations_by_name_.Erase(it - computations_.begin(), computations_);
      computations_.erase(it);
      NoteChannelInstructionsChanged();
      return;
    }
  }
}

int64_t HloModule::instruction_count() const {
  int64_t n = 0;
  for (const auto& c : computations_) n += c->instruction_count();
  return n;
}

void HloModule::BeginBulkLoad() {
  bulk_loading_ = true;
  if (HloInstruction::ArenaGroupsEnabled()) InstructionArena::SetLoading(&instruction_arena_);
  name_index_built_ = false;
  used_names_.clear();
  for (auto& [hint, suffix] : next_suffix_) suffix.hint_used = false;
}

void HloModule::EndBulkLoad() {
  bulk_loading_ = false;
  // AddInstruction does not note the loader's channel instructions one by one.
  NoteChannelInstructionsChanged();
  if (InstructionArena::Loading() == &instruction_arena_) InstructionArena::SetLoading(nullptr);
  instruction_arena_.ReleaseUnused();
}

void HloModule::EndBulkLoad(InstructionNameSet names) {
  EndBulkLoad();
  if (name_index_built_ || !used_names_.empty()) return;
  if (EnvSwitchIsOne("HILO_NAME_INDEX_REBUILD")) return;
  instruction_names_ = std::move(names);
  name_index_built_ = true;
}

void HloModule::EnsureNameIndex() const {
  if (name_index_built_) return;
  name_index_built_ = true;
  used_names_.reserve(instruction_count());
  for (const auto& computation : computations_) {
    for (const HloInstruction* inst : computation->instructions()) used_names_.insert(inst->name());
  }
}

bool HloModule::IsInstructionNameUsed(absl::string_view name) const {
  EnsureNameIndex();
  return IsNameInIndex(name);
}

void HloModule::KeepNamesOf(const HloComputation& computation) {
  if (!name_index_built_) return;
  // Its names stay used, as they always were, but no longer in its
  // instructions, which die with it.
  auto keep = [this](const HloInstruction* inst) {
    if (inst == nullptr) return;
    if (instruction_names_.Find(inst->name()) == inst) {
      instruction_names_.Erase(inst->name());
      InsertOwnedName(inst->name());
      return;
    }
    auto it = used_names_.find(inst->name());
    if (it == used_names_.end() || it->data() != inst->name().data()) return;
    used_names_.erase(it);
    InsertOwnedName(inst->name());
  };
  for (const HloInstruction* inst : computation.instructions_) keep(inst);
  for (const auto& inst : computation.extra().removed) keep(inst.get());
}

bool HloModule::InsertOwnedName(absl::string_view name) {
  if (IsNameInIndex(name)) return false;
  used_names_.insert(reserved_names_.emplace_back(name));
  return true;
}

std::string HloModule::UniqueInstructionName(absl::string_view hint) {
  EnsureNameIndex();
  if (InsertOwnedName(hint)) return std::string(hint);
  NameSuffix& suffix = SuffixOfUsedHint(hint);
  while (true) {
    std::string candidate = absl::StrCat(hint, ".", suffix.Advance());
    if (InsertOwnedName(candidate)) return candidate;
  }
}

// The switch of the two shortcuts of naming after a hint: the cache of the
// last two hints' entries (FindSuffix) and the suffix's text stepped in
// place (NameSuffix::Advance). HILO_FAST_NAMING=0: the map looked up and the
// number written with std::to_chars every time (docs/performance.md,
// "naming after a hint").
namespace {
bool FastNaming() {
  static const bool fast = !EnvSwitchIsZero("HILO_FAST_NAMING");
  return fast;
}
}  // namespace

absl::string_view HloModule::NameSuffix::Advance() {
  ++next;
  if (!FastNaming()) {
    digits_size = static_cast<uint8_t>(std::to_chars(digits, digits + sizeof(digits), next).ptr - digits);
    return absl::string_view(digits, digits_size);
  }
  size_t i = digits_size;
  while (i > 0 && digits[i - 1] == '9') digits[--i] = '0';
  if (i > 0) {
    ++digits[i - 1];
  } else {  // 9...9 + 1
    std::memmove(digits + 1, digits, digits_size++);
    digits[0] = '1';
  }
  return absl::string_view(digits, digits_size);
}

HloModule::NameSuffix* HloModule::FindSuffix(absl::string_view hint) {
  const bool cache = FastNaming();
  if (cache) {
    for (const CachedHint& cached : hint_cache_) {
      if (cached.hint != nullptr && *cached.hint == hint) return cached.suffix;
    }
  }
  auto it = next_suffix_.find(hint);
  if (it == next_suffix_.end()) return nullptr;
  if (cache) {
    hint_cache_[hint_cache_victim_] = CachedHint{&it->first, &it->second};
    hint_cache_victim_ ^= 1;
  }
  return &it->second;
}

HloModule::NameSuffix& HloModule::SuffixOfUsedHint(absl::string_view hint) {
  NameSuffix* suffix = FindSuffix(hint);
  if (suffix == nullptr) suffix = &next_suffix_.emplace(hint, NameSuffix{}).first->second;
  suffix->hint_used = true;
  return *suffix;
}

void HloModule::NameInstructionUniquely(HloInstruction* instruction, absl::string_view hint) {
  EnsureNameIndex();
  NameSuffix* found = FindSuffix(hint);
  if (found == nullptr || !found->hint_used) {
    if (!IsNameInIndex(hint)) {
      instruction->name_.Assign(hint);
      instruction_names_.Insert(instruction);
      return;
    }
  }
  NameSuffix& suffix = found != nullptr && found->hint_used ? *found : SuffixOfUsedHint(hint);
  // `.N` after the hint in one buffer (on the stack for a hint of up to 40
  // characters: no allocation for the text), then given to the instruction:
  // a name over 15 characters takes a heap block per candidate there, and
  // the first candidate is almost always free.
  constexpr size_t kTail = 24;  // '.' and any int64
  char small[64];
  std::string large;
  char* buffer = small;
  if (hint.size() + kTail > sizeof(small)) {
    large.resize(hint.size() + kTail);
    buffer = large.data();
  }
  std::memcpy(buffer, hint.data(), hint.size());
  buffer[hint.size()] = '.';
  while (true) {
    const absl::string_view digits = suffix.Advance();
    std::memcpy(buffer + hint.size() + 1, digits.data(), digits.size());
    const absl::string_view name(buffer, hint.size() + 1 + digits.size());
    // A long name's bytes in the module's arena (as the parser's): no heap
    // block per name. The instruction is this module's, so the arena
    // outlives it.
    instruction->name_.AssignInArena(name, instruction_arena_);
    if ((used_names_.empty() || !used_names_.contains(name)) &&
        instruction_names_.Insert(instruction) == nullptr) {
      return;
    }
  }
}

bool HloModule::ReserveInstructionName(absl::string_view name) {
  EnsureNameIndex();
  return InsertOwnedName(name);
}

void HloModule::ReleaseInstructionName(absl::string_view name) {
  EnsureNameIndex();
  if (NameSuffix* suffix = FindSuffix(name); suffix != nullptr) suffix->hint_used = false;
  used_names_.erase(name);
  instruction_names_.Erase(name);
}

}  // namespace hilo

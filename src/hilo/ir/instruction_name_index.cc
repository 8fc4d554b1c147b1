#include "hilo/ir/instruction_name_index.h"

#include <cstdio>
#include <cstdlib>
#include <new>

#include "hilo/ir/env_switch.h"
#include "hilo/ir/instruction_arena.h"

namespace hilo {
namespace {

size_t SlotBytes(size_t capacity) { return capacity * sizeof(uint64_t); }

// Whether a table of `capacity` slots goes to huge pages.
bool OnHugePages(size_t capacity) {
  static const bool enabled = !EnvSwitchIsZero("HILO_NAME_INDEX_HUGE_PAGES");
  return enabled && SlotBytes(capacity) >= InstructionArena::kHugeBlock;
}

}  // namespace

void InstructionNameIndex::AddressTooHigh() {
  std::fputs("hilo: an instruction's address is above 2^48, which the module's name index "
             "(instruction_name_index.h) can not store\n", stderr);
  std::abort();
}

uint64_t* InstructionNameIndex::AllocateSlots(size_t capacity) {
  // (A power of two of 2 MB or more is a whole number of huge blocks.)
  if (OnHugePages(capacity)) {
    return static_cast<uint64_t*>(InstructionArena::MapHugeBlocks(SlotBytes(capacity)));
  }
  // calloc: a large table's fresh pages are not written until an entry
  // lands on them.
  void* slots = std::calloc(capacity, sizeof(uint64_t));
  if (slots == nullptr) throw std::bad_alloc();
  return static_cast<uint64_t*>(slots);
}

void InstructionNameIndex::FreeSlots(uint64_t* slots, size_t capacity) {
  if (slots == nullptr) return;
  if (OnHugePages(capacity)) {
    InstructionArena::UnmapHugeBlocks(slots, SlotBytes(capacity));
  } else {
    std::free(slots);
  }
}

void InstructionNameIndex::Rehash(size_t capacity) {
  uint64_t* const old = slots_;
  const size_t old_capacity = capacity_;
  slots_ = AllocateSlots(capacity);
  capacity_ = capacity;
  shift_ = 64 - __builtin_ctzll(capacity);
  for (size_t k = 0; k < old_capacity; ++k) {
    const uint64_t slot = old[k];
    if (slot == 0) continue;
    size_t i = Home(HashName(Instruction(slot)->name()));
    while (slots_[i] != 0) i = (i + 1) & (capacity - 1);
    slots_[i] = slot;
  }
  FreeSlots(old, old_capacity);
}

}  // namespace hilo

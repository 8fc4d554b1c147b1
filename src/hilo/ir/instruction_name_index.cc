#include "hilo/ir/instruction_name_index.h"

#include <cstdio>
#include <cstdlib>
#include <new>

namespace hilo {

void InstructionNameIndex::AddressTooHigh() {
  std::fputs("hilo: an instruction's address is above 2^48, which the module's name index "
             "(instruction_name_index.h) can not store\n", stderr);
  std::abort();
}

void InstructionNameIndex::Rehash(size_t capacity) {
  uint64_t* const old = slots_;
  const size_t old_capacity = capacity_;
  // Zeroed (all empty) by calloc: a large table's fresh pages are not
  // written until an entry lands on them.
  uint64_t* const slots = static_cast<uint64_t*>(std::calloc(capacity, sizeof(uint64_t)));
  if (slots == nullptr) throw std::bad_alloc();
  slots_ = slots;
  capacity_ = capacity;
  shift_ = 64 - __builtin_ctzll(capacity);
  for (size_t k = 0; k < old_capacity; ++k) {
    const uint64_t slot = old[k];
    if (slot == 0) continue;
    size_t i = Home(HashName(Instruction(slot)->name()));
    while (slots_[i] != 0) i = (i + 1) & (capacity - 1);
    slots_[i] = slot;
  }
  std::free(old);
}

}  // namespace hilo

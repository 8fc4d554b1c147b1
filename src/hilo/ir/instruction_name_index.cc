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
  slots_ = linear_probing::AllocateEmpty<uint64_t>(capacity);
  capacity_ = capacity;
  shift_ = 64 - __builtin_ctzll(capacity);
  linear_probing::MoveEntries(old, old_capacity, slots_, capacity,
                              [this](uint64_t slot) { return HomeOf(slot); });
  std::free(old);
}

}  // namespace hilo

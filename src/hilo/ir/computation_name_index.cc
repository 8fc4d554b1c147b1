#include "hilo/ir/computation_name_index.h"

#include <cstdio>
#include <limits>

namespace hilo {

void ComputationNameIndex::Insert(size_t position, Computations computations) {
  // A position must fit a slot beside the empty value; 2^32 computations
  // would take hundreds of gigabytes before this could be reached.
  if (position >= std::numeric_limits<uint32_t>::max() - 1) {
    std::fputs("hilo: a module has more computations than its name index "
               "(computation_name_index.h) can number\n", stderr);
    std::abort();
  }
  auto home_of = [this, computations](uint32_t slot) { return HomeOf(slot, computations); };
  if (size_ + 1 > MaxSize(capacity_)) {
    const size_t capacity = capacity_ == 0 ? 16 : capacity_ * 2;
    uint32_t* const old = slots_;
    const size_t old_capacity = capacity_;
    slots_ = linear_probing::AllocateEmpty<uint32_t>(capacity);
    capacity_ = capacity;
    shift_ = 64 - __builtin_ctzll(capacity);
    linear_probing::MoveEntries(old, old_capacity, slots_, capacity, home_of);
    std::free(old);
  }
  const absl::string_view name = computations[position]->name();
  const size_t i = Probe(name, HashName(name), computations);
  slots_[i] = static_cast<uint32_t>(position + 1);
  ++size_;
}

void ComputationNameIndex::Erase(size_t position, Computations computations) {
  const absl::string_view name = computations[position]->name();
  const size_t i = Probe(name, HashName(name), computations);
  linear_probing::EraseAt(slots_, capacity_, i,
                          [this, computations](uint32_t slot) { return HomeOf(slot, computations); });
  --size_;
  // Later computations move a position down in the list: so do their slots
  // (a loop GCC vectorizes).
  const uint32_t erased = static_cast<uint32_t>(position + 1);
  for (size_t k = 0; k < capacity_; ++k) slots_[k] -= slots_[k] > erased ? 1 : 0;
}

}  // namespace hilo

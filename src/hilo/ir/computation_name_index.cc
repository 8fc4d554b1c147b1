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
  if (!HasRoomForOneMore()) {
    Rehash(GrownCapacity(), [this, computations](uint32_t slot) { return HomeOf(slot, computations); });
  }
  const absl::string_view name = computations[position]->name();
  const size_t i = Probe(name, HashName(name), computations);
  slots_[i] = static_cast<uint32_t>(position + 1);
  ++size_;
}

void ComputationNameIndex::Erase(size_t position, Computations computations) {
  const absl::string_view name = computations[position]->name();
  const size_t i = Probe(name, HashName(name), computations);
  EraseAt(i, [this, computations](uint32_t slot) { return HomeOf(slot, computations); });
  // Later computations move a position down in the list: so do their slots
  // (a loop GCC vectorizes).
  const uint32_t erased = static_cast<uint32_t>(position + 1);
  for (size_t k = 0; k < capacity_; ++k) slots_[k] -= slots_[k] > erased ? 1 : 0;
}

}  // namespace hilo

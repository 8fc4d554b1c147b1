// The steps shared by the module's two name tables (InstructionNameIndex,
// ComputationNameIndex): open addressing with linear probing over a
// power-of-two array of integer slots, 0 meaning empty, an entry erased by
// shifting the following entries of its run back (no tombstones, so a
// table that has entries erased and added does not fill with them).
#ifndef HILO_IR_LINEAR_PROBING_H_
#define HILO_IR_LINEAR_PROBING_H_

#include <cstddef>
#include <cstdlib>
#include <new>

namespace hilo::linear_probing {

// `capacity` empty slots. calloc'ed: a large table's fresh pages are not
// written until an entry lands on them. Free with std::free.
template <typename Slot>
Slot* AllocateEmpty(size_t capacity) {
  Slot* const slots = static_cast<Slot*>(std::calloc(capacity, sizeof(Slot)));
  if (slots == nullptr) throw std::bad_alloc();
  return slots;
}

// Places the entries of `old` (old_capacity slots) in `slots` (capacity
// slots, all empty). home(slot) is where an entry's probe starts.
template <typename Slot, typename HomeOf>
void MoveEntries(const Slot* old, size_t old_capacity, Slot* slots, size_t capacity, HomeOf home) {
  for (size_t k = 0; k < old_capacity; ++k) {
    const Slot slot = old[k];
    if (slot == 0) continue;
    size_t i = home(slot);
    while (slots[i] != 0) i = (i + 1) & (capacity - 1);
    slots[i] = slot;
  }
}

// Empties slot `hole`: an entry after it in its run moves into the hole
// unless its home lies cyclically in (hole, its slot].
template <typename Slot, typename HomeOf>
void EraseAt(Slot* slots, size_t capacity, size_t hole, HomeOf home) {
  const size_t mask = capacity - 1;
  for (size_t j = (hole + 1) & mask;; j = (j + 1) & mask) {
    const Slot slot = slots[j];
    if (slot == 0) break;
    const size_t slot_home = home(slot);
    if (((j - slot_home) & mask) >= ((j - hole) & mask)) {
      slots[hole] = slot;
      hole = j;
    }
  }
  slots[hole] = 0;
}

}  // namespace hilo::linear_probing

#endif  // HILO_IR_LINEAR_PROBING_H_

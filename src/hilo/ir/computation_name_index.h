// ComputationNameIndex: a module's computations found by their names, an
// open-addressing table (linear probing, linear_probing.h; at most 7/8
// full) whose slot is a computation's position
// in the module's list plus one, in 4 bytes (0: empty).
//
// A module of 100,000 small computations holds 131,072 slots: 512 KiB,
// where absl's flat_hash_set of pointers (8 bytes and a control byte a
// slot) took 1.15 MiB at the peak of the parse (docs/performance.md,
// "twenty-sixth session"). The price: a probe reads the computation's name
// through the list to compare it (there is no room for a hash tag), and
// erasing a computation numbers every later one a position lower (one pass
// over the slots, as the list's own erase moves every later element).
//
// The table does not hold the list: each call names it, and the names are
// where the computations keep them (a name must not change while its
// computation is in the index).
#ifndef HILO_IR_COMPUTATION_NAME_INDEX_H_
#define HILO_IR_COMPUTATION_NAME_INDEX_H_

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <utility>

#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "hilo/ir/hlo_computation.h"
#include "hilo/ir/linear_probing.h"
#include "hilo/ir/name_hash.h"

namespace hilo {

class ComputationNameIndex : public linear_probing::Table<uint32_t> {
 public:
  using Computations = absl::Span<const std::unique_ptr<HloComputation>>;

  // The position in `computations` of the computation named `name`, or -1.
  int64_t Find(absl::string_view name, Computations computations) const {
    if (capacity_ == 0) return -1;
    return static_cast<int64_t>(slots_[Probe(name, HashName(name), computations)]) - 1;
  }

  // Adds computations[position], whose name must not be in the index yet.
  void Insert(size_t position, Computations computations);

  // Removes computations[position] (in the index) and numbers every later
  // computation one position lower: call it just before erasing that
  // computation from the list.
  void Erase(size_t position, Computations computations);

 private:
  // The slot holding `name` (hash `hash`), else the empty slot that ends
  // its run. capacity_ > 0.
  size_t Probe(absl::string_view name, size_t hash, Computations computations) const {
    for (size_t i = Home(hash);; i = Next(i)) {
      const uint32_t slot = slots_[i];
      if (slot == 0 || computations[slot - 1]->name() == name) return i;
    }
  }
  size_t HomeOf(uint32_t slot, Computations computations) const {
    return Home(HashName(computations[slot - 1]->name()));
  }
};

}  // namespace hilo

#endif  // HILO_IR_COMPUTATION_NAME_INDEX_H_

#include "hilo/ir/linear_probing.h"

#include <algorithm>

#include "hilo/ir/env_switch.h"

namespace hilo::linear_probing {

size_t CapacityFor(size_t n) {
  static const bool exact = !EnvSwitchIsZero("HILO_NAME_INDEX_EXACT");
  if (exact) return n < 12 ? 16 : n + (n + 2) / 3;
  size_t capacity = 16;
  while (capacity - capacity / 8 < n) capacity *= 2;
  return capacity;
}

size_t CapacityFor(size_t n, size_t max_slots) {
  static const bool slack = !EnvSwitchIsZero("HILO_NAME_SLACK");
  const size_t capacity = CapacityFor(n);
  return slack ? std::max(capacity, std::min(2 * n, max_slots)) : capacity;
}

}  // namespace hilo::linear_probing

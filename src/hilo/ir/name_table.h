// NameTable: a lookup from a fixed vocabulary of names (opcodes, element
// types) to values, made for the parser, which asks once per instruction
// and once per shape.
//
// A direct-mapped table on a cheap key (the length and three characters)
// answers almost every lookup with one string comparison and no hashing;
// names that share a slot with another, and names not in the vocabulary,
// go to a hash map.
#ifndef HILO_IR_NAME_TABLE_H_
#define HILO_IR_NAME_TABLE_H_

#include <array>
#include <cstddef>
#include <optional>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"

namespace hilo {

template <typename V>
class NameTable {
 public:
  // `name` must outlive the table (the vocabularies are static strings).
  void Add(absl::string_view name, V value) {
    map_.emplace(name, value);
    Slot& slot = slots_[SlotOf(name)];
    if (!slot.used) slot = Slot{name, value, true};
  }

  std::optional<V> Find(absl::string_view name) const {
    const Slot& slot = slots_[SlotOf(name)];
    if (slot.used && slot.name == name) return slot.value;
    auto it = map_.find(name);
    if (it == map_.end()) return std::nullopt;
    return it->second;
  }

 private:
  static constexpr size_t kSlots = 512;
  struct Slot {
    absl::string_view name;
    V value{};
    bool used = false;
  };
  static size_t SlotOf(absl::string_view name) {
    if (name.empty()) return 0;
    auto at = [&](size_t i) { return static_cast<size_t>(static_cast<unsigned char>(name[i])); };
    return (name.size() * 131 + at(0) * 31 + at(name.size() / 2) * 7 + at(name.size() - 1)) % kSlots;
  }

  std::array<Slot, kSlots> slots_{};
  absl::flat_hash_map<absl::string_view, V> map_;
};

}  // namespace hilo

#endif  // HILO_IR_NAME_TABLE_H_

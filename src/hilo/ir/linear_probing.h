// linear_probing::Table<Slot>: the storage and steps shared by the module's
// two name tables (InstructionNameIndex, ComputationNameIndex): open
// addressing with linear probing over a power-of-two array of integer
// slots, 0 meaning empty, at most 7/8 full, an entry erased by shifting the
// following entries of its run back (no tombstones, so a table that has
// entries erased and added does not fill with them). What a slot holds,
// and so how its name is found and compared, is the derived table's.
#ifndef HILO_IR_LINEAR_PROBING_H_
#define HILO_IR_LINEAR_PROBING_H_

#include <cstddef>
#include <cstdlib>
#include <new>
#include <utility>

namespace hilo::linear_probing {

template <typename Slot>
class Table {
 public:
  Table() = default;
  Table(Table&& other) noexcept { *this = std::move(other); }
  Table& operator=(Table&& other) noexcept {
    if (this == &other) return *this;
    std::free(slots_);
    slots_ = std::exchange(other.slots_, nullptr);
    capacity_ = std::exchange(other.capacity_, 0);
    size_ = std::exchange(other.size_, 0);
    shift_ = std::exchange(other.shift_, 64);
    return *this;
  }
  Table(const Table&) = delete;
  Table& operator=(const Table&) = delete;
  ~Table() { std::free(slots_); }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  size_t capacity() const { return capacity_; }

 protected:
  static size_t MaxSize(size_t capacity) { return capacity - capacity / 8; }
  // Positions from the hash's high bits (HashName's final avalanche).
  size_t Home(size_t hash) const { return shift_ >= 64 ? 0 : static_cast<size_t>(hash >> shift_); }
  size_t Next(size_t i) const { return (i + 1) & (capacity_ - 1); }

  // Whether one more entry fits without growing.
  bool HasRoomForOneMore() const { return size_ + 1 <= MaxSize(capacity_); }
  // The capacity a full table grows to.
  size_t GrownCapacity() const { return capacity_ == 0 ? 16 : capacity_ * 2; }

  // Moves the entries to `capacity` empty slots (a power of two above
  // MaxSize of size_). home(slot) is where an entry's probe starts, under
  // the new capacity. The slots are calloc'ed: a large table's fresh pages
  // are not written until an entry lands on them.
  template <typename HomeOf>
  void Rehash(size_t capacity, HomeOf home) {
    Slot* const slots = static_cast<Slot*>(std::calloc(capacity, sizeof(Slot)));
    if (slots == nullptr) throw std::bad_alloc();
    Slot* const old = std::exchange(slots_, slots);
    const size_t old_capacity = std::exchange(capacity_, capacity);
    shift_ = 64 - __builtin_ctzll(capacity);
    for (size_t k = 0; k < old_capacity; ++k) {
      const Slot slot = old[k];
      if (slot == 0) continue;
      size_t i = home(slot);
      while (slots_[i] != 0) i = Next(i);
      slots_[i] = slot;
    }
    std::free(old);
  }

  // Empties slot `hole`, an entry's: an entry after it in its run moves
  // into the hole unless its home lies cyclically in (hole, its slot].
  template <typename HomeOf>
  void EraseAt(size_t hole, HomeOf home) {
    const size_t mask = capacity_ - 1;
    for (size_t j = Next(hole);; j = Next(j)) {
      const Slot slot = slots_[j];
      if (slot == 0) break;
      if (((j - home(slot)) & mask) >= ((j - hole) & mask)) {
        slots_[hole] = slot;
        hole = j;
      }
    }
    slots_[hole] = 0;
    --size_;
  }

  Slot* slots_ = nullptr;
  size_t capacity_ = 0;
  size_t size_ = 0;
  int shift_ = 64;
};

}  // namespace hilo::linear_probing

#endif  // HILO_IR_LINEAR_PROBING_H_

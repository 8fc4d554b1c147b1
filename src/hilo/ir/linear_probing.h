// linear_probing::Table<Slot>: the storage and steps shared by the module's
// two name tables (InstructionNameIndex, ComputationNameIndex): open
// addressing with linear probing over an array of integer slots, 0 meaning
// empty, at most 7/8 full, an entry erased by shifting the following
// entries of its run back (no tombstones, so a table that has entries
// erased and added does not fill with them). What a slot holds, and so how
// its name is found and compared, is the derived table's.
//
// The number of slots need not be a power of two: a name's home slot is
// the hash's high 32 bits scaled to the capacity (a multiply and a shift),
// and a probe wraps at the end with a compare. So a table reserved for n
// names takes CapacityFor(n), about 4n/3 slots, where a power of two could
// take up to 16n/7: a module of 4,000,000 instructions needed 2^23 slots
// of 8 bytes (64 MiB) and now takes 5,333,336 (41 MiB;
// docs/performance.md, "name tables sized from the names").
// HILO_NAME_INDEX_EXACT=0 reserves the next power of two instead.
#ifndef HILO_IR_LINEAR_PROBING_H_
#define HILO_IR_LINEAR_PROBING_H_

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <new>
#include <utility>

namespace hilo::linear_probing {

// The capacity Reserve(n) grows to: n entries at 3/4 full (at least 16
// slots), so that a table filled to its reservation probes short runs and
// has room for n/6 more entries before it grows (a pass adding names to a
// parsed module). Under HILO_NAME_INDEX_EXACT=0, the smallest power of two
// holding n at 7/8, as before.
size_t CapacityFor(size_t n);
// The same with room to spare where memory allows: up to 2n slots (half
// full) as long as that is at most `max_slots`, never fewer than
// CapacityFor(n). A pass that adds names to a loaded module inserts them
// into the runs its entries left: at 3/4 full an insert after the load
// probes ~8 slots, half full ~2.5 (docs/performance.md, "name tables with
// slack"). HILO_NAME_SLACK=0: CapacityFor(n).
size_t CapacityFor(size_t n, size_t max_slots);

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
  // Grows to CapacityFor(n, max_slots) unless n entries fit already.
  template <typename HomeOf>
  void Reserve(size_t n, HomeOf home, size_t max_slots = 0) {
    if (n > MaxSize(capacity_)) Rehash(CapacityFor(n, max_slots), home);
  }
  // Positions from the hash's high 32 bits (HashName's final avalanche)
  // scaled to the capacity: 0 while there are no slots.
  size_t Home(size_t hash) const {
    return static_cast<size_t>(((static_cast<uint64_t>(hash) >> 32) * capacity_) >> 32);
  }
  size_t Next(size_t i) const { return i + 1 == capacity_ ? 0 : i + 1; }
  // How many steps a probe takes from slot `from` to slot `to`.
  size_t Distance(size_t from, size_t to) const { return to >= from ? to - from : to + capacity_ - from; }

  // Whether one more entry fits without growing.
  bool HasRoomForOneMore() const { return size_ + 1 <= MaxSize(capacity_); }
  // The capacity a full table grows to.
  size_t GrownCapacity() const { return capacity_ == 0 ? 16 : capacity_ * 2; }

  // Moves the entries to `capacity` empty slots (at most 2^32, with
  // MaxSize(capacity) above size_). home(slot) is where an entry's probe starts, under
  // the new capacity. The slots are calloc'ed: a large table's fresh pages
  // are not written until an entry lands on them.
  template <typename HomeOf>
  void Rehash(size_t capacity, HomeOf home) {
    if (capacity > (size_t{1} << 32)) throw std::bad_alloc();  // Home's multiply
    Slot* const slots = static_cast<Slot*>(std::calloc(capacity, sizeof(Slot)));
    if (slots == nullptr) throw std::bad_alloc();
    Slot* const old = std::exchange(slots_, slots);
    const size_t old_capacity = std::exchange(capacity_, capacity);
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
    for (size_t j = Next(hole);; j = Next(j)) {
      const Slot slot = slots_[j];
      if (slot == 0) break;
      if (Distance(home(slot), j) >= Distance(hole, j)) {
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
};


}  // namespace hilo::linear_probing

#endif  // HILO_IR_LINEAR_PROBING_H_

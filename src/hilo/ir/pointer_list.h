// PointerList<T>: a list of non-null T* in 16 bytes, two of them inline.
//
// An instruction's operands and users: most instructions have one or two
// of each, and a parsed module has one list of each per instruction, so the
// list's own size is paid hundreds of thousands of times
// (absl::InlinedVector<T*, 2> is 24 bytes). Two words:
// - inline: the elements themselves, nullptr where there is none (so the
//   elements must never be null);
// - on the heap (a third element was added, or more reserved): the first
//   word is the array's address with its lowest bit set (T* arrays are
//   aligned to at least 8), the second the size (low 32 bits) and the
//   capacity (high 32 bits).
// The elements are contiguous either way, so a list is a span (data(),
// size()) and its iterators are pointers. Once on the heap a list stays
// there until clear().
#ifndef HILO_IR_POINTER_LIST_H_
#define HILO_IR_POINTER_LIST_H_

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <utility>

#include "absl/base/attributes.h"
#include "absl/types/span.h"

namespace hilo {

template <typename T>
class PointerList {
 public:
  using value_type = T*;
  using size_type = size_t;
  using difference_type = std::ptrdiff_t;
  using reference = T*&;
  using const_reference = T* const&;
  using pointer = T**;
  using const_pointer = T* const*;
  using iterator = T**;
  using const_iterator = T* const*;
  using reverse_iterator = std::reverse_iterator<iterator>;
  using const_reverse_iterator = std::reverse_iterator<const_iterator>;

  PointerList() = default;
  PointerList(const PointerList& other) { Append(other.data(), other.size()); }
  PointerList(PointerList&& other) noexcept {
    std::memcpy(slots_, other.slots_, sizeof(slots_));
    other.slots_[0] = other.slots_[1] = nullptr;
  }
  PointerList& operator=(const PointerList& other) {
    if (this != &other) {
      clear();
      Append(other.data(), other.size());
    }
    return *this;
  }
  PointerList& operator=(PointerList&& other) noexcept {
    if (this != &other) {
      clear();
      std::memcpy(slots_, other.slots_, sizeof(slots_));
      other.slots_[0] = other.slots_[1] = nullptr;
    }
    return *this;
  }
  ~PointerList() { clear(); }

  // Without a branch (a conditional move): lists are sized on every loop
  // over them, and which form a list has is not predictable.
  size_t size() const {
    const uintptr_t first = Word(0);
    const uintptr_t second = Word(1);
    const size_t in_line = size_t{first != 0} + size_t{second != 0};
    return (first & 1) != 0 ? static_cast<uint32_t>(second) : in_line;
  }
  // Without decoding the size: an inline list is empty when its first slot
  // is (the elements are packed to the front), a heap list when its size is
  // zero.
  bool empty() const {
    const uintptr_t first = Word(0);
    return first == 0 || ((first & 1) != 0 && static_cast<uint32_t>(Word(1)) == 0);
  }
  size_t capacity() const { return OnHeap() ? static_cast<size_t>(Word(1) >> 32) : kInline; }

  T** data() { return OnHeap() ? HeapArray() : slots_; }
  T* const* data() const { return OnHeap() ? HeapArray() : slots_; }
  iterator begin() { return data(); }
  iterator end() { return data() + size(); }
  const_iterator begin() const { return data(); }
  const_iterator end() const { return data() + size(); }
  reverse_iterator rbegin() { return reverse_iterator(end()); }
  reverse_iterator rend() { return reverse_iterator(begin()); }
  const_reverse_iterator rbegin() const { return const_reverse_iterator(end()); }
  const_reverse_iterator rend() const { return const_reverse_iterator(begin()); }

  // The elements as a span, decoded once: data() and size() each decode the
  // two words, so a loop that reads both per element (operand(i) up to
  // operand_count()) pays the decoding each time; one that takes the span
  // first pays it once.
  absl::Span<T* const> span() const {
    const uintptr_t first = Word(0);
    if ((first & 1) != 0) return {HeapArray(), static_cast<uint32_t>(Word(1))};
    return {slots_, size_t{first != 0} + size_t{Word(1) != 0}};
  }

  T*& operator[](size_t i) { return data()[i]; }
  T* const& operator[](size_t i) const { return data()[i]; }
  T* front() const { return data()[0]; }
  T* back() const { return data()[size() - 1]; }

  // `value` must not be null.
  void push_back(T* value) {
    if (!OnHeap()) {
      if (slots_[0] == nullptr) {
        slots_[0] = value;
        return;
      }
      if (slots_[1] == nullptr) {
        slots_[1] = value;
        return;
      }
    }
    PushBackOnHeap(value);
  }
  void pop_back() {
    if (OnHeap()) {
      SetHeap(HeapArray(), size() - 1, capacity());
    } else {
      slots_[slots_[1] != nullptr ? 1 : 0] = nullptr;
    }
  }
  // Removes the element at `at`, keeping the order of the others.
  iterator erase(const_iterator at) {
    T** first = data();
    const size_t i = static_cast<size_t>(at - first);
    const size_t n = size();
    std::memmove(first + i, first + i + 1, (n - i - 1) * sizeof(T*));
    pop_back();
    return data() + i;
  }
  // Makes room for `n` elements.
  void reserve(size_t n) {
    if (n > kInline && n > capacity()) MoveToHeap(n);
  }
  // Removes every element and frees the heap array.
  void clear() {
    if (OnHeap()) delete[] HeapArray();
    slots_[0] = slots_[1] = nullptr;
  }

 private:
  static constexpr size_t kInline = 2;
  static_assert(alignof(T*) >= 2, "the heap address's lowest bit is the tag");
  static_assert(sizeof(uintptr_t) == 8, "the second word holds two 32-bit numbers");

  uintptr_t Word(int i) const {
    uintptr_t word;
    std::memcpy(&word, &slots_[i], sizeof(word));
    return word;
  }
  bool OnHeap() const { return (Word(0) & 1) != 0; }
  T** HeapArray() const { return reinterpret_cast<T**>(Word(0) & ~uintptr_t{1}); }
  void SetHeap(T** array, size_t size, size_t capacity) {
    const uintptr_t words[2] = {reinterpret_cast<uintptr_t>(array) | 1,
                                static_cast<uintptr_t>(size) |
                                    (static_cast<uintptr_t>(capacity) << 32)};
    std::memcpy(slots_, words, sizeof(words));
  }
  // push_back beyond the inline slots (not inlined: the inline path is the
  // common one).
  ABSL_ATTRIBUTE_NOINLINE void PushBackOnHeap(T* value) {
    if (!OnHeap()) {
      MoveToHeap(2 * kInline);
    } else if (size() == capacity()) {
      MoveToHeap(2 * capacity());
    }
    const size_t n = size();
    HeapArray()[n] = value;
    SetHeap(HeapArray(), n + 1, capacity());
  }
  // Moves the elements to a heap array of `capacity` (> size()).
  ABSL_ATTRIBUTE_NOINLINE void MoveToHeap(size_t capacity) {
    const size_t n = size();
    T** array = new T*[capacity];
    std::memcpy(array, data(), n * sizeof(T*));
    if (OnHeap()) delete[] HeapArray();
    SetHeap(array, n, capacity);
  }
  void Append(T* const* values, size_t n) {
    reserve(n);
    for (size_t i = 0; i < n; ++i) push_back(values[i]);
  }

  T* slots_[kInline] = {nullptr, nullptr};
};

}  // namespace hilo

#endif  // HILO_IR_POINTER_LIST_H_

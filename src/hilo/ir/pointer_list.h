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
#include <new>
#include <utility>

#include "absl/base/attributes.h"
#include "absl/types/span.h"

namespace hilo {

// The container types of a list of T* whose elements are contiguous (its
// iterators are pointers): PointerList's and SmallPointerList's. An empty
// base: it adds no size.
template <typename T>
struct PointerListTypes {
  using value_type = T*;
  using size_type = size_t;
  using difference_type = std::ptrdiff_t;
  using reference = T*&;
  using const_reference = T* const&;
  using pointer = T**;
  using const_pointer = T* const*;
  using iterator = T**;
  using const_iterator = T* const*;
};

template <typename T>
class PointerList : public PointerListTypes<T> {
 public:
  using typename PointerListTypes<T>::iterator;
  using typename PointerListTypes<T>::const_iterator;
  using reverse_iterator = std::reverse_iterator<iterator>;
  using const_reverse_iterator = std::reverse_iterator<const_iterator>;

  PointerList() = default;
  // A copy keeps the heap form (its elements may be null: MoveToHeapForNulls).
  PointerList(const PointerList& other) {
    if (other.OnHeap()) MoveToHeapForNulls();
    Append(other.data(), other.size());
  }
  PointerList(PointerList&& other) noexcept {
    std::memcpy(slots_, other.slots_, sizeof(slots_));
    other.slots_[0] = other.slots_[1] = nullptr;
  }
  PointerList& operator=(const PointerList& other) {
    if (this != &other) {
      clear();
      if (other.OnHeap()) MoveToHeapForNulls();
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
  // Moves the list to the heap form, where an element may be null (set by
  // operator[] or push_back; the inline form reads a null slot as the
  // list's end): a computation's parameters by number, with a hole for a
  // number that has none (HloComputation::ParameterList).
  void MoveToHeapForNulls() {
    if (!OnHeap()) MoveToHeap(kInline + 1);
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

// SmallPointerList<T>: a list of non-null T* in one word, one of them
// inline. An instruction's users: most instructions have one user or none
// (a module of 100,000 small computations: all but one of its 400,000), and
// the list is one word of every instruction (PointerList took two:
// docs/performance.md, "twenty-fifth session"). The word:
// - null: empty;
// - an element (bit 0 clear): that one element;
// - a heap block's address with bit 0 set: the block is a header (size in
//   the low 32 bits, capacity in the high 32 bits) and the elements after
//   it. Once on the heap a list stays there until clear().
// The elements are contiguous either way (inline, the word itself), so a
// list is a span and its iterators are pointers, as PointerList's.
template <typename T>
class SmallPointerList : public PointerListTypes<T> {
 public:
  using typename PointerListTypes<T>::iterator;
  using typename PointerListTypes<T>::const_iterator;

  SmallPointerList() = default;
  SmallPointerList(const SmallPointerList& other) { Append(other.span()); }
  SmallPointerList(SmallPointerList&& other) noexcept : word_(std::exchange(other.word_, nullptr)) {}
  SmallPointerList& operator=(const SmallPointerList& other) {
    if (this != &other) {
      clear();
      Append(other.span());
    }
    return *this;
  }
  SmallPointerList& operator=(SmallPointerList&& other) noexcept {
    if (this != &other) {
      clear();
      word_ = std::exchange(other.word_, nullptr);
    }
    return *this;
  }
  ~SmallPointerList() { clear(); }

  size_t size() const {
    const uintptr_t word = Word();
    return (word & 1) != 0 ? Block()->size : size_t{word != 0};
  }
  bool empty() const {
    const uintptr_t word = Word();
    return word == 0 || ((word & 1) != 0 && Block()->size == 0);
  }
  size_t capacity() const { return OnHeap() ? Block()->capacity : 1; }

  T** data() { return OnHeap() ? Block()->elements() : &word_; }
  T* const* data() const { return OnHeap() ? Block()->elements() : &word_; }
  iterator begin() { return data(); }
  iterator end() { return data() + size(); }
  const_iterator begin() const { return data(); }
  const_iterator end() const { return data() + size(); }

  // The elements as a span, the word decoded once (PointerList::span).
  absl::Span<T* const> span() const {
    const uintptr_t word = Word();
    if ((word & 1) != 0) return {Block()->elements(), Block()->size};
    return {&word_, size_t{word != 0}};
  }

  T*& operator[](size_t i) { return data()[i]; }
  T* const& operator[](size_t i) const { return data()[i]; }
  T* front() const { return data()[0]; }
  T* back() const { return data()[size() - 1]; }

  // `value` must not be null.
  void push_back(T* value) {
    if (word_ == nullptr) {
      word_ = value;
      return;
    }
    PushBackOnHeap(value);
  }
  void pop_back() {
    if (OnHeap()) {
      --Block()->size;
    } else {
      word_ = nullptr;
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
    if (n > capacity()) MoveToHeap(n);
  }
  // Removes every element and frees the heap block (a block given by an
  // arena stays there).
  void clear() {
    if (OwnsBlock()) ::operator delete(Block());
    word_ = nullptr;
  }
  // push_back, a new block of up to kArenaCapacity elements taken from
  // the arena `get_arena()` returns (called only then: anything with
  // Allocate(size, alignment) whose memory outlives this list, or nullptr
  // for the heap). A larger block goes to the heap: doubling blocks in an
  // arena would keep every old one.
  static constexpr size_t kArenaCapacity = 16;
  template <typename GetArena>
  void push_back(T* value, GetArena get_arena) {
    if (word_ == nullptr) {
      word_ = value;
      return;
    }
    if (const size_t capacity = NextCapacity(); capacity != 0 && capacity <= kArenaCapacity) {
      if (auto* arena = get_arena(); arena != nullptr) {
        MoveTo(arena->Allocate(BlockBytes(capacity), alignof(T*)), capacity, kArenaBit);
      }
    }
    PushBackOnHeap(value);
  }

 private:
  static_assert(alignof(T*) >= 4, "the block's two lowest bits are tags");
  // The block was given by an arena: never freed here.
  static constexpr uintptr_t kArenaBit = 2;
  struct Header {
    uint32_t size;
    uint32_t capacity;
    T** elements() { return reinterpret_cast<T**>(this + 1); }
  };
  static_assert(sizeof(Header) == sizeof(T*), "the elements follow the header, aligned");

  uintptr_t Word() const { return reinterpret_cast<uintptr_t>(word_); }
  // A block holds the elements (on the heap, or an arena's: kArenaBit).
  bool OnHeap() const { return (Word() & 1) != 0; }
  bool OwnsBlock() const { return (Word() & (1 | kArenaBit)) == 1; }
  Header* Block() const { return reinterpret_cast<Header*>(Word() & ~uintptr_t{1 | kArenaBit}); }
  static size_t BlockBytes(size_t capacity) { return sizeof(Header) + capacity * sizeof(T*); }
  // The capacity the next push_back moves to, or 0 when it has room.
  size_t NextCapacity() const {
    if (!OnHeap()) return 2;
    return Block()->size == Block()->capacity ? 2 * size_t{Block()->capacity} : 0;
  }
  // push_back beyond the inline element (not inlined: the inline path is
  // the common one).
  ABSL_ATTRIBUTE_NOINLINE void PushBackOnHeap(T* value) {
    if (const size_t capacity = NextCapacity(); capacity != 0) MoveToHeap(capacity);
    Header* block = Block();
    block->elements()[block->size++] = value;
  }
  // Moves the elements to a heap block of `capacity` (> size()).
  ABSL_ATTRIBUTE_NOINLINE void MoveToHeap(size_t capacity) {
    MoveTo(::operator new(BlockBytes(capacity)), capacity, 0);
  }
  // Moves the elements to `memory`, a block of `capacity` (> size());
  // `tag`: kArenaBit when an arena gave it.
  void MoveTo(void* memory, size_t capacity, uintptr_t tag) {
    const absl::Span<T* const> elements = span();
    auto* block = static_cast<Header*>(memory);
    block->size = static_cast<uint32_t>(elements.size());
    block->capacity = static_cast<uint32_t>(capacity);
    if (!elements.empty()) std::memcpy(block->elements(), elements.data(), elements.size() * sizeof(T*));
    if (OwnsBlock()) ::operator delete(Block());
    word_ = reinterpret_cast<T*>(reinterpret_cast<uintptr_t>(block) | 1 | tag);
  }
  void Append(absl::Span<T* const> values) {
    reserve(values.size());
    for (T* value : values) push_back(value);
  }

  // The one element, or the tagged block: a T* object so that the inline
  // element is read in place as a one-element span.
  T* word_ = nullptr;
};

}  // namespace hilo

#endif  // HILO_IR_POINTER_LIST_H_

// Interned attribute names.
//
// Every instruction remembers the order its attributes were written in
// (HloInstruction::attribute_order()). Attribute names come from a small
// vocabulary, so the list holds views of one process-wide copy of each name
// instead of a string per attribute per instruction.
#ifndef HILO_IR_ATTRIBUTE_NAMES_H_
#define HILO_IR_ATTRIBUTE_NAMES_H_

#include <cstddef>
#include <iterator>

#include "absl/container/inlined_vector.h"
#include "absl/strings/string_view.h"

namespace hilo {

// A view of a copy of `name` that lives until the process exits; equal names
// give the same view. The names XLA's text format defines are built in and
// found without a lock; any other name is copied once into a guarded pool
// (it grows only with names never seen before, so by the size of the inputs).
// Thread-safe.
// The view's data() is NUL-terminated.
absl::string_view InternAttributeName(absl::string_view name);

// The names of one instruction's attributes, in the order written. Each name
// is interned and held as a pointer to its NUL-terminated text, four inline
// (40 bytes; a collective usually has four attributes, and a list of views
// with three inline took 56). Names must not contain NUL bytes (attribute
// names are identifiers).
class AttributeOrder {
 public:
  class const_iterator {
   public:
    using iterator_category = std::forward_iterator_tag;
    using value_type = absl::string_view;
    using difference_type = std::ptrdiff_t;
    using pointer = void;
    using reference = absl::string_view;

    const_iterator() = default;
    explicit const_iterator(const char* const* at) : at_(at) {}
    absl::string_view operator*() const { return absl::string_view(*at_); }
    const_iterator& operator++() {
      ++at_;
      return *this;
    }
    const_iterator operator++(int) {
      const_iterator before = *this;
      ++at_;
      return before;
    }
    bool operator==(const const_iterator& other) const = default;

   private:
    const char* const* at_ = nullptr;
  };
  using value_type = absl::string_view;
  using iterator = const_iterator;
  using size_type = size_t;

  size_t size() const { return names_.size(); }
  bool empty() const { return names_.empty(); }
  const_iterator begin() const { return const_iterator(names_.data()); }
  const_iterator end() const { return const_iterator(names_.data() + names_.size()); }
  absl::string_view operator[](size_t i) const { return absl::string_view(names_[i]); }

  // Interns `name` and appends it.
  void Append(absl::string_view name) { names_.push_back(InternAttributeName(name).data()); }
  // Removes the i-th name.
  void Erase(size_t i) { names_.erase(names_.begin() + static_cast<std::ptrdiff_t>(i)); }

  // Equal interned names are the same pointer.
  bool operator==(const AttributeOrder& other) const { return names_ == other.names_; }

 private:
  absl::InlinedVector<const char*, 4> names_;
};

}  // namespace hilo

#endif  // HILO_IR_ATTRIBUTE_NAMES_H_

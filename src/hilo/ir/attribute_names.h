// Interned attribute names.
//
// Every instruction remembers the order its attributes were written in
// (HloInstruction::attribute_order()). Attribute names come from a small
// vocabulary, so the list holds views of one process-wide copy of each name
// instead of a string per attribute per instruction.
#ifndef HILO_IR_ATTRIBUTE_NAMES_H_
#define HILO_IR_ATTRIBUTE_NAMES_H_

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "hilo/ir/attribute_kind.h"

namespace hilo {

// A view of a copy of `name` that lives until the process exits; equal names
// give the same view. The names XLA's text format defines are built in and
// found without a lock; any other name is copied once into a guarded pool
// (it grows only with names never seen before, so by the size of the inputs).
// Thread-safe.
// The view's data() is NUL-terminated.
absl::string_view InternAttributeName(absl::string_view name);

// The empty name's one copy (an inline variable has one address in the whole
// program; two "" literals need not), so that an AttributeName made empty and
// one interned from "" are the same pointer.
inline constexpr char kEmptyAttributeName[] = "";

// One interned attribute name held as a pointer (8 bytes; a std::string was
// 32): what a called-computation attribute is named by. Made from any
// string (interned then); compares and converts as its text.
class AttributeName {
 public:
  AttributeName() = default;
  // Implicit, like a std::string from a string literal.
  AttributeName(absl::string_view name) : name_(InternAttributeName(name).data()) {}  // NOLINT
  AttributeName(const char* name) : AttributeName(absl::string_view(name)) {}          // NOLINT
  AttributeName(const std::string& name) : AttributeName(absl::string_view(name)) {}   // NOLINT

  absl::string_view view() const { return absl::string_view(name_); }
  operator absl::string_view() const { return view(); }  // NOLINT
  bool empty() const { return *name_ == '\0'; }

  // Interned: equal names are the same pointer.
  friend bool operator==(AttributeName a, AttributeName b) { return a.name_ == b.name_; }
  friend bool operator==(AttributeName a, absl::string_view b) { return a.view() == b; }
  friend bool operator==(AttributeName a, const char* b) { return a.view() == b; }

 private:
  const char* name_ = kEmptyAttributeName;  // interned, NUL-terminated
};

// The names of one instruction's attributes, in the order written: one
// pointer (8 bytes; a list of four inline names took 40) to an interned,
// immutable list of interned names. Instructions share few distinct lists
// (a module's instructions of one kind are written alike), so each list is
// stored once per process and an instruction holds only which one it has;
// appending a name moves to the list with the name added, found without a
// lock once this thread has made the same step before. Names must not
// contain NUL bytes (attribute names are identifiers).
class AttributeOrder {
 public:
  // One name of an interned list, with what readers of every instruction's
  // list ask of it (its size, its typed meaning), found once when the list
  // is interned instead of per instruction.
  struct Name {
    const char* text;  // interned (InternAttributeName's data()), NUL-terminated
    uint32_t size;
    text_attribute::Attr kind;  // kNotCanonical for a name of no typed attribute
  };
  // An interned list: its names in order, and which of
  // text_attribute::kCanonicalOrder it holds (bit a: kCanonicalOrder[a]).
  struct List {
    std::vector<Name> names;
    uint32_t canonical = 0;
  };

  class const_iterator {
   public:
    using iterator_category = std::forward_iterator_tag;
    using value_type = absl::string_view;
    using difference_type = std::ptrdiff_t;
    using pointer = void;
    using reference = absl::string_view;

    const_iterator() = default;
    explicit const_iterator(const Name* at) : at_(at) {}
    absl::string_view operator*() const { return absl::string_view(at_->text, at_->size); }
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
    const Name* at_ = nullptr;
  };
  using value_type = absl::string_view;
  using iterator = const_iterator;
  using size_type = size_t;

  size_t size() const { return list_ == nullptr ? 0 : list_->names.size(); }
  bool empty() const { return list_ == nullptr; }
  const_iterator begin() const { return const_iterator(list_ == nullptr ? nullptr : list_->names.data()); }
  const_iterator end() const {
    return const_iterator(list_ == nullptr ? nullptr : list_->names.data() + list_->names.size());
  }
  absl::string_view operator[](size_t i) const {
    return absl::string_view(list_->names[i].text, list_->names[i].size);
  }
  // The names with their kinds (empty when the list is).
  absl::Span<const Name> names() const {
    return list_ == nullptr ? absl::Span<const Name>() : absl::Span<const Name>(list_->names);
  }
  // Which canonical names the list holds (bit a: kCanonicalOrder[a]).
  uint32_t canonical() const { return list_ == nullptr ? 0 : list_->canonical; }

  // Interns `name` and appends it.
  void Append(absl::string_view name);
  // Appends a name InternAttributeName returned (its data()): callers that
  // know the name ahead (the parser's typed attributes) intern it once
  // instead of per attribute.
  void AppendInterned(const char* interned);
  // Removes the i-th name.
  void Erase(size_t i);

  // Equal lists are the same interned list.
  bool operator==(const AttributeOrder& other) const { return list_ == other.list_; }

  // The interned list itself (nullptr when empty): equal lists give the same
  // address, so what is made from a list can be kept once per address.
  const List* interned_list() const { return list_; }

 private:
  const List* list_ = nullptr;  // nullptr when empty; never an empty list
};

}  // namespace hilo

#endif  // HILO_IR_ATTRIBUTE_NAMES_H_

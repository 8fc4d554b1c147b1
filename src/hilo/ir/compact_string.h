// CompactString: a string that costs one pointer when empty.
//
// For texts kept verbatim that are absent on most objects and long when
// present (a computation's written signature; an instruction's
// `metadata={...}` is in OrderAndMetadata, order_and_metadata.h): one heap block
// holds the length and the bytes, so the member is 8 bytes instead of a
// std::string's 32, and a present text still takes a single allocation.
// A loader puts the block in its module's arena instead (AssignInArena):
// no heap block at all; such a text may move only between objects of that
// module, which the arena outlives.
#ifndef HILO_IR_COMPACT_STRING_H_
#define HILO_IR_COMPACT_STRING_H_

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <utility>

#include "absl/strings/string_view.h"
#include "hilo/ir/instruction_arena.h"

namespace hilo {

class CompactString {
 public:
  CompactString() = default;
  explicit CompactString(absl::string_view text) { Assign(text); }
  CompactString(const CompactString& other) { Assign(other.view()); }
  CompactString(CompactString&& other) noexcept : bits_(std::exchange(other.bits_, 0)) {}
  CompactString& operator=(const CompactString& other) {
    if (this != &other) Assign(other.view());
    return *this;
  }
  CompactString& operator=(CompactString&& other) noexcept {
    if (this != &other) {
      Free();
      bits_ = std::exchange(other.bits_, 0);
    }
    return *this;
  }
  CompactString& operator=(absl::string_view text) {
    Assign(text);
    return *this;
  }
  ~CompactString() { Free(); }

  bool empty() const { return bits_ == 0; }
  absl::string_view view() const {
    if (bits_ == 0) return absl::string_view();
    const char* block = Block();
    size_t size;
    std::memcpy(&size, block, sizeof(size));
    return absl::string_view(block + sizeof(size), size);
  }
  // As Assign, with a non-empty text's block in `arena` (the loaders' way
  // for an instruction of the module that owns `arena`).
  void AssignInArena(absl::string_view text, InstructionArena& arena) {
    if (text.empty()) {
      Assign(text);
      return;
    }
    char* block = static_cast<char*>(arena.Allocate(sizeof(size_t) + text.size(), alignof(size_t)));
    Fill(block, text);
    Free();
    bits_ = reinterpret_cast<uintptr_t>(block) | kInArena;
  }
  // Replaces the text (an empty text frees the block).
  void Assign(absl::string_view text) {
    char* block = nullptr;
    if (!text.empty()) {
      block = new char[sizeof(size_t) + text.size()];
      Fill(block, text);
    }
    Free();
    bits_ = reinterpret_cast<uintptr_t>(block);
  }

 private:
  // Bit 0 of bits_: the block is in an arena (blocks are aligned to 8).
  static constexpr uintptr_t kInArena = 1;
  const char* Block() const { return reinterpret_cast<const char*>(bits_ & ~kInArena); }
  static void Fill(char* block, absl::string_view text) {
    const size_t size = text.size();
    std::memcpy(block, &size, sizeof(size));
    std::memcpy(block + sizeof(size), text.data(), size);
  }
  void Free() {
    if ((bits_ & kInArena) == 0) delete[] reinterpret_cast<char*>(bits_);
    bits_ = 0;
  }

  uintptr_t bits_ = 0;  // the block (the size, then the bytes); 0 when empty
};

}  // namespace hilo

#endif  // HILO_IR_COMPACT_STRING_H_

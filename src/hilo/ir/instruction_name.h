// InstructionName: an instruction's name in 16 bytes.
//
// A parsed module has one name per instruction, hundreds of thousands of
// them, and most are short (`p0`, `add.12`, `fusion.1234`): a std::string
// took 32 bytes for each, and a heap block besides for a name over 15
// characters. Here a name of up to 15 characters is kept inline; a longer
// one is a pointer and a size, its bytes on the heap (owned) or in the
// module's instruction arena (the parser's names: no malloc call and no
// malloc header, given back with the module). The bytes are not
// NUL-terminated: read them through view().
//
// Layout: 16 bytes; byte 15 is the tag. Inline: bytes 0-14 the characters,
// the tag their count (0-15). Out of line: bytes 0-7 the address, 8-11 the
// size, the tag kHeap or kArena.
#ifndef HILO_IR_INSTRUCTION_NAME_H_
#define HILO_IR_INSTRUCTION_NAME_H_

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "absl/strings/string_view.h"
#include "hilo/ir/instruction_arena.h"

namespace hilo {

class InstructionName {
 public:
  InstructionName() = default;
  InstructionName(const InstructionName&) = delete;
  InstructionName& operator=(const InstructionName&) = delete;
  ~InstructionName() { FreeOwned(); }

  absl::string_view view() const {
    const unsigned char tag = Tag();
    if (tag <= kInline) return absl::string_view(bytes_, tag);
    const char* data;
    uint32_t size;
    std::memcpy(&data, bytes_, sizeof(data));
    std::memcpy(&size, bytes_ + sizeof(data), sizeof(size));
    return absl::string_view(data, size);
  }
  bool empty() const { return Tag() == 0; }

  // Replaces the name by a copy of `text` (which may be this name's own
  // bytes): inline when it fits, else on the heap.
  void Assign(absl::string_view text) { Assign(text, nullptr); }
  // As Assign, a long name's bytes in `arena`, which must outlive this
  // name (an instruction of the module that owns the arena).
  void AssignInArena(absl::string_view text, InstructionArena& arena) { Assign(text, &arena); }

 private:
  static constexpr size_t kInline = 15;
  static constexpr unsigned char kHeap = 0x80;
  static constexpr unsigned char kArena = 0x81;

  unsigned char Tag() const { return static_cast<unsigned char>(bytes_[kInline]); }

  void Assign(absl::string_view text, InstructionArena* arena) {
    char next[sizeof(bytes_)] = {};
    if (text.size() <= kInline) {
      // An empty view's data() may be null, which memcpy must not get.
      if (!text.empty()) std::memcpy(next, text.data(), text.size());
      next[kInline] = static_cast<char>(text.size());
    } else {
      // A name of 4 GB does not fit in a module anyway; the size is 32 bits.
      const uint32_t size = static_cast<uint32_t>(text.size());
      char* data = arena != nullptr ? static_cast<char*>(arena->Allocate(size, 1)) : new char[size];
      std::memcpy(data, text.data(), size);
      std::memcpy(next, &data, sizeof(data));
      std::memcpy(next + sizeof(data), &size, sizeof(size));
      next[kInline] = static_cast<char>(arena != nullptr ? kArena : kHeap);
    }
    // Only now: `text` may be the old bytes.
    FreeOwned();
    std::memcpy(bytes_, next, sizeof(bytes_));
  }
  void FreeOwned() {
    if (Tag() == kHeap) delete[] view().data();
  }

  alignas(8) char bytes_[16] = {};
};

}  // namespace hilo

#endif  // HILO_IR_INSTRUCTION_NAME_H_

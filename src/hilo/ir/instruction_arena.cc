#include "hilo/ir/instruction_arena.h"

#include <algorithm>

namespace hilo {

void* InstructionArena::AllocateSlow(size_t size, size_t alignment) {
  // operator new[] gives max_align_t alignment; an object larger than a
  // block gets a block of its own.
  const size_t bytes = std::max(kBlockBytes, size + alignment);
  blocks_.push_back(std::make_unique_for_overwrite<char[]>(bytes));
  reserved_ += bytes;
  next_ = blocks_.back().get();
  end_ = next_ + bytes;
  uintptr_t at = (reinterpret_cast<uintptr_t>(next_) + alignment - 1) & ~(alignment - 1);
  next_ = reinterpret_cast<char*>(at + size);
  return reinterpret_cast<void*>(at);
}

}  // namespace hilo

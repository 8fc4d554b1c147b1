// OrderAndMetadata: an instruction's attribute order and its metadata text
// in one word.
//
// Every instruction has an attribute order (AttributeOrder: a pointer to an
// interned list) and few have `metadata={...}` in a module of many small
// computations; they were two words of every instruction. Now the word is
// either the attribute order itself (no metadata: bit 0 clear, as an
// interned list is aligned to 8) or the address of a block holding the
// order, the text's size and its bytes (bit 0 set; bit 1: the block is in
// an arena). An instruction with metadata pays the same as before (the
// block grew by the word the instruction lost), one without pays 8 bytes
// less (docs/performance.md, "twenty-third session: a smaller
// instruction").
//
// A loader puts the block in its module's arena (SetMetadata's `arena`):
// such a block may move only between instructions of that module
// (TakeMetadata), which the arena outlives.
#ifndef HILO_IR_ORDER_AND_METADATA_H_
#define HILO_IR_ORDER_AND_METADATA_H_

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <new>
#include <type_traits>

#include "absl/strings/string_view.h"
#include "hilo/ir/attribute_names.h"
#include "hilo/ir/instruction_arena.h"

namespace hilo {

class OrderAndMetadata {
 public:
  OrderAndMetadata() = default;
  OrderAndMetadata(const OrderAndMetadata&) = delete;
  OrderAndMetadata& operator=(const OrderAndMetadata&) = delete;
  ~OrderAndMetadata() { FreeBlock(); }

  const AttributeOrder& order() const { return HasBlock() ? GetBlock()->order : word_.order; }
  AttributeOrder* mutable_order() { return HasBlock() ? &GetBlock()->order : &word_.order; }

  // The metadata text; empty if absent.
  absl::string_view metadata() const {
    if (!HasBlock()) return absl::string_view();
    const Block* block = GetBlock();
    return absl::string_view(reinterpret_cast<const char*>(block + 1), block->size);
  }

  // Replaces the text (an empty text removes the block), keeping the order.
  // A new block goes to `arena` when it is not null, else to the heap.
  void SetMetadata(absl::string_view text, InstructionArena* arena) {
    const AttributeOrder order = this->order();
    if (text.empty()) {
      if (!HasBlock()) return;
      FreeBlock();
      new (&word_.order) AttributeOrder(order);
      return;
    }
    const size_t bytes = sizeof(Block) + text.size();
    void* memory = arena != nullptr ? arena->Allocate(bytes, alignof(Block)) : ::operator new(bytes);
    Block* block = new (memory) Block{order, text.size()};
    std::memcpy(block + 1, text.data(), text.size());
    FreeBlock();
    word_.block = reinterpret_cast<uintptr_t>(block) | kHasBlock | (arena != nullptr ? kInArena : 0);
  }

  // Moves `other`'s metadata here if this has none: the block itself moves
  // (no copy), each keeping its own attribute order. `other` is left
  // without metadata.
  void TakeMetadata(OrderAndMetadata& other) {
    if (HasBlock() || !other.HasBlock()) return;
    const AttributeOrder mine = word_.order;
    Block* block = other.GetBlock();
    const AttributeOrder theirs = block->order;
    block->order = mine;
    word_.block = other.word_.block;
    new (&other.word_.order) AttributeOrder(theirs);
  }

 private:
  struct Block {
    AttributeOrder order;
    size_t size;  // the text's bytes follow
  };
  static_assert(std::is_trivially_destructible_v<AttributeOrder> &&
                sizeof(AttributeOrder) == sizeof(uintptr_t));
  static_assert(alignof(AttributeOrder::List) >= 2 && alignof(Block) >= 4);
  static constexpr uintptr_t kHasBlock = 1;
  static constexpr uintptr_t kInArena = 2;

  uintptr_t Bits() const {
    uintptr_t bits;
    std::memcpy(&bits, &word_, sizeof(bits));
    return bits;
  }
  bool HasBlock() const { return (Bits() & kHasBlock) != 0; }
  Block* GetBlock() const { return reinterpret_cast<Block*>(Bits() & ~(kHasBlock | kInArena)); }
  // Frees a heap block (the arena keeps its own); the word is then stale
  // until the caller sets it.
  void FreeBlock() {
    const uintptr_t bits = Bits();
    if ((bits & kHasBlock) != 0 && (bits & kInArena) == 0) ::operator delete(GetBlock());
  }

  union Word {
    Word() : order() {}
    ~Word() {}
    AttributeOrder order;  // no metadata
    uintptr_t block;       // the block's address | kHasBlock [| kInArena]
  } word_;
};

static_assert(sizeof(void*) != 8 || sizeof(OrderAndMetadata) == 8, "OrderAndMetadata grew");

}  // namespace hilo

#endif  // HILO_IR_ORDER_AND_METADATA_H_

// InstructionArena: the memory of the instructions a parser makes for one
// module, given back all at once with the module.
//
// A parsed module is tens of thousands of instructions made one after the
// other and freed together. From the arena each costs a pointer bump
// instead of a malloc call (200 instructions executed per call on a
// freshly parsed 42,000-instruction module, where nothing has been freed
// yet), and no malloc header: 16 bytes less per instruction, and
// instructions made one after the other lie next to each other in memory.
//
// The arena maps its blocks itself (mmap), so it does not depend on any
// malloc's heap layout, and under a sanitizer's allocator it works the
// same. On the virtual machines hilo is measured on, a page fault costs
// about 12 microseconds, more than parsing the instruction that touches the
// page; so once the arena is large (or told to expect a large module), its
// blocks are 2 MB, aligned to 2 MB and advised MADV_HUGEPAGE: one fault per
// 2 MB instead of 512, where the kernel gives advised memory huge pages
// (`always` or `madvise` in /sys/kernel/mm/transparent_hugepage/enabled).
// Small modules get small blocks in ordinary pages, so a one-instruction
// module does not take a 2 MB page. HILO_HUGE_PAGES=0 in the environment
// turns the advice off (docs/performance.md gives its measured gain).
//
// Only memory comes from here: HloInstruction's destroying `operator
// delete` runs the destructor and leaves the memory to the arena (see
// hlo_instruction.h), so the usual unique_ptr ownership is unchanged. The
// arena must outlive every instruction made in it: HloModule owns one and
// destroys it after its computations.
#ifndef HILO_IR_INSTRUCTION_ARENA_H_
#define HILO_IR_INSTRUCTION_ARENA_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/strings/string_view.h"

// Under AddressSanitizer or ThreadSanitizer the blocks come from the heap:
// their leak checker does not look for pointers in memory mapped by hand,
// so the heap memory only an arena instruction points to (a long name, a
// side struct) would be reported as leaked. No huge pages then.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define HILO_ARENA_FROM_HEAP 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define HILO_ARENA_FROM_HEAP 1
#endif
#endif

namespace hilo {

class InstructionArena {
 public:
  InstructionArena() = default;
  InstructionArena(const InstructionArena&) = delete;
  InstructionArena& operator=(const InstructionArena&) = delete;
  ~InstructionArena();

  // `size` bytes aligned to `alignment` (at most kMaxAlignment).
  void* Allocate(size_t size, size_t alignment) {
    uintptr_t at = (reinterpret_cast<uintptr_t>(next_) + alignment - 1) & ~(alignment - 1);
    if (next_ == nullptr || at + size > reinterpret_cast<uintptr_t>(end_)) {
      return AllocateSlow(size, alignment);
    }
    next_ = reinterpret_cast<char*>(at + size);
    return reinterpret_cast<void*>(at);
  }

  // About `bytes` more will be allocated from now on (the parser says so
  // at its start, from its input's size, and again as it goes, from what it
  // has made of the text read so far): from a megabyte on, the next block
  // is a huge one at once, instead of after a few small ones the parse
  // would fill first, in small pages. And a huge block is taken only while
  // at least one more would be filled: the rest, under 2 MB, goes to a
  // block in small pages, which is resident only as far as it is used,
  // where a huge block's page is resident whole (mixtral: 1.3 MB of its
  // last 2 MB page unused at the end of the parse, when the process's
  // memory peaks). HILO_ARENA_TAIL=0 keeps huge blocks to the end.
  void ExpectBytes(size_t bytes) {
    if (bytes >= kExpectHuge) next_block_ = kHugeBlock;
    expected_end_ = used_bytes() + bytes;
  }

  // Gives back the pages at the end of the last block that nothing was
  // allocated in (the parser calls it once the module is read: a huge
  // block's last 2 MB page is otherwise resident whole however little of
  // it the parse used: mixtral used 0.7 MB of its fourth). The next
  // allocation starts a new block.
  void ReleaseUnused();

  // Whether the blocks come from the heap (under a sanitizer, see above):
  // then ReleaseUnused gives nothing back.
#ifdef HILO_ARENA_FROM_HEAP
  static constexpr bool kBlocksFromHeap = true;
#else
  static constexpr bool kBlocksFromHeap = false;
#endif

  // Bytes mapped so far (less what ReleaseUnused gave back).
  size_t reserved_bytes() const { return reserved_; }
  // Bytes handed out so far (with alignment padding).
  size_t used_bytes() const { return used_before_ + static_cast<size_t>(next_ - used_from_); }
  // The blocks mapped so far (tests).
  struct Block {
    char* begin;
    size_t size;
    bool huge_page_advised;
  };
  const std::vector<Block>& blocks() const { return blocks_; }

  static constexpr size_t kMaxAlignment = alignof(std::max_align_t);
  // The size and alignment of a huge block: x86-64's and AArch64's (4 KB
  // granule) transparent huge page.
  static constexpr size_t kHugeBlock = size_t{2} << 20;
  static constexpr size_t kFirstBlock = size_t{64} << 10;
  static constexpr size_t kExpectHuge = size_t{1} << 20;

  // Whether huge blocks are advised MADV_HUGEPAGE in this process: the
  // kernel gives advised memory huge pages and HILO_HUGE_PAGES is not 0.
  // Read once.
  static bool HugePagesEnabled();
  // The same decision from the text of
  // /sys/kernel/mm/transparent_hugepage/enabled (e.g. "always [madvise]
  // never") and the value of HILO_HUGE_PAGES (nullptr when unset).
  static bool HugePagesEnabled(absl::string_view thp_enabled_text, const char* env_value);
  // Whether the end of an expected size goes to small pages (ExpectBytes):
  // HILO_ARENA_TAIL is not 0. Read once.
  static bool SmallPageTailEnabled();

  // The arena of the module this thread is loading, or nullptr: set by
  // HloModule::BeginBulkLoad (unless HILO_ARENA_GROUPS=0) and cleared by
  // EndBulkLoad or the module's destruction. An arena instruction's
  // attribute groups made meanwhile go to it (HloInstruction::GroupArena).
  // Per thread: a loader fills one module on one thread and changes no
  // other module's instructions meanwhile; another thread (a verifier
  // reading ahead) never allocates from it.
  static InstructionArena* Loading();
  static void SetLoading(InstructionArena* arena);

 private:
  void* AllocateSlow(size_t size, size_t alignment);

  std::vector<Block> blocks_;
  char* next_ = nullptr;
  char* end_ = nullptr;
  size_t reserved_ = 0;
  // used_bytes() is used_before_ plus [used_from_, next_) of the last block.
  size_t used_before_ = 0;
  char* used_from_ = nullptr;
  size_t next_block_ = kFirstBlock;  // doubles up to kHugeBlock
  // used_bytes() when what ExpectBytes announced is all allocated;
  // kUnknown without an announcement (then huge blocks to the end).
  static constexpr size_t kUnknown = ~size_t{0};
  size_t expected_end_ = kUnknown;
};

}  // namespace hilo

#endif  // HILO_IR_INSTRUCTION_ARENA_H_

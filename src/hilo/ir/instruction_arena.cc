#include "hilo/ir/instruction_arena.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <new>
#include <string>

#include "hilo/ir/env_switch.h"

namespace hilo {
namespace {

// InstructionArena::Loading(). A pointer with a constant initializer: a
// plain thread-pointer-relative load (no TLS wrapper call).
constinit thread_local InstructionArena* loading_arena = nullptr;

constexpr const char* kThpEnabledPath = "/sys/kernel/mm/transparent_hugepage/enabled";

// The first bytes of a small file ("" when it can not be read).
std::string ReadSmallFile(const char* path) {
  std::string text;
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return text;
  char buffer[256];
  const ssize_t n = read(fd, buffer, sizeof(buffer));
  if (n > 0) text.assign(buffer, static_cast<size_t>(n));
  close(fd);
  return text;
}

size_t RoundUp(size_t n, size_t multiple) { return (n + multiple - 1) / multiple * multiple; }

#ifdef HILO_ARENA_FROM_HEAP
constexpr std::align_val_t kHeapAlignment{InstructionArena::kHugeBlock};
char* MapAligned(size_t bytes, size_t) {
  return static_cast<char*>(::operator new(bytes, kHeapAlignment));
}
char* Map(size_t bytes) { return MapAligned(bytes, 0); }
void Unmap(char* block, size_t) { ::operator delete(block, kHeapAlignment); }
#else
char* Map(size_t bytes) {
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) throw std::bad_alloc();
  return static_cast<char*>(p);
}
void Unmap(char* block, size_t bytes) { munmap(block, bytes); }

// `bytes` (a multiple of `alignment`) at an address aligned to `alignment`:
// a larger mapping with its unaligned ends given back.
char* MapAligned(size_t bytes, size_t alignment) {
  char* const mapped = Map(bytes + alignment);
  const uintptr_t at = (reinterpret_cast<uintptr_t>(mapped) + alignment - 1) & ~(alignment - 1);
  char* const begin = reinterpret_cast<char*>(at);
  if (begin > mapped) munmap(mapped, begin - mapped);
  char* const tail = begin + bytes;
  const size_t tail_bytes = mapped + bytes + alignment - tail;
  if (tail_bytes > 0) munmap(tail, tail_bytes);
  return begin;
}
#endif

}  // namespace

bool InstructionArena::HugePagesEnabled(absl::string_view thp_enabled_text, const char* env_value) {
  if (env_value != nullptr && absl::string_view(env_value) == "0") return false;
  // The kernel's selected mode is the bracketed word.
  const size_t open = thp_enabled_text.find('[');
  const size_t close = thp_enabled_text.find(']', open == absl::string_view::npos ? 0 : open);
  if (open == absl::string_view::npos || close == absl::string_view::npos) return false;
  const absl::string_view mode = thp_enabled_text.substr(open + 1, close - open - 1);
  return mode == "always" || mode == "madvise";
}

bool InstructionArena::HugePagesEnabled() {
#ifdef HILO_ARENA_FROM_HEAP
  return false;
#endif
  static const bool enabled =
      HugePagesEnabled(ReadSmallFile(kThpEnabledPath), std::getenv("HILO_HUGE_PAGES"));
  return enabled;
}

bool InstructionArena::SmallPageTailEnabled() {
  static const bool enabled = !EnvSwitchIsZero("HILO_ARENA_TAIL");
  return enabled;
}

InstructionArena::~InstructionArena() {
  for (const Block& block : blocks_) Unmap(block.begin, block.size);
}

void* InstructionArena::AllocateSlow(size_t size, size_t alignment) {
  // A mapping is page aligned; an object larger than a block gets a block
  // of its own.
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  Block block{nullptr, std::max(next_block_, RoundUp(size, page)), false};
  const size_t used = used_bytes();
  // Less than a huge block still to come (ExpectBytes): small pages.
  const bool tail = expected_end_ != kUnknown && SmallPageTailEnabled() &&
                    (expected_end_ <= used || expected_end_ - used < kHugeBlock);
  if (next_block_ >= kHugeBlock && tail) {
    blocks_.reserve(blocks_.size() + 1);
    block.begin = Map(block.size);
#ifndef HILO_ARENA_FROM_HEAP
    // Where the kernel gives huge pages unasked (`always`), not here.
    if (HugePagesEnabled()) madvise(block.begin, block.size, MADV_NOHUGEPAGE);
#endif
  } else if (next_block_ >= kHugeBlock) {
    block.size = RoundUp(block.size, kHugeBlock);
    blocks_.reserve(blocks_.size() + 1);  // nothing leaks if this throws
    block.begin = MapAligned(block.size, kHugeBlock);
    // Advised before anything in it is written: a 2 MB range that already
    // holds a small page does not become a huge page at its first fault.
    block.huge_page_advised =
        HugePagesEnabled() && madvise(block.begin, block.size, MADV_HUGEPAGE) == 0;
  } else {
    blocks_.reserve(blocks_.size() + 1);
    block.begin = Map(block.size);
    next_block_ = std::min(2 * next_block_, kHugeBlock);
  }
  blocks_.push_back(block);
  used_before_ = used;
  used_from_ = block.begin;
  reserved_ += block.size;
  next_ = block.begin;
  end_ = block.begin + block.size;
  uintptr_t at = (reinterpret_cast<uintptr_t>(next_) + alignment - 1) & ~(alignment - 1);
  next_ = reinterpret_cast<char*>(at + size);
  return reinterpret_cast<void*>(at);
}

void InstructionArena::ReleaseUnused() {
  // What is made after this (a pass's new instructions) was not announced.
  expected_end_ = kUnknown;
#ifndef HILO_ARENA_FROM_HEAP  // a heap block can not be given back in part
  if (blocks_.empty()) return;
  Block& last = blocks_.back();
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  char* const keep_end = last.begin + RoundUp(static_cast<size_t>(next_ - last.begin), page);
  if (keep_end >= end_) return;
  munmap(keep_end, static_cast<size_t>(end_ - keep_end));
  reserved_ -= static_cast<size_t>(end_ - keep_end);
  last.size = static_cast<size_t>(keep_end - last.begin);
  if (last.size == 0) blocks_.pop_back();
  // Full: the next allocation maps a new block.
  used_before_ = used_bytes();
  next_ = end_ = used_from_ = keep_end;
#endif
}

InstructionArena* InstructionArena::Loading() { return loading_arena; }
void InstructionArena::SetLoading(InstructionArena* arena) { loading_arena = arena; }

}  // namespace hilo

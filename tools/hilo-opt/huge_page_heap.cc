#include "huge_page_heap.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace hilo {
namespace {

constexpr const char* kThpEnabledPath = "/sys/kernel/mm/transparent_hugepage/enabled";
constexpr const char* kThpSizePath = "/sys/kernel/mm/transparent_hugepage/hpage_pmd_size";
// glibc's chunk header on 64-bit (the size field and the previous chunk's
// size), and the smallest block worth allocating in front of the reservation.
constexpr size_t kChunkHeader = 16;
constexpr size_t kMinGap = 64;

std::string ReadSmallFile(const char* path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// The kernel's huge page size for anonymous memory, 0 if unknown.
size_t HugePageSize() {
  const std::string text = ReadSmallFile(kThpSizePath);
  char* end = nullptr;
  const unsigned long long size = std::strtoull(text.c_str(), &end, 10);
  if (end == text.c_str() || size == 0 || (size & (size - 1)) != 0) return 0;
  return static_cast<size_t>(size);
}

char* AlignUp(char* p, size_t alignment) {
  return reinterpret_cast<char*>((reinterpret_cast<uintptr_t>(p) + alignment - 1) &
                                 ~static_cast<uintptr_t>(alignment - 1));
}

char* AlignDown(char* p, size_t alignment) {
  return reinterpret_cast<char*>(reinterpret_cast<uintptr_t>(p) & ~static_cast<uintptr_t>(alignment - 1));
}

}  // namespace

bool HugePageHeap::AdvisedHugePagesEnabled(absl::string_view enabled_file_text) {
  // The selected mode is the bracketed word.
  const size_t open = enabled_file_text.find('[');
  const size_t close = enabled_file_text.find(']', open == absl::string_view::npos ? 0 : open);
  if (open == absl::string_view::npos || close == absl::string_view::npos) return false;
  const absl::string_view mode = enabled_file_text.substr(open + 1, close - open - 1);
  return mode == "always" || mode == "madvise";
}

bool HugePageHeap::SystemSupportsAdvisedHugePages() {
  return AdvisedHugePagesEnabled(ReadSmallFile(kThpEnabledPath)) && HugePageSize() != 0;
}

HugePageHeap::HugePageHeap(size_t reserve) {
#if defined(__GLIBC__) && __GLIBC_PREREQ(2, 33)
  if (!kHeapPrefaultingAvailable || reserve == 0) return;
  if (!AdvisedHugePagesEnabled(ReadSmallFile(kThpEnabledPath))) return;
  const size_t huge = HugePageSize();
  if (huge == 0) return;
  // Every thread allocates from the main heap: a second thread (hilo-opt's
  // verifier) would otherwise get an arena of its own, mapped apart, in
  // small pages.
  mallopt(M_ARENA_MAX, 1);
  // The heap grows by the reservation once; later growth is glibc's usual.
  char* const top_start = ReserveHeapTop(std::max(reserve, 2 * huge));
  ResetHeapTopPad();
  if (top_start == nullptr) return;
  char* const brk = static_cast<char*>(sbrk(0));
  // Advised before anything in it is written: a block that already holds a
  // small page is not made a huge page by a later fault.
  char* const begin = AlignUp(top_start + kMinGap, huge);
  char* const end = AlignDown(brk, huge);
  if (begin >= end || madvise(begin, end - begin, MADV_HUGEPAGE) != 0) return;
  begin_ = begin;
  end_ = end;
  huge_page_size_ = huge;
  // What the program allocates next comes from the top chunk's start, which
  // is not aligned: the part before the first huge page boundary (1 MB on
  // average) would still come in small pages, and it is what the parse
  // fills first. A block that spans it, allocated once and never touched,
  // makes the top chunk start at the boundary (malloc writes the next
  // chunk's header there). It is given back when this object is destroyed.
  void* filler = std::malloc(static_cast<size_t>(begin - top_start) - kChunkHeader);
  if (filler != nullptr && static_cast<char*>(sbrk(0)) - mallinfo2().keepcost == begin) {
    filler_ = filler;
  } else {
    std::free(filler);  // served from elsewhere: the start stays unaligned
  }
#else
  (void)reserve;
#endif
}

HugePageHeap::~HugePageHeap() { std::free(filler_); }

}  // namespace hilo

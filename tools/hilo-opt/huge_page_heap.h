// Reserving, in transparent huge pages, the heap a parse is about to fill.
#ifndef HILO_TOOLS_HILO_OPT_HUGE_PAGE_HEAP_H_
#define HILO_TOOLS_HILO_OPT_HUGE_PAGE_HEAP_H_

#include <cstddef>

#include "absl/strings/string_view.h"
#include "heap_prefault.h"  // kHeapPrefaultingAvailable, ReserveHeapTop

namespace hilo {

// On the virtual machines hilo is measured on, a page fault costs about
// 12 microseconds: 3 ms for every megabyte of fresh heap, more than the
// parsing itself (mixtral: 17 MB of heap, 4,400 faults). A huge page costs
// one fault for 2 MB (x86-64's size; the kernel's
// hpage_pmd_size is used). A HugePageHeap makes the heap a parse will fill come
// in huge pages:
// - glibc's main heap grows once, by `reserve` bytes (its top pad for one
//   request, then the default again): address space only, nothing is
//   touched, so nothing counts against the peak memory until it is used;
// - the part of that reservation that is aligned to 2 MB is advised
//   MADV_HUGEPAGE, so the first write to each 2 MB block faults in a whole
//   huge page (what glibc's `glibc.malloc.hugetlb=1` tunable does, but that
//   can only be set in the environment before the program starts);
// - the heap is never trimmed (a free at its top would give the reservation
//   back).
// glibc serves even large blocks (a module's instruction vectors) from the
// heap's free top while it has room, so they use the reservation too; what
// outgrows it grows the heap, or gets a mapping, as glibc always does.
//
// Active only when the kernel's transparent huge pages are enabled for
// advised memory ("always" or "madvise" in
// /sys/kernel/mm/transparent_hugepage/enabled) and glibc's heap is the
// allocator (not under AddressSanitizer or ThreadSanitizer); otherwise, or
// when the heap can not grow by `reserve`, it does nothing and the caller
// may fall back to a HeapPrefaulter. Construct it from a single-threaded
// program, before the allocations it is meant for; its malloc setting (no
// trimming) stays for the rest of the process.
class HugePageHeap {
 public:
  explicit HugePageHeap(size_t reserve);
  HugePageHeap(const HugePageHeap&) = delete;
  HugePageHeap& operator=(const HugePageHeap&) = delete;
  ~HugePageHeap();

  // True when the reservation was made and advised.
  bool active() const { return begin_ != nullptr; }
  // The advised range, [begin(), end()): aligned to the huge page size.
  char* begin() const { return begin_; }
  char* end() const { return end_; }
  size_t huge_page_size() const { return huge_page_size_; }

  // Whether this system gives advised memory huge pages.
  static bool SystemSupportsAdvisedHugePages();
  // The same decision from the text of
  // /sys/kernel/mm/transparent_hugepage/enabled, e.g. "always [madvise] never".
  static bool AdvisedHugePagesEnabled(absl::string_view enabled_file_text);

 private:
  char* begin_ = nullptr;
  char* end_ = nullptr;
  size_t huge_page_size_ = 0;
  void* filler_ = nullptr;  // the untouched block in front of the reservation
};

}  // namespace hilo

#endif  // HILO_TOOLS_HILO_OPT_HUGE_PAGE_HEAP_H_

// Faulting in, on a second core, the heap a parse is about to fill.
#ifndef HILO_TOOLS_HILO_OPT_HEAP_PREFAULT_H_
#define HILO_TOOLS_HILO_OPT_HEAP_PREFAULT_H_

#include <atomic>
#include <cstddef>
#include <thread>

namespace hilo {

// A parsed module takes about five bytes of heap per byte of text, every
// page of it new: for a 4 MB module the kernel's page faults (6,000) were a
// quarter of the round trip, all on the parsing thread. A HeapPrefaulter
// grows glibc's main heap once by `bytes` (address space: nothing becomes
// resident yet) and starts a thread that faults those pages in, in order,
// with madvise(MADV_POPULATE_WRITE), while the caller parses into them. The
// kernel never changes a page that is already there, so the parser's writes
// and the prefaulting can not disturb each other; the parser only stops
// paying for the faults.
//
// Under AddressSanitizer (whose allocator replaces glibc's heap) it does
// nothing: kHeapPrefaultingAvailable says which.
//
// Peak memory grows by whatever of `bytes` the parse does not use: size it
// from the input (see hilo-opt's driver), and use it for modules of a few
// MB, not for the largest. Best effort: without glibc, on kernels before
// Linux 5.14 (no MADV_POPULATE_WRITE), or when the heap can not grow in
// place, it does nothing and allocation works as before. Construct it from
// a single-threaded program, before the allocations it is meant for.
#if defined(__GLIBC__) && !defined(__SANITIZE_ADDRESS__)
inline constexpr bool kHeapPrefaultingAvailable = true;
#else
inline constexpr bool kHeapPrefaultingAvailable = false;
#endif

class HeapPrefaulter {
 public:
  explicit HeapPrefaulter(size_t bytes);
  HeapPrefaulter(const HeapPrefaulter&) = delete;
  HeapPrefaulter& operator=(const HeapPrefaulter&) = delete;
  // Stops the thread (between two chunks) and joins it.
  ~HeapPrefaulter();

  // The range being faulted in; empty when nothing was done.
  char* begin() const { return begin_; }
  char* end() const { return end_; }
  // Waits until the thread is done (tests).
  void Wait();
  // Bytes the thread faulted in so far.
  size_t populated() const { return populated_.load(std::memory_order_relaxed); }

 private:
  void Run();

  char* begin_ = nullptr;
  char* end_ = nullptr;
  std::atomic<bool> stop_{false};
  std::atomic<size_t> populated_{0};
  std::thread thread_;
};

}  // namespace hilo

#endif  // HILO_TOOLS_HILO_OPT_HEAP_PREFAULT_H_

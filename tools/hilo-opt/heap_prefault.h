// Faulting in, on a second core, the heap a parse is about to fill.
#ifndef HILO_TOOLS_HILO_OPT_HEAP_PREFAULT_H_
#define HILO_TOOLS_HILO_OPT_HEAP_PREFAULT_H_

#include <atomic>
#include <chrono>
#include <cstddef>
#include <thread>

namespace hilo {

// A parsed module takes two to seven bytes of heap per byte of text, every
// page of it new: for a 4 MB module the kernel's page faults (6,000) were a
// quarter of the round trip, all on the parsing thread. A HeapPrefaulter
// keeps the heap faulted in a little ahead of the program, from a second
// thread:
// - glibc's main heap is made to grow by `lead` bytes more than each
//   request needs (its top pad), and grows once by that much at once;
// - the thread follows the program break: every page below it is faulted
//   in, in order, with madvise(MADV_POPULATE_WRITE), 1 MB at a time, then
//   the thread looks again 50 microseconds later (up to a millisecond
//   later while the break does not move).
// So the pages the parser is about to use are already there, and at most
// `lead` bytes (plus what the program's last request did not use) are
// faulted in for nothing, whatever the input's size. The kernel never
// changes a page that is already there, so the program's writes and the
// prefaulting can not disturb each other.
//
// Under AddressSanitizer or ThreadSanitizer (whose allocators replace
// glibc's heap) it does nothing: kHeapPrefaultingAvailable says which. Best effort: without
// glibc, on kernels before Linux 5.14 (no MADV_POPULATE_WRITE), or when the
// heap can not grow in place, the thread stops and allocation works as
// before. Construct it from a single-threaded program, before the
// allocations it is meant for; it changes glibc's malloc settings (the heap
// is never trimmed), and gives back the top pad when destroyed.
#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define HILO_SANITIZER_ALLOCATOR 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define HILO_SANITIZER_ALLOCATOR 1
#endif
#if defined(__GLIBC__) && !defined(HILO_SANITIZER_ALLOCATOR)
inline constexpr bool kHeapPrefaultingAvailable = true;
#else
inline constexpr bool kHeapPrefaultingAvailable = false;
#endif

// Makes glibc's main heap hold at least `bytes` (at most 2 GB) in its top
// chunk, the free block that ends at the program break, growing it once if
// it holds less: a request one byte larger than the top chunk, with mmap off
// so that it can not get a mapping of its own, and `bytes` as the top pad.
// The heap is never trimmed from then on (a free at its top would give the
// growth back), and the top pad stays at `bytes` until ResetHeapTopPad().
// Returns where the top chunk starts, or nullptr when the heap is not
// glibc's or can not grow in place (under an address-space limit glibc maps
// memory elsewhere instead). For HeapPrefaulter and HugePageHeap
// (huge_page_heap.h).
char* ReserveHeapTop(size_t bytes);
// Gives glibc's default top pad (128 KiB) back.
void ResetHeapTopPad();

class HeapPrefaulter {
 public:
  explicit HeapPrefaulter(size_t lead);
  HeapPrefaulter(const HeapPrefaulter&) = delete;
  HeapPrefaulter& operator=(const HeapPrefaulter&) = delete;
  // Stops the thread (between two chunks) and joins it.
  ~HeapPrefaulter();

  // True while the thread runs (false when nothing was done).
  bool active() const { return thread_.joinable(); }
  // Where the thread started, and how far it has faulted in so far: the
  // faulted-in range is [begin(), faulted_end()).
  char* begin() const { return begin_; }
  char* faulted_end() const { return faulted_end_.load(std::memory_order_acquire); }
  // Waits until everything below the current program break is faulted in,
  // for at most `timeout`; false on timeout or if the thread gave up
  // (tests).
  bool WaitUntilCaughtUp(std::chrono::milliseconds timeout) const;

 private:
  void Run();

  char* begin_ = nullptr;
  std::atomic<char*> faulted_end_{nullptr};
  std::atomic<bool> stop_{false};
  std::atomic<bool> gave_up_{false};
  std::thread thread_;
};

}  // namespace hilo

#endif  // HILO_TOOLS_HILO_OPT_HEAP_PREFAULT_H_

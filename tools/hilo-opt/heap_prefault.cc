#include "heap_prefault.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstdlib>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23  // Linux 5.14; older kernels answer EINVAL
#endif

namespace hilo {
namespace {

constexpr size_t kChunk = size_t{1} << 20;  // faulted in per madvise call
// mallopt takes an int; glibc's default top pad is 128 KiB.
constexpr size_t kMaxBytes = size_t{1} << 30;
constexpr int kDefaultTopPad = 128 * 1024;
constexpr int kDefaultMmapMax = 65536;
// glibc's largest mmap threshold on 64-bit: blocks below it come from the
// heap, so a large vector or the printer's held-back text lands in the
// prefaulted range too.
constexpr int kMmapThreshold = 32 * 1024 * 1024;

char* PageAlignUp(char* p) {
  const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  return reinterpret_cast<char*>((reinterpret_cast<uintptr_t>(p) + page - 1) & ~(page - 1));
}

}  // namespace

HeapPrefaulter::HeapPrefaulter(size_t bytes) {
#if defined(__GLIBC__) && __GLIBC_PREREQ(2, 33)
  if (!kHeapPrefaultingAvailable || bytes == 0) return;
  bytes = std::min(bytes, kMaxBytes);
  mallopt(M_MMAP_THRESHOLD, kMmapThreshold);
  // Never give the range back (a free at the top of the heap would trim it).
  mallopt(M_TRIM_THRESHOLD, INT_MAX);
  // New blocks come from the top chunk, which ends at the program break.
  // If it is smaller than `bytes`, grow it once: the main heap grows by the
  // top pad whenever a request exceeds the top chunk, so ask for one byte
  // more than it holds with the pad set to `bytes` (and mmap off, so that
  // the request can not be served by a mapping of its own).
  size_t top = mallinfo2().keepcost;
  if (top < bytes) {
    mallopt(M_TOP_PAD, static_cast<int>(bytes));
    mallopt(M_MMAP_MAX, 0);
    void* grow = std::malloc(top + 1);
    mallopt(M_MMAP_MAX, kDefaultMmapMax);
    mallopt(M_TOP_PAD, kDefaultTopPad);
    if (grow == nullptr) return;
    std::free(grow);
    top = mallinfo2().keepcost;
  }
  char* const brk = static_cast<char*>(sbrk(0));
  if (brk == reinterpret_cast<char*>(-1) || top == 0) return;
  begin_ = PageAlignUp(brk - top);
  end_ = std::min(brk, begin_ + bytes);
  if (end_ <= begin_) {
    begin_ = end_ = nullptr;
    return;
  }
  thread_ = std::thread([this] { Run(); });
#else
  (void)bytes;
#endif
}

HeapPrefaulter::~HeapPrefaulter() {
  stop_.store(true, std::memory_order_relaxed);
  Wait();
}

void HeapPrefaulter::Wait() {
  if (thread_.joinable()) thread_.join();
}

void HeapPrefaulter::Run() {
  for (char* p = begin_; p < end_ && !stop_.load(std::memory_order_relaxed); p += kChunk) {
    const size_t length = std::min(kChunk, static_cast<size_t>(end_ - p));
    if (madvise(p, length, MADV_POPULATE_WRITE) != 0) return;  // an older kernel: give up
    populated_.fetch_add(length, std::memory_order_relaxed);
  }
}

}  // namespace hilo

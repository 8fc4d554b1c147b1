#include "heap_prefault.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <system_error>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23  // Linux 5.14; older kernels answer EINVAL
#endif

namespace hilo {
namespace {

constexpr size_t kChunk = size_t{1} << 20;  // faulted in per madvise call
// How long the thread sleeps when it has caught up with the program break:
// 50 microseconds, doubling up to a millisecond while the break stays where
// it is (a program that is done allocating, printing say, then costs a
// thousand wake-ups a second, not twenty thousand). A parser fills about
// 300 KB of heap per millisecond: it uses at most a tenth of the lead
// before the thread looks again.
constexpr auto kPollInterval = std::chrono::microseconds(50);
constexpr auto kMaxPollInterval = std::chrono::microseconds(1000);
// mallopt takes an int; glibc's default top pad is 128 KiB.
constexpr size_t kMaxLead = size_t{1} << 30;
constexpr int kDefaultTopPad = 128 * 1024;
constexpr int kDefaultMmapMax = 65536;

char* PageAlignUp(char* p) {
  const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  return reinterpret_cast<char*>((reinterpret_cast<uintptr_t>(p) + page - 1) & ~(page - 1));
}

char* ProgramBreak() { return static_cast<char*>(sbrk(0)); }

}  // namespace

HeapPrefaulter::HeapPrefaulter(size_t lead) {
#if defined(__GLIBC__) && __GLIBC_PREREQ(2, 33)
  if (!kHeapPrefaultingAvailable || lead == 0) return;
  lead = std::min(lead, kMaxLead);
  // Never give heap back (a free at the top of the heap would trim it, and
  // the next growth fault it in again).
  mallopt(M_TRIM_THRESHOLD, INT_MAX);
  // The main heap grows by the top pad whenever a request exceeds its top
  // chunk (the free block that ends at the program break). Grow it once now
  // if the top chunk is smaller than the lead: ask for one byte more than it
  // holds, with mmap off so that the request can not get a mapping of its
  // own.
  mallopt(M_TOP_PAD, static_cast<int>(lead));
  size_t top = mallinfo2().keepcost;
  if (top < lead) {
    mallopt(M_MMAP_MAX, 0);
    void* grow = std::malloc(top + 1);
    mallopt(M_MMAP_MAX, kDefaultMmapMax);
    if (grow == nullptr) {
      mallopt(M_TOP_PAD, kDefaultTopPad);
      return;
    }
    std::free(grow);
    top = mallinfo2().keepcost;
  }
  char* const brk = ProgramBreak();
  if (brk == reinterpret_cast<char*>(-1) || top == 0) {
    mallopt(M_TOP_PAD, kDefaultTopPad);
    return;
  }
  begin_ = PageAlignUp(brk - top);
  faulted_end_.store(begin_, std::memory_order_release);
  try {
    thread_ = std::thread([this] { Run(); });
  } catch (const std::system_error&) {  // no thread to be had: nothing is done
    begin_ = nullptr;
    faulted_end_.store(nullptr, std::memory_order_release);
    mallopt(M_TOP_PAD, kDefaultTopPad);
  }
#else
  (void)lead;
#endif
}

HeapPrefaulter::~HeapPrefaulter() {
  stop_.store(true, std::memory_order_relaxed);
  if (thread_.joinable()) thread_.join();
#if defined(__GLIBC__)
  if (begin_ != nullptr) mallopt(M_TOP_PAD, kDefaultTopPad);
#endif
}

bool HeapPrefaulter::WaitUntilCaughtUp(std::chrono::milliseconds timeout) const {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (gave_up_.load(std::memory_order_acquire) || !active()) return false;
    if (faulted_end() >= ProgramBreak()) return true;
    std::this_thread::sleep_for(kPollInterval);
  }
  return false;
}

void HeapPrefaulter::Run() {
  char* done = begin_;
  auto interval = kPollInterval;
  while (!stop_.load(std::memory_order_relaxed)) {
    // sbrk(0) only reads the break glibc recorded; the heap below it is
    // mapped, and never given back while this object lives.
    char* const brk = ProgramBreak();
    if (done >= brk) {
      std::this_thread::sleep_for(interval);
      interval = std::min(2 * interval, kMaxPollInterval);
      continue;
    }
    interval = kPollInterval;
    const size_t length = std::min(kChunk, static_cast<size_t>(brk - done));
    if (madvise(done, length, MADV_POPULATE_WRITE) != 0) {  // an older kernel
      gave_up_.store(true, std::memory_order_release);
      return;
    }
    done += length;
    faulted_end_.store(done, std::memory_order_release);
  }
}

}  // namespace hilo

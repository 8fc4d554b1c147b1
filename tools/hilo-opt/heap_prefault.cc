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
constexpr size_t kMaxLead = size_t{1} << 30;
// glibc's defaults; mallopt takes an int.
constexpr int kDefaultTopPad = 128 * 1024;
constexpr int kDefaultMmapMax = 65536;
constexpr size_t kMaxTopPad = (size_t{1} << 31) - (size_t{4} << 20);

char* PageAlignUp(char* p) {
  const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  return reinterpret_cast<char*>((reinterpret_cast<uintptr_t>(p) + page - 1) & ~(page - 1));
}

char* ProgramBreak() { return static_cast<char*>(sbrk(0)); }

}  // namespace

char* ReserveHeapTop(size_t bytes) {
#if defined(__GLIBC__) && __GLIBC_PREREQ(2, 33)
  if (!kHeapPrefaultingAvailable || bytes == 0) return nullptr;
  bytes = std::min(bytes, kMaxTopPad);
  mallopt(M_TRIM_THRESHOLD, INT_MAX);
  mallopt(M_TOP_PAD, static_cast<int>(bytes));
  size_t top = mallinfo2().keepcost;
  char* brk = ProgramBreak();
  if (brk == reinterpret_cast<char*>(-1)) return nullptr;
  if (top < bytes) {
    mallopt(M_MMAP_MAX, 0);
    void* grow = std::malloc(top + 1);
    mallopt(M_MMAP_MAX, kDefaultMmapMax);
    if (grow == nullptr) return nullptr;
    std::free(grow);
    char* const old_brk = brk;
    brk = ProgramBreak();
    // Under an address-space limit glibc may serve the request from a
    // mapping of its own: then the break has not moved by the growth.
    if (brk < old_brk + (bytes - top)) return nullptr;
    top = mallinfo2().keepcost;
  }
  if (top < bytes) return nullptr;
  return brk - top;
#else
  (void)bytes;
  return nullptr;
#endif
}

void ResetHeapTopPad() {
#if defined(__GLIBC__)
  mallopt(M_TOP_PAD, kDefaultTopPad);
#endif
}

HeapPrefaulter::HeapPrefaulter(size_t lead) {
#if defined(__GLIBC__) && __GLIBC_PREREQ(2, 33)
  if (!kHeapPrefaultingAvailable || lead == 0) return;
  // The main heap grows by the top pad whenever a request exceeds its top
  // chunk: with the lead as the top pad, every growth leaves the lead free.
  char* const top_start = ReserveHeapTop(std::min(lead, kMaxLead));
  if (top_start == nullptr) {
    ResetHeapTopPad();
    return;
  }
  begin_ = PageAlignUp(top_start);
  faulted_end_.store(begin_, std::memory_order_release);
  try {
    thread_ = std::thread([this] { Run(); });
  } catch (const std::system_error&) {  // no thread to be had: nothing is done
    begin_ = nullptr;
    faulted_end_.store(nullptr, std::memory_order_release);
    ResetHeapTopPad();
  }
#else
  (void)lead;
#endif
}

HeapPrefaulter::~HeapPrefaulter() {
  stop_.store(true, std::memory_order_relaxed);
  if (thread_.joinable()) thread_.join();
  if (begin_ != nullptr) ResetHeapTopPad();
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

// HugePageHeap (tools/hilo-opt/huge_page_heap.h): which kernel settings give
// advised memory huge pages; the reservation is the heap the program
// allocates from next, it is advised for huge pages, and reserving it
// faults nothing in.
#include "huge_page_heap.h"

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#include "gtest/gtest.h"

namespace hilo {
namespace {

constexpr size_t kMiB = size_t{1} << 20;

TEST(HugePageHeapTest, ReadsTheSelectedModeOfTheKernelSetting) {
  EXPECT_TRUE(HugePageHeap::AdvisedHugePagesEnabled("always [madvise] never\n"));
  EXPECT_TRUE(HugePageHeap::AdvisedHugePagesEnabled("[always] madvise never\n"));
  EXPECT_FALSE(HugePageHeap::AdvisedHugePagesEnabled("always madvise [never]\n"));
  EXPECT_FALSE(HugePageHeap::AdvisedHugePagesEnabled(""));  // no such file
  EXPECT_FALSE(HugePageHeap::AdvisedHugePagesEnabled("madvise"));
  EXPECT_FALSE(HugePageHeap::AdvisedHugePagesEnabled("always [madvise never"));
  EXPECT_FALSE(HugePageHeap::AdvisedHugePagesEnabled("[defer] never"));
}

// The smaps entry of the mapping that holds `address`: its "VmFlags:" line
// and its resident anonymous kilobytes.
struct Mapping {
  std::string flags;
  long rss_kb = -1;
};

Mapping MappingOf(const void* address) {
  std::ifstream smaps("/proc/self/smaps");
  const uintptr_t a = reinterpret_cast<uintptr_t>(address);
  Mapping mapping;
  bool inside = false;
  for (std::string line; std::getline(smaps, line);) {
    unsigned long long begin = 0, end = 0;
    if (std::sscanf(line.c_str(), "%llx-%llx ", &begin, &end) == 2 && line.find(':') > line.find(' ')) {
      inside = begin <= a && a < end;
    } else if (inside && line.rfind("Rss:", 0) == 0) {
      mapping.rss_kb = std::strtol(line.c_str() + 4, nullptr, 10);
    } else if (inside && line.rfind("VmFlags:", 0) == 0) {
      mapping.flags = line.substr(8) + " ";
    }
  }
  return mapping;
}

TEST(HugePageHeapTest, ReservesAdvisedHeapThatTheProgramAllocatesFromNext) {
  constexpr size_t kReserve = 64 * kMiB;
  HugePageHeap heap(kReserve);
  if (!kHeapPrefaultingAvailable || !HugePageHeap::SystemSupportsAdvisedHugePages()) {
    // A sanitizer's allocator, or a kernel without huge pages for advised
    // memory: deliberately nothing, and hilo-opt falls back to prefaulting.
    EXPECT_FALSE(heap.active());
    return;
  }
  ASSERT_TRUE(heap.active());
  const size_t huge = heap.huge_page_size();
  ASSERT_GT(huge, 0u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(heap.begin()) % huge, 0u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(heap.end()) % huge, 0u);
  // All of the reservation but its unaligned ends is advised.
  EXPECT_GE(static_cast<size_t>(heap.end() - heap.begin()), kReserve - 2 * huge);
  EXPECT_LE(heap.end(), static_cast<char*>(sbrk(0)));

  // Nothing was faulted in for the reservation.
  const Mapping reserved = MappingOf(heap.begin());
  EXPECT_NE(reserved.flags.find(" hg "), std::string::npos) << reserved.flags;
  EXPECT_LT(reserved.rss_kb, static_cast<long>(kReserve / 2 / 1024));

  // A 24 MB block (a module's instruction vector, say) comes from the
  // reservation, not from a mapping of its own.
  constexpr size_t kBig = 24 * kMiB;
  std::unique_ptr<char[]> big(new char[kBig]);
  EXPECT_GE(big.get(), heap.begin() - huge);
  EXPECT_LE(big.get() + kBig, heap.end() + huge);
  std::memset(big.get(), 1, kBig);
  const Mapping used = MappingOf(big.get() + kBig / 2);
  EXPECT_NE(used.flags.find(" hg "), std::string::npos) << used.flags;
  EXPECT_GE(used.rss_kb, static_cast<long>(kBig / 1024));
  EXPECT_EQ(big[kBig - 1], 1);
}

TEST(HugePageHeapTest, NothingToReserveDoesNothing) {
  HugePageHeap heap(0);
  EXPECT_FALSE(heap.active());
  EXPECT_EQ(heap.begin(), nullptr);
}

}  // namespace
}  // namespace hilo

// HeapPrefaulter (tools/hilo-opt/heap_prefault.h): the heap range it faults
// in is the heap's, becomes resident, and allocations made meanwhile keep
// their contents.
#include "heap_prefault.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "gtest/gtest.h"

namespace hilo {
namespace {

constexpr size_t kMiB = size_t{1} << 20;

// Pages of [begin, end) not resident in memory.
size_t NonResidentPages(char* begin, char* end) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  std::vector<unsigned char> residency((static_cast<size_t>(end - begin) + page - 1) / page);
  if (mincore(begin, static_cast<size_t>(end - begin), residency.data()) != 0) return SIZE_MAX;
  size_t missing = 0;
  for (unsigned char r : residency) missing += (r & 1) == 0;
  return missing;
}

TEST(HeapPrefaulterTest, FaultsInAHeapRangeThatLaterAllocationsUse) {
  HeapPrefaulter prefaulter(64 * kMiB);
  if (!kHeapPrefaultingAvailable) {
    // AddressSanitizer's allocator: deliberately nothing.
    EXPECT_EQ(prefaulter.begin(), nullptr);
    return;
  }
  ASSERT_NE(prefaulter.begin(), nullptr) << "glibc's heap did not grow in place";
  EXPECT_GE(static_cast<size_t>(prefaulter.end() - prefaulter.begin()), 63 * kMiB);
  prefaulter.Wait();
  EXPECT_EQ(prefaulter.populated(), static_cast<size_t>(prefaulter.end() - prefaulter.begin()));
  EXPECT_EQ(NonResidentPages(prefaulter.begin(), prefaulter.end()), 0u);
  // The next allocations come from that range (the top of the heap; the
  // range starts at the first page boundary in it).
  std::unique_ptr<char[]> block(new char[4096]);
  EXPECT_GE(block.get() + 4096, prefaulter.begin());
  EXPECT_LT(block.get(), prefaulter.end());
}

TEST(HeapPrefaulterTest, AllocationsMadeMeanwhileKeepTheirContents) {
  HeapPrefaulter prefaulter(128 * kMiB);
  ASSERT_EQ(prefaulter.begin() != nullptr, kHeapPrefaultingAvailable);
  // Fill blocks while the range is being faulted in: the kernel must not
  // replace a page the program already wrote.
  std::vector<std::unique_ptr<uint64_t[]>> blocks;
  for (uint64_t i = 0; i < 200000; ++i) {
    blocks.emplace_back(new uint64_t[64]);
    for (uint64_t k = 0; k < 64; ++k) blocks.back()[k] = i * 64 + k;
  }
  prefaulter.Wait();
  for (uint64_t i = 0; i < blocks.size(); ++i) {
    for (uint64_t k = 0; k < 64; ++k) ASSERT_EQ(blocks[i][k], i * 64 + k) << i;
  }
}

TEST(HeapPrefaulterTest, StopsWhenDestroyed) {
  size_t populated = 0;
  size_t size = 0;
  {
    HeapPrefaulter prefaulter(512 * kMiB);
    ASSERT_EQ(prefaulter.begin() != nullptr, kHeapPrefaultingAvailable);
    if (!kHeapPrefaultingAvailable) return;
    size = static_cast<size_t>(prefaulter.end() - prefaulter.begin());
    // Destroyed right away: the thread stops after the chunk it is on.
    populated = prefaulter.populated();
  }
  EXPECT_LT(populated, size);
}

TEST(HeapPrefaulterTest, ZeroBytesDoesNothing) {
  HeapPrefaulter prefaulter(0);
  EXPECT_EQ(prefaulter.begin(), nullptr);
  EXPECT_EQ(prefaulter.end(), nullptr);
}

}  // namespace
}  // namespace hilo

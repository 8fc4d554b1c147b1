// HeapPrefaulter (tools/hilo-opt/heap_prefault.h): the heap it faults in is
// the heap the program allocates from next, it follows the heap as it
// grows and stays at most its lead ahead, allocations made meanwhile keep
// their contents, and it stops when destroyed.
#include "heap_prefault.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "gtest/gtest.h"

namespace hilo {
namespace {

constexpr size_t kMiB = size_t{1} << 20;
// Below glibc's default mmap threshold (128 KiB): served from the heap.
constexpr size_t kBlock = 100 * 1024;
constexpr auto kPatience = std::chrono::seconds(20);

size_t PageSize() { return static_cast<size_t>(sysconf(_SC_PAGESIZE)); }

// Pages of [begin, end) not resident in memory.
size_t NonResidentPages(const char* begin, const char* end) {
  const size_t page = PageSize();
  const uintptr_t first = reinterpret_cast<uintptr_t>(begin) & ~(page - 1);
  const size_t length = reinterpret_cast<uintptr_t>(end) - first;
  std::vector<unsigned char> residency((length + page - 1) / page);
  if (mincore(reinterpret_cast<void*>(first), length, residency.data()) != 0) return SIZE_MAX;
  size_t missing = 0;
  for (unsigned char r : residency) missing += (r & 1) == 0;
  return missing;
}

// Allocates `total` bytes in heap blocks that the program itself does not
// touch (malloc writes only a block's header, in its first page).
std::vector<std::unique_ptr<char[]>> AllocateUntouched(size_t total) {
  std::vector<std::unique_ptr<char[]>> blocks;
  for (size_t done = 0; done < total; done += kBlock) blocks.emplace_back(new char[kBlock]);
  return blocks;
}

// Pages of the blocks, after their first page, that are not resident.
size_t NonResidentBlockPages(const std::vector<std::unique_ptr<char[]>>& blocks) {
  size_t missing = 0;
  for (const auto& block : blocks) missing += NonResidentPages(block.get() + PageSize(), block.get() + kBlock);
  return missing;
}

TEST(HeapPrefaulterTest, FaultsInTheHeapTheProgramAllocatesNext) {
  HeapPrefaulter prefaulter(16 * kMiB);
  if (!kHeapPrefaultingAvailable) {
    // A sanitizer's allocator: deliberately nothing.
    EXPECT_FALSE(prefaulter.active());
    EXPECT_EQ(prefaulter.begin(), nullptr);
    return;
  }
  ASSERT_TRUE(prefaulter.active()) << "glibc's heap did not grow in place";
  ASSERT_TRUE(prefaulter.WaitUntilCaughtUp(kPatience));
  // The heap grew by the lead at once, and all of it is resident.
  EXPECT_GE(static_cast<size_t>(prefaulter.faulted_end() - prefaulter.begin()), 15 * kMiB);
  EXPECT_EQ(NonResidentPages(prefaulter.begin(), prefaulter.faulted_end()), 0u);
  // The next blocks come from there: resident although never written.
  std::vector<std::unique_ptr<char[]>> blocks = AllocateUntouched(8 * kMiB);
  EXPECT_GE(blocks.front().get(), prefaulter.begin() - PageSize());
  EXPECT_LE(blocks.back().get() + kBlock, prefaulter.faulted_end());
  EXPECT_EQ(NonResidentBlockPages(blocks), 0u);
}

TEST(HeapPrefaulterTest, FollowsTheHeapAsItGrowsAndStaysWithinItsLead) {
  constexpr size_t kLead = 4 * kMiB;
  HeapPrefaulter prefaulter(kLead);
  ASSERT_EQ(prefaulter.active(), kHeapPrefaultingAvailable);
  if (!kHeapPrefaultingAvailable) return;
  // Ten times the lead: the heap grows several times past the first range.
  constexpr size_t kTotal = 40 * kMiB;
  std::vector<std::unique_ptr<char[]>> blocks;
  for (size_t done = 0; done < kTotal; done += kBlock) {
    blocks.emplace_back(new char[kBlock]);
    // Give the thread time now and then, as a parser's work does.
    if (blocks.size() % 64 == 0) {
      ASSERT_TRUE(prefaulter.WaitUntilCaughtUp(kPatience));
    }
  }
  ASSERT_TRUE(prefaulter.WaitUntilCaughtUp(kPatience));
  EXPECT_EQ(NonResidentBlockPages(blocks), 0u);
  // Faulted in past the last block: at most the lead and one chunk.
  const char* last_end = nullptr;
  for (const auto& block : blocks) last_end = std::max<const char*>(last_end, block.get() + kBlock);
  EXPECT_GE(prefaulter.faulted_end(), last_end);
  EXPECT_LE(static_cast<size_t>(prefaulter.faulted_end() - last_end), kLead + kMiB);
}

TEST(HeapPrefaulterTest, AllocationsMadeMeanwhileKeepTheirContents) {
  HeapPrefaulter prefaulter(8 * kMiB);
  ASSERT_EQ(prefaulter.active(), kHeapPrefaultingAvailable);
  // Fill blocks while the heap is being faulted in: the kernel must not
  // replace a page the program already wrote.
  std::vector<std::unique_ptr<uint64_t[]>> blocks;
  for (uint64_t i = 0; i < 200000; ++i) {
    blocks.emplace_back(new uint64_t[64]);
    for (uint64_t k = 0; k < 64; ++k) blocks.back()[k] = i * 64 + k;
  }
  if (kHeapPrefaultingAvailable) {
    ASSERT_TRUE(prefaulter.WaitUntilCaughtUp(kPatience));
  }
  for (uint64_t i = 0; i < blocks.size(); ++i) {
    for (uint64_t k = 0; k < 64; ++k) ASSERT_EQ(blocks[i][k], i * 64 + k) << i;
  }
}

TEST(HeapPrefaulterTest, StopsWhenDestroyed) {
  if (!kHeapPrefaultingAvailable) GTEST_SKIP() << "nothing to stop under a sanitizer's allocator";
  constexpr size_t kLead = 2 * kMiB;
  char* faulted_end = nullptr;
  {
    HeapPrefaulter prefaulter(kLead);
    ASSERT_TRUE(prefaulter.WaitUntilCaughtUp(kPatience));
    faulted_end = prefaulter.faulted_end();
  }
  // Allocate until the heap grew past what was faulted in (earlier tests
  // left free heap below it): nobody faults those blocks in now.
  std::vector<std::unique_ptr<char[]>> blocks;
  size_t beyond = 0;
  size_t missing = 0;
  for (size_t total = 0; beyond < 64 && total < (size_t{2} << 30); total += kBlock) {
    blocks.emplace_back(new char[kBlock]);
    if (blocks.back().get() < faulted_end) continue;
    ++beyond;
    missing += NonResidentPages(blocks.back().get() + PageSize(), blocks.back().get() + kBlock);
  }
  ASSERT_EQ(beyond, 64u);
  const size_t pages_per_block = kBlock / PageSize() - 1;
  EXPECT_GE(missing, beyond * pages_per_block * 9 / 10);
}

TEST(HeapPrefaulterTest, ZeroLeadDoesNothing) {
  HeapPrefaulter prefaulter(0);
  EXPECT_FALSE(prefaulter.active());
  EXPECT_EQ(prefaulter.begin(), nullptr);
  EXPECT_FALSE(prefaulter.WaitUntilCaughtUp(std::chrono::milliseconds(1)));
}

}  // namespace
}  // namespace hilo

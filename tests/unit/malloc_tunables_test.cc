// When the tools re-execute themselves with glibc's malloc tunables
// (tools/common/malloc_tunables.h): large regular input files only, and
// never against the user's own GLIBC_TUNABLES or HILO_MALLOC_TUNABLES=0.
#include "common/malloc_tunables.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "gtest/gtest.h"

namespace hilo::tool {
namespace {

constexpr bool kSanitized = kMallocReplacedBySanitizer;

// A sparse file of `bytes` (no disk space used).
std::string SparseFile(const std::string& name, long long bytes) {
  const std::string path = testing::TempDir() + name;
  const int fd = open(path.c_str(), O_CREAT | O_TRUNC | O_WRONLY, 0644);
  EXPECT_GE(fd, 0);
  EXPECT_EQ(ftruncate(fd, bytes), 0);
  close(fd);
  return path;
}

class MallocTunablesTest : public testing::Test {
 protected:
  void SetUp() override {
    unsetenv("GLIBC_TUNABLES");
    unsetenv("HILO_MALLOC_TUNABLES");
  }
  void TearDown() override { SetUp(); }
};

TEST_F(MallocTunablesTest, OnlyLargeRegularFiles) {
  const std::string large = SparseFile("large.hlo", kLargeInputBytes);
  const std::string small = SparseFile("small.hlo", kLargeInputBytes - 1);
  EXPECT_EQ(WantsMallocTunables(large), !kSanitized);
  EXPECT_FALSE(WantsMallocTunables(small));
  EXPECT_FALSE(WantsMallocTunables("-"));  // standard input
  EXPECT_FALSE(WantsMallocTunables(testing::TempDir()));  // a directory
  EXPECT_FALSE(WantsMallocTunables(testing::TempDir() + "no-such-file.hlo"));
}

TEST_F(MallocTunablesTest, TheUsersSettingsWin) {
  const std::string large = SparseFile("large2.hlo", kLargeInputBytes);
  setenv("HILO_MALLOC_TUNABLES", "0", 1);
  EXPECT_FALSE(WantsMallocTunables(large));
  setenv("HILO_MALLOC_TUNABLES", "1", 1);
  EXPECT_EQ(WantsMallocTunables(large), !kSanitized);
  // Also what stops a loop: the re-executed process has GLIBC_TUNABLES set.
  setenv("GLIBC_TUNABLES", "glibc.malloc.arena_max=1", 1);
  EXPECT_FALSE(WantsMallocTunables(large));
}

}  // namespace
}  // namespace hilo::tool

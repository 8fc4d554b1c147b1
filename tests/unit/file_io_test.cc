// AtomicFileWriter (tools/common/file_io.h): what is written is not seen
// at the path before Commit(), and HidesWritesUntilCommit tells which paths
// that holds for (hilo-opt then prints while it verifies).
#include "common/file_io.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <cstddef>
#include <fstream>
#include <sstream>
#include <string>

#include "gtest/gtest.h"
#include "smaps.h"

namespace hilo {
namespace {

class FileIoTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/hilo_file_io_test.XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { std::system(("rm -rf '" + dir_ + "'").c_str()); }

  std::string Path(const std::string& name) const { return dir_ + "/" + name; }
  static std::string Contents(const std::string& path) {
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }

  // A file `name` of numbered lines, 4 MB unless told (its text in
  // `*text`), read.
  absl::StatusOr<InputBuffer> ReadLargeFile(const std::string& name, std::string* text,
                                            size_t bytes = size_t{4} << 20) const {
    const std::string path = Path(name);
    for (int i = 0; text->size() < bytes; ++i) *text += "line " + std::to_string(i) + "\n";
    std::ofstream(path) << *text;
    return ReadInput(path);
  }
  // The resident KiB of the mapping holding `mapped`.
  static long ResidentKb(absl::string_view mapped) {
    return std::atol(testing::SmapsField(mapped.data(), "Rss:").c_str());
  }

  std::string dir_;
};

TEST_F(FileIoTest, RegularFilesAndNewPathsAndTheNullDeviceHideWrites) {
  const std::string file = Path("out.hlo");
  EXPECT_TRUE(AtomicFileWriter::HidesWritesUntilCommit(file));  // does not exist yet
  { std::ofstream(file) << "old\n"; }
  EXPECT_TRUE(AtomicFileWriter::HidesWritesUntilCommit(file));
  ASSERT_EQ(symlink(file.c_str(), Path("link.hlo").c_str()), 0);
  EXPECT_TRUE(AtomicFileWriter::HidesWritesUntilCommit(Path("link.hlo")));
  EXPECT_TRUE(AtomicFileWriter::HidesWritesUntilCommit("/dev/null"));
}

TEST_F(FileIoTest, FifosOtherDevicesAndDirectoriesDoNot) {
  ASSERT_EQ(mkfifo(Path("fifo").c_str(), 0600), 0);
  EXPECT_FALSE(AtomicFileWriter::HidesWritesUntilCommit(Path("fifo")));
  EXPECT_FALSE(AtomicFileWriter::HidesWritesUntilCommit("/dev/zero"));  // character device 1, 5
  EXPECT_FALSE(AtomicFileWriter::HidesWritesUntilCommit("/dev/full"));
  ASSERT_EQ(symlink("/dev/full", Path("full").c_str()), 0);
  EXPECT_FALSE(AtomicFileWriter::HidesWritesUntilCommit(Path("full")));
  EXPECT_FALSE(AtomicFileWriter::HidesWritesUntilCommit(dir_));
}

TEST_F(FileIoTest, WrittenTextIsSeenOnlyAfterCommit) {
  const std::string file = Path("out.hlo");
  { std::ofstream(file) << "old\n"; }
  {
    AtomicFileWriter writer;
    ASSERT_TRUE(writer.Open(file).ok());
    ASSERT_TRUE(writer.Write("new text\n").ok());
    EXPECT_EQ(Contents(file), "old\n");
    ASSERT_TRUE(writer.Commit().ok());
  }
  EXPECT_EQ(Contents(file), "new text\n");
  // Abandoned (destroyed without Commit): the old text stays, and no
  // temporary file is left behind.
  {
    AtomicFileWriter writer;
    ASSERT_TRUE(writer.Open(file).ok());
    ASSERT_TRUE(writer.Write("lost\n").ok());
  }
  EXPECT_EQ(Contents(file), "new text\n");
  EXPECT_EQ(std::system(("test $(ls -A '" + dir_ + "' | wc -l) -eq 1").c_str()), 0);
  // A path that did not exist is not created without Commit.
  {
    AtomicFileWriter writer;
    ASSERT_TRUE(writer.Open(Path("never.hlo")).ok());
    ASSERT_TRUE(writer.Write("x").ok());
  }
  struct stat st;
  EXPECT_NE(stat(Path("never.hlo").c_str(), &st), 0);
}

TEST_F(FileIoTest, CheckOutputPathNamesThePathAndItsMissingFolder) {
  EXPECT_TRUE(CheckOutputPath("-").ok());
  EXPECT_TRUE(CheckOutputPath(Path("new.hlo")).ok());
  EXPECT_TRUE(CheckOutputPath("/dev/null").ok());
  absl::Status missing = CheckOutputPath(Path("no/such/out.hlo"));
  EXPECT_EQ(missing.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(missing.message(), "cannot write '" + Path("no/such/out.hlo") + "': folder '" +
                                   Path("no/such") + "' does not exist");
  EXPECT_EQ(CheckOutputPath(dir_).message(), "cannot write '" + dir_ + "': it is a folder");
  // The writer names the path the user gave too, not a temporary file.
  AtomicFileWriter file;
  EXPECT_EQ(file.Open(Path("no/such/out.hlo")).message(), missing.message());
}

TEST_F(FileIoTest, SameOutputFileSeesThroughSpellings) {
  EXPECT_TRUE(SameOutputFile("-", "-"));
  EXPECT_FALSE(SameOutputFile("-", Path("a")));
  EXPECT_TRUE(SameOutputFile(Path("a"), Path("a")));
  EXPECT_TRUE(SameOutputFile(Path("a"), dir_ + "/./a"));  // neither exists yet
  EXPECT_FALSE(SameOutputFile(Path("a"), Path("b")));
  std::ofstream(Path("a")) << "x";
  ASSERT_EQ(symlink(Path("a").c_str(), Path("link").c_str()), 0);
  EXPECT_TRUE(SameOutputFile(Path("link"), Path("a")));
}

TEST_F(FileIoTest, DroppedPagesLeaveMemoryAndReadBackTheSame) {
  std::string text;
  absl::StatusOr<InputBuffer> input = ReadLargeFile("big.hlo", &text);
  ASSERT_TRUE(input.ok()) << input.status();
  const absl::string_view mapped = input->text();
  ASSERT_EQ(mapped, text);
  auto rss_kb = [&] { return ResidentKb(mapped); };
  const long before = rss_kb();
  ASSERT_GE(before, 4000);  // mapped in full
  // Reading on right after the dropped part (as the parser does) does not
  // map it back: where the page cache holds the file in 2 MB folios (one
  // large write, as here, makes them on ext4 under Linux 6.x), a mapping
  // that maps them whole brought the dropped megabyte back with that read.
  const size_t one_mb = size_t{1} << 20;
  input->DropPagesBefore(one_mb);
  volatile char next = mapped[one_mb + 100];
  (void)next;
  EXPECT_LE(rss_kb(), before - 900);
  input->DropPagesBefore(text.size() - 4096);
  EXPECT_LE(rss_kb(), 8);
  input->DropPagesBefore(1000);  // nothing more to drop; nothing breaks
  EXPECT_EQ(input->text(), text);  // read back from the file
}

// Pages leave in batches of a 64th of the file (256 KB of this 16 MB one),
// each one madvise (one TLB flush); the rest once the end is reached.
TEST_F(FileIoTest, DroppedPagesLeaveInBatchesOfA64thOfTheFile) {
  std::string text;
  absl::StatusOr<InputBuffer> input = ReadLargeFile("batch.hlo", &text, size_t{16} << 20);
  ASSERT_TRUE(input.ok()) << input.status();
  const absl::string_view mapped = input->text();
  auto rss_kb = [&] { return ResidentKb(mapped); };
  const long before = rss_kb();
  ASSERT_GE(before, 16000);  // mapped in full
  input->DropPagesBefore(size_t{200} << 10);
  EXPECT_GE(rss_kb(), before - 4);  // not yet: less than a batch
  input->DropPagesBefore(size_t{300} << 10);
  EXPECT_LE(rss_kb(), before - 290);  // the whole batch, from the start
  input->DropPagesBefore(size_t{400} << 10);
  EXPECT_GE(rss_kb(), before - 310);
  input->DropPagesBefore(text.size() - (size_t{100} << 10));
  EXPECT_GE(rss_kb(), 100);
  input->DropPagesBefore(text.size());  // less than a batch, but the end
  EXPECT_LE(rss_kb(), 8);
  EXPECT_EQ(input->text(), text);

  // HILO_DROP_BATCH=0: every call drops.
  setenv("HILO_DROP_BATCH", "0", 1);
  absl::StatusOr<InputBuffer> unbatched = ReadInput(Path("batch.hlo"));
  unsetenv("HILO_DROP_BATCH");
  ASSERT_TRUE(unbatched.ok()) << unbatched.status();
  const long all = ResidentKb(unbatched->text());
  ASSERT_GE(all, 16000);
  unbatched->DropPagesBefore(size_t{200} << 10);
  EXPECT_LE(ResidentKb(unbatched->text()), all - 190);
}

// A batch is never 33 pages or fewer (each page invalidated on its own):
// at least 34 pages of a 4 MB file, not its 64th (64 KB).
TEST_F(FileIoTest, DroppedPagesOfASmallFileLeaveInBatchesOfMoreThan33Pages) {
  std::string text;
  absl::StatusOr<InputBuffer> input = ReadLargeFile("small.hlo", &text);
  ASSERT_TRUE(input.ok()) << input.status();
  const absl::string_view mapped = input->text();
  const long before = ResidentKb(mapped);
  ASSERT_GE(before, 4000);
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  input->DropPagesBefore(33 * page);
  EXPECT_GE(ResidentKb(mapped), before - 4);
  input->DropPagesBefore(34 * page);
  EXPECT_LE(ResidentKb(mapped), before - static_cast<long>(34 * page / 1024) + 4);
}

TEST_F(FileIoTest, PagesDroppedFromAnOffsetLeaveMemoryAndReadBackTheSame) {
  std::string text;
  absl::StatusOr<InputBuffer> input = ReadLargeFile("tail.pb", &text);
  ASSERT_TRUE(input.ok()) << input.status();
  const absl::string_view mapped = input->text();
  auto rss_kb = [&] { return ResidentKb(mapped); };
  const long before = rss_kb();
  ASSERT_GE(before, 4000);  // mapped in full
  input->DropPagesFrom(size_t{1} << 20);  // the last 3 MB
  EXPECT_LE(rss_kb(), before - 2900);
  input->DropPagesFrom(text.size() + 10);  // past the end: nothing breaks
  EXPECT_EQ(input->text(), text);         // read back from the file
}

TEST_F(FileIoTest, TextReadIntoMemoryIsNotDropped) {
  InputBuffer input(std::string(100000, 'x'));
  input.DropPagesBefore(90000);
  EXPECT_EQ(input.text(), std::string(100000, 'x'));
}

}  // namespace
}  // namespace hilo

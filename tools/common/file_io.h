// File helpers of the hilo tools: whole-file reads and atomic writes.
#ifndef HILO_TOOLS_COMMON_FILE_IO_H_
#define HILO_TOOLS_COMMON_FILE_IO_H_

#include <cstddef>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace hilo {

// The bytes of an input file. A non-empty regular file is mapped read-only
// (as LLVM's MemoryBuffer does): no copy, no zero-filled buffer, and the
// kernel maps the page cache's pages in bulk instead of faulting in a
// private copy page by page, which was about 5% of a large round trip.
// Standard input, pipes and empty files are read into memory. As with any
// mapped file, another process truncating the file while it is read is not
// supported.
class InputBuffer {
 public:
  InputBuffer() = default;
  explicit InputBuffer(std::string contents) : contents_(std::move(contents)) {}
  InputBuffer(InputBuffer&& other) noexcept;
  InputBuffer& operator=(InputBuffer&& other) noexcept;
  InputBuffer(const InputBuffer&) = delete;
  InputBuffer& operator=(const InputBuffer&) = delete;
  ~InputBuffer();

  absl::string_view text() const {
    return mapped_ != nullptr ? absl::string_view(mapped_, mapped_size_) : absl::string_view(contents_);
  }
  // The text before `offset` is not needed for now: a mapped file's whole
  // pages before it leave the process's memory (the mapping stays; they are
  // read back from the file if touched again). A parse then holds the input
  // and the module it makes at once only for the last megabyte or so.
  // Nothing happens for text read into memory (standard input).
  //
  // Pages leave in batches of at least a 64th of the file and at least 34
  // pages (all that is left once `offset` reaches the end): each batch is
  // one madvise, and each madvise flushes the TLB, a trap to the hypervisor
  // on a paravirtualized VM (the 82 MB `hilo-gen -L 20000` module: 590
  // flushes for the parser's 140 KB steps, 65 in batches; docs/performance.md,
  // "nineteenth session"). A batch of 33 pages or fewer costs one
  // invalidation per page instead (Linux's tlb_single_page_flush_ceiling on
  // x86), so callers best report in steps of more than 33 pages (the text
  // parser does; the binary proto decoder's 128 KB steps are batched by
  // two). HILO_DROP_BATCH=0 drops at every call.
  void DropPagesBefore(size_t offset);
  // The same for the whole pages from `offset` to the end (a binary proto's
  // fields after its last instruction, read once at the start).
  void DropPagesFrom(size_t offset);

 private:
  friend absl::StatusOr<InputBuffer> ReadInput(const std::string& path);
  void Unmap();

  const char* mapped_ = nullptr;  // the mapping, or nullptr
  size_t mapped_size_ = 0;
  size_t dropped_ = 0;  // DropPagesBefore: the pages before this offset
  size_t drop_batch_ = 0;  // DropPagesBefore drops at least this much at once
  std::string contents_;          // when not mapped
};

// The whole content of `path`, or of standard input when `path` is "-".
absl::StatusOr<InputBuffer> ReadInput(const std::string& path);

// A file written in pieces so that `path` is either left untouched or holds
// everything written: the data goes to a temporary file in the same
// directory, which Commit() renames over `path`. Without a successful
// Commit() (an error, or the writer destroyed early) the temporary file is
// removed. A symbolic link is followed (its target is replaced); a path that
// is not a regular file (/dev/null, a fifo) is written to directly, since
// there is nothing to replace atomically.
class AtomicFileWriter {
 public:
  AtomicFileWriter() = default;
  AtomicFileWriter(const AtomicFileWriter&) = delete;
  AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;
  ~AtomicFileWriter();

  absl::Status Open(const std::string& path);

  // True if nothing written to `path` this way can be seen before Commit():
  // `path` (after a symbolic link) is a regular file or does not exist yet,
  // so the text goes to a temporary file, or it is the null device. False
  // for a fifo, a terminal or any other device.
  static bool HidesWritesUntilCommit(const std::string& path);
  absl::Status Write(absl::string_view data);
  // The temporary file's descriptor, open for reading and writing (for a
  // writer that goes back to fill in what it wrote: a binary proto's
  // lengths, WriteBinaryModule), or -1 when `path` is written directly (a
  // device or fifo) or nothing is open. Writes through it are committed
  // as Write()'s are.
  int temporary_fd() const { return temp_.empty() ? -1 : fd_; }
  // Syncs, closes and renames the temporary file over the path.
  absl::Status Commit();

 private:
  void Abandon();

  int fd_ = -1;
  std::string requested_path_;  // as given, for messages
  std::string path_;            // after following a symbolic link
  std::string temp_;            // empty when writing to `path_` directly
};

// Writes `contents` to `path` atomically, as AtomicFileWriter.
absl::Status WriteFileAtomically(const std::string& path, absl::string_view contents);

// Writes `contents` to standard output and flushes it. A failure (a full
// disk, a closed pipe) is InvalidArgument, as a failed write to a file.
absl::Status WriteStdout(absl::string_view contents);

// OK if `path` ("-" is standard output) can be an output file as far as can
// be told before writing: it is not a folder, and its folder exists. Else
// InvalidArgument "cannot write '<path>': folder '<folder>' does not exist"
// (or "it is a folder", ...). Tools check their outputs with it before they
// do any work.
absl::Status CheckOutputPath(const std::string& path);

// True if the two output paths name the same file (the same path, or after
// resolving symbolic links and their folders; "-" only equals "-").
bool SameOutputFile(const std::string& a, const std::string& b);

}  // namespace hilo

#endif  // HILO_TOOLS_COMMON_FILE_IO_H_

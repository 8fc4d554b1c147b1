// File helpers of the hilo tools: whole-file reads and atomic writes.
#ifndef HILO_TOOLS_HILO_OPT_FILE_IO_H_
#define HILO_TOOLS_HILO_OPT_FILE_IO_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace hilo {

// The whole content of `path`, or of standard input when `path` is "-".
absl::StatusOr<std::string> ReadInput(const std::string& path);

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
  absl::Status Write(absl::string_view data);
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

// Writes `contents` to standard output and flushes it.
absl::Status WriteStdout(absl::string_view contents);

}  // namespace hilo

#endif  // HILO_TOOLS_HILO_OPT_FILE_IO_H_

// File helpers of the hilo tools: whole-file reads and atomic writes.
#ifndef HILO_TOOLS_HILO_OPT_FILE_IO_H_
#define HILO_TOOLS_HILO_OPT_FILE_IO_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace hilo {

// The whole content of `path`, or of standard input when `path` is "-".
absl::StatusOr<std::string> ReadInput(const std::string& path);

// Writes `contents` to `path` so that `path` is either left untouched or
// holds all of `contents`: the data goes to a temporary file in the same
// directory, which is renamed over `path` once complete. The temporary file
// is removed on any error. A symbolic link is followed (its target is
// replaced); a path that is not a regular file (/dev/null, a fifo) is
// written to directly, since there is nothing to replace atomically.
absl::Status WriteFileAtomically(const std::string& path, absl::string_view contents);

// Writes `contents` to standard output and flushes it.
absl::Status WriteStdout(absl::string_view contents);

}  // namespace hilo

#endif  // HILO_TOOLS_HILO_OPT_FILE_IO_H_

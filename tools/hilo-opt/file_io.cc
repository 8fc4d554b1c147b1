#include "file_io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"

namespace hilo {
namespace {

absl::Status ErrnoError(absl::string_view what, const std::string& path, int err) {
  return absl::InvalidArgumentError(absl::StrCat(what, " '", path, "': ", std::strerror(err)));
}

absl::Status ReadAll(int fd, const std::string& path, std::string* out) {
  struct stat st;
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
    out->reserve(static_cast<size_t>(st.st_size));
  }
  std::vector<char> buffer(1 << 20);
  while (true) {
    ssize_t n = read(fd, buffer.data(), buffer.size());
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoError("cannot read", path, errno);
    }
    out->append(buffer.data(), static_cast<size_t>(n));
  }
  return absl::OkStatus();
}

absl::Status WriteAll(int fd, absl::string_view contents, const std::string& path) {
  const char* data = contents.data();
  size_t left = contents.size();
  while (left > 0) {
    ssize_t n = write(fd, data, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoError("cannot write", path, errno);
    }
    data += n;
    left -= static_cast<size_t>(n);
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::string> ReadInput(const std::string& path) {
  std::string contents;
  if (path == "-") {
    absl::Status status = ReadAll(STDIN_FILENO, "<stdin>", &contents);
    if (!status.ok()) return status;
    return contents;
  }
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoError("cannot open", path, errno);
  struct stat st;
  if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
    close(fd);
    return ErrnoError("cannot read", path, EISDIR);
  }
  absl::Status status = ReadAll(fd, path, &contents);
  close(fd);
  if (!status.ok()) return status;
  return contents;
}

absl::Status WriteFileAtomically(const std::string& requested_path, absl::string_view contents) {
  std::string path = requested_path;
  struct stat st;
  if (lstat(path.c_str(), &st) == 0 && S_ISLNK(st.st_mode)) {
    // Replace what the link points to, not the link itself.
    char* resolved = realpath(path.c_str(), nullptr);
    if (resolved != nullptr) {
      path = resolved;
      free(resolved);
    }
  }
  if (stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
    // /dev/null, a fifo, a terminal: there is nothing to replace
    // atomically (and renaming over a device would be wrong); write to it.
    if (S_ISDIR(st.st_mode)) return ErrnoError("cannot write", requested_path, EISDIR);
    int fd = open(path.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
    if (fd < 0) return ErrnoError("cannot open", requested_path, errno);
    absl::Status status = WriteAll(fd, contents, requested_path);
    if (close(fd) != 0 && status.ok()) status = ErrnoError("cannot write", requested_path, errno);
    return status;
  }
  std::string dir = ".";
  size_t slash = path.rfind('/');
  if (slash != std::string::npos) dir = slash == 0 ? "/" : path.substr(0, slash);
  std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  std::string temp = absl::StrCat(dir, "/.", base, ".tmp.XXXXXX");
  std::vector<char> temp_buffer(temp.begin(), temp.end());
  temp_buffer.push_back('\0');
  int fd = mkstemp(temp_buffer.data());
  if (fd < 0) return ErrnoError("cannot create a temporary file in", dir, errno);
  temp.assign(temp_buffer.data());

  // mkstemp creates the file 0600; give it the mode a plain create would.
  mode_t mask = umask(0);
  umask(mask);
  fchmod(fd, 0666 & ~mask);

  absl::Status status = WriteAll(fd, contents, temp);
  if (status.ok() && fsync(fd) != 0) status = ErrnoError("cannot write", temp, errno);
  if (close(fd) != 0 && status.ok()) status = ErrnoError("cannot write", temp, errno);
  if (status.ok() && rename(temp.c_str(), path.c_str()) != 0) {
    status = ErrnoError("cannot write", path, errno);
  }
  if (!status.ok()) unlink(temp.c_str());
  return status;
}

absl::Status WriteStdout(absl::string_view contents) {
  if (!contents.empty() && std::fwrite(contents.data(), 1, contents.size(), stdout) != contents.size()) {
    return absl::InternalError("cannot write to standard output");
  }
  if (std::fflush(stdout) != 0) return absl::InternalError("cannot write to standard output");
  return absl::OkStatus();
}

}  // namespace hilo

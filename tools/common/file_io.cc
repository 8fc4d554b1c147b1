#include "file_io.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "hilo/ir/env_switch.h"

namespace hilo {
namespace {

absl::Status ErrnoError(absl::string_view what, const std::string& path, int err) {
  return absl::InvalidArgumentError(absl::StrCat(what, " '", path, "': ", std::strerror(err)));
}

absl::Status ReadAll(int fd, const std::string& path, std::string* out) {
  struct stat st;
  if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
    // A regular file is read straight into the string (no second copy of a
    // large module); anything after the size fstat gave is read below.
    const size_t expected = static_cast<size_t>(st.st_size);
    out->resize(expected);
    size_t filled = 0;
    while (filled < expected) {
      ssize_t n = read(fd, out->data() + filled, expected - filled);
      if (n == 0) break;
      if (n < 0) {
        if (errno == EINTR) continue;
        return ErrnoError("cannot read", path, errno);
      }
      filled += static_cast<size_t>(n);
    }
    out->resize(filled);
    if (filled < expected) return absl::OkStatus();
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

InputBuffer::InputBuffer(InputBuffer&& other) noexcept
    : mapped_(std::exchange(other.mapped_, nullptr)),
      mapped_size_(std::exchange(other.mapped_size_, 0)),
      dropped_(std::exchange(other.dropped_, 0)),
      drop_batch_(std::exchange(other.drop_batch_, 0)),
      contents_(std::move(other.contents_)) {}

InputBuffer& InputBuffer::operator=(InputBuffer&& other) noexcept {
  if (this != &other) {
    Unmap();
    mapped_ = std::exchange(other.mapped_, nullptr);
    mapped_size_ = std::exchange(other.mapped_size_, 0);
    dropped_ = std::exchange(other.dropped_, 0);
    drop_batch_ = std::exchange(other.drop_batch_, 0);
    contents_ = std::move(other.contents_);
  }
  return *this;
}

InputBuffer::~InputBuffer() { Unmap(); }

void InputBuffer::Unmap() {
  if (mapped_ != nullptr) munmap(const_cast<char*>(mapped_), mapped_size_);
  mapped_ = nullptr;
  mapped_size_ = 0;
  dropped_ = 0;
  drop_batch_ = 0;
}

void InputBuffer::DropPagesBefore(size_t offset) {
  if (mapped_ == nullptr) return;
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const size_t end = std::min(offset, mapped_size_) / page * page;  // the mapping is page aligned
  if (end <= dropped_ || (offset < mapped_size_ && end - dropped_ < drop_batch_)) return;
  // Never written (PROT_READ), so dropping them loses nothing.
  if (madvise(const_cast<char*>(mapped_) + dropped_, end - dropped_, MADV_DONTNEED) == 0) {
    dropped_ = end;
  }
}

void InputBuffer::DropPagesFrom(size_t offset) {
  if (mapped_ == nullptr) return;
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const size_t begin = (std::min(offset, mapped_size_) + page - 1) / page * page;
  if (begin >= mapped_size_) return;
  madvise(const_cast<char*>(mapped_) + begin, mapped_size_ - begin, MADV_DONTNEED);
}

absl::StatusOr<InputBuffer> ReadInput(const std::string& path) {
  std::string contents;
  if (path == "-") {
    absl::Status status = ReadAll(STDIN_FILENO, "<stdin>", &contents);
    if (!status.ok()) return status;
    return InputBuffer(std::move(contents));
  }
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoError("cannot open", path, errno);
  struct stat st;
  if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
    close(fd);
    return ErrnoError("cannot read", path, EISDIR);
  }
  if (S_ISREG(st.st_mode) && st.st_size > 0) {
    const size_t size = static_cast<size_t>(st.st_size);
    void* mapped = mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (mapped != MAP_FAILED) {
      close(fd);
      // Mapped in small pages, then all at once. Where the page cache holds
      // the file in 2 MB folios (ext4 on Linux 6.x), the kernel otherwise
      // maps them whole (FilePmdMapped): dropping 1 MB of one unmaps all of
      // it, and the parser's next read maps the whole 2 MB back, so
      // DropPagesBefore saved nothing (L1700: the whole 6.7 MB input still
      // mapped when printing). MADV_POPULATE_READ (Linux 5.14) maps every
      // page now, as MAP_POPULATE did; an older kernel faults them in.
      madvise(mapped, size, MADV_NOHUGEPAGE);
      madvise(mapped, size, MADV_POPULATE_READ);
      InputBuffer buffer;
      buffer.mapped_ = static_cast<const char*>(mapped);
      buffer.mapped_size_ = size;
      // More than 33 pages also for a small file (file_io.h).
      const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
      if (!EnvSwitchIsZero("HILO_DROP_BATCH")) buffer.drop_batch_ = std::max(34 * page, size / 64);
      return buffer;
    }
    // Not mappable (some special file systems): read it instead.
  }
  absl::Status status = ReadAll(fd, path, &contents);
  close(fd);
  if (!status.ok()) return status;
  return InputBuffer(std::move(contents));
}

AtomicFileWriter::~AtomicFileWriter() { Abandon(); }

void AtomicFileWriter::Abandon() {
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
  if (!temp_.empty()) unlink(temp_.c_str());
  temp_.clear();
}

absl::Status AtomicFileWriter::Open(const std::string& requested_path) {
  Abandon();
  requested_path_ = requested_path;
  path_ = requested_path;
  struct stat st;
  if (lstat(path_.c_str(), &st) == 0 && S_ISLNK(st.st_mode)) {
    // Replace what the link points to, not the link itself.
    char* resolved = realpath(path_.c_str(), nullptr);
    if (resolved != nullptr) {
      path_ = resolved;
      free(resolved);
    }
  }
  if (stat(path_.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
    // /dev/null, a fifo, a terminal: there is nothing to replace
    // atomically (and renaming over a device would be wrong); write to it.
    if (S_ISDIR(st.st_mode)) return ErrnoError("cannot write", requested_path_, EISDIR);
    fd_ = open(path_.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC);
    if (fd_ < 0) return ErrnoError("cannot open", requested_path_, errno);
    return absl::OkStatus();
  }
  std::string dir = ".";
  size_t slash = path_.rfind('/');
  if (slash != std::string::npos) dir = slash == 0 ? "/" : path_.substr(0, slash);
  std::string base = slash == std::string::npos ? path_ : path_.substr(slash + 1);
  std::string temp = absl::StrCat(dir, "/.", base, ".tmp.XXXXXX");
  std::vector<char> temp_buffer(temp.begin(), temp.end());
  temp_buffer.push_back('\0');
  fd_ = mkstemp(temp_buffer.data());
  if (fd_ < 0) {
    // Name the path the user gave, not the temporary file.
    if (errno == ENOENT || errno == ENOTDIR) return CheckOutputPath(requested_path_);
    return absl::InvalidArgumentError(absl::StrCat("cannot write '", requested_path_,
                                                   "': cannot create a file in '", dir,
                                                   "': ", std::strerror(errno)));
  }
  temp_.assign(temp_buffer.data());

  // mkstemp creates the file 0600; give it the mode a plain create would.
  mode_t mask = umask(0);
  umask(mask);
  fchmod(fd_, 0666 & ~mask);
  return absl::OkStatus();
}

bool AtomicFileWriter::HidesWritesUntilCommit(const std::string& path) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) return errno == ENOENT;  // created as a temporary file
  if (S_ISREG(st.st_mode)) return true;
  // The null device (Linux: character device 1, 3) discards everything.
  return S_ISCHR(st.st_mode) && major(st.st_rdev) == 1 && minor(st.st_rdev) == 3;
}

absl::Status AtomicFileWriter::Write(absl::string_view data) {
  if (fd_ < 0) return absl::FailedPreconditionError("AtomicFileWriter: not open");
  // Messages name the path the user gave, not the temporary file.
  absl::Status status = WriteAll(fd_, data, requested_path_);
  if (!status.ok()) Abandon();
  return status;
}

absl::Status AtomicFileWriter::Commit() {
  if (fd_ < 0) return absl::FailedPreconditionError("AtomicFileWriter: not open");
  absl::Status status;
  if (!temp_.empty() && fsync(fd_) != 0) status = ErrnoError("cannot write", requested_path_, errno);
  if (close(fd_) != 0 && status.ok()) status = ErrnoError("cannot write", requested_path_, errno);
  fd_ = -1;
  if (status.ok() && !temp_.empty() && rename(temp_.c_str(), path_.c_str()) != 0) {
    status = ErrnoError("cannot write", requested_path_, errno);
  }
  if (status.ok()) temp_.clear();  // renamed: nothing to remove
  Abandon();
  return status;
}

absl::Status WriteFileAtomically(const std::string& path, absl::string_view contents) {
  AtomicFileWriter file;
  absl::Status status = file.Open(path);
  if (status.ok()) status = file.Write(contents);
  if (status.ok()) status = file.Commit();
  return status;
}

absl::Status WriteStdout(absl::string_view contents) {
  // A full disk or a closed pipe is the environment's doing, not a bug in
  // the tool: the same status (exit 1) as a failed write to a file.
  auto error = [] {
    return absl::InvalidArgumentError(absl::StrCat("cannot write to standard output: ", std::strerror(errno)));
  };
  if (!contents.empty() && std::fwrite(contents.data(), 1, contents.size(), stdout) != contents.size()) {
    return error();
  }
  if (std::fflush(stdout) != 0) return error();
  return absl::OkStatus();
}

namespace {

// The folder `path` would be created in ("." for a bare name).
std::string FolderOf(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

// `path` with its folder resolved (symbolic links, "..", "."), or `path`
// itself when the folder does not exist.
std::string Canonical(const std::string& path) {
  if (char* resolved = realpath(path.c_str(), nullptr)) {
    std::string result = resolved;
    free(resolved);
    return result;
  }
  const size_t slash = path.rfind('/');
  const std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  char* folder = realpath(FolderOf(path).c_str(), nullptr);
  if (folder == nullptr) return path;
  std::string result = absl::StrCat(folder, "/", base);
  free(folder);
  return result;
}

}  // namespace

absl::Status CheckOutputPath(const std::string& path) {
  if (path == "-") return absl::OkStatus();
  auto cannot = [&path](absl::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat("cannot write '", path, "': ", why));
  };
  if (path.empty()) return cannot("the path is empty");
  struct stat st;
  if (stat(path.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) return cannot("it is a folder");
    return absl::OkStatus();
  }
  const std::string folder = FolderOf(path);
  if (stat(folder.c_str(), &st) != 0) {
    return cannot(absl::StrCat("folder '", folder, "' does not exist"));
  }
  if (!S_ISDIR(st.st_mode)) return cannot(absl::StrCat("'", folder, "' is not a folder"));
  return absl::OkStatus();
}

bool SameOutputFile(const std::string& a, const std::string& b) {
  if (a == "-" || b == "-") return a == b;
  struct stat sa, sb;
  if (stat(a.c_str(), &sa) == 0 && stat(b.c_str(), &sb) == 0) {
    return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
  }
  return Canonical(a) == Canonical(b);
}

}  // namespace hilo

#include "hilo/proto/wire_writer.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "google/protobuf/io/coded_stream.h"
#include "hilo/ir/env_switch.h"

namespace hilo {

using google::protobuf::io::CodedOutputStream;

WireWriter::WireWriter(int fd, std::string display, size_t flush_bytes)
    : fd_(fd),
      display_(std::move(display)),
      flush_bytes_(std::max<size_t>(flush_bytes, 1)),
      bounded_(!EnvSwitchIsZero("HILO_PROTO_BOUNDED_BUFFER")) {
  buffer_.reserve(flush_bytes_ + 4096);
}

absl::StatusOr<bool> WireWriter::Room(size_t n) {
  if (fd_ < 0 || !bounded_ || buffer_.size() + n <= buffer_.capacity()) return true;
  if (absl::Status s = Flush(); !s.ok()) return s;
  return n <= buffer_.capacity();
}

absl::Status WireWriter::Append(absl::string_view bytes) {
  absl::StatusOr<bool> fits = Room(bytes.size());
  if (!fits.ok()) return fits.status();
  if (*fits) {
    buffer_.append(bytes.data(), bytes.size());
    return absl::OkStatus();
  }
  // The buffer is empty (Room wrote it out): the bytes follow in the file.
  if (absl::Status s = WriteAt(flushed_, bytes); !s.ok()) return s;
  flushed_ += bytes.size();
  return absl::OkStatus();
}

absl::Status WireWriter::Failed(absl::string_view what, int error) {
  return absl::InvalidArgumentError(
      absl::StrCat("cannot write '", display_, "': ", what, ": ", std::strerror(error)));
}

void WireWriter::Begin(int field, uint64_t length_guess) {
  uint8_t tag[5];
  const uint8_t* end = CodedOutputStream::WriteVarint32ToArray((static_cast<uint32_t>(field) << 3) | 2, tag);
  buffer_.append(reinterpret_cast<const char*>(tag), static_cast<size_t>(end - tag));
  const int room = static_cast<int>(CodedOutputStream::VarintSize64(length_guess));
  open_.push_back({size(), room});
  buffer_.append(static_cast<size_t>(room), '\0');
}

absl::Status WireWriter::End() {
  const Open open = open_.back();
  open_.pop_back();
  const uint64_t payload_at = open.length_at + static_cast<uint64_t>(open.room);
  const uint64_t length = size() - payload_at;
  const int needed = static_cast<int>(CodedOutputStream::VarintSize64(length));
  if (needed != open.room) {
    ++moves_;
    if (absl::Status s = MoveTail(payload_at, needed - open.room); !s.ok()) return s;
  }
  uint8_t bytes[10];
  const uint8_t* end = CodedOutputStream::WriteVarint64ToArray(length, bytes);
  return Patch(open.length_at,
               absl::string_view(reinterpret_cast<const char*>(bytes), static_cast<size_t>(end - bytes)));
}

absl::Status WireWriter::WriteAt(uint64_t offset, absl::string_view bytes) {
  for (size_t done = 0; done < bytes.size();) {
    const ssize_t n = pwrite(fd_, bytes.data() + done, bytes.size() - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return Failed("write", n < 0 ? errno : EIO);
    done += static_cast<size_t>(n);
  }
  return absl::OkStatus();
}

absl::Status WireWriter::ReadAt(uint64_t offset, size_t n, char* out) {
  for (size_t done = 0; done < n;) {
    const ssize_t r = pread(fd_, out + done, n - done, static_cast<off_t>(offset + done));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return Failed("read back", r < 0 ? errno : EIO);
    done += static_cast<size_t>(r);
  }
  return absl::OkStatus();
}

absl::Status WireWriter::Flush() {
  if (absl::Status s = WriteAt(flushed_, buffer_); !s.ok()) return s;
  flushed_ += buffer_.size();
  buffer_.clear();
  return absl::OkStatus();
}

absl::Status WireWriter::Finish() { return fd_ >= 0 ? Flush() : absl::OkStatus(); }

absl::Status WireWriter::MoveTail(uint64_t from, int delta) {
  // Still in the buffer (the bytes it takes over included): in memory.
  const bool in_buffer = delta > 0 ? from >= flushed_ : from - static_cast<uint64_t>(-delta) >= flushed_;
  if (in_buffer) {
    const size_t at = static_cast<size_t>(from - flushed_);
    if (delta > 0) {
      buffer_.insert(at, static_cast<size_t>(delta), '\0');
    } else {
      buffer_.erase(at - static_cast<size_t>(-delta), static_cast<size_t>(-delta));
    }
    return absl::OkStatus();
  }
  // In the file: everything written out, then moved in pieces (to the
  // left front to back, to the right back to front: no piece overwrites
  // bytes not yet moved).
  ++file_moves_;
  if (absl::Status s = Flush(); !s.ok()) return s;
  const uint64_t end = flushed_;
  const uint64_t piece = std::max<uint64_t>(flush_bytes_, 1 << 16);
  std::string chunk(static_cast<size_t>(std::min<uint64_t>(piece, end - from)), '\0');
  auto move = [&](uint64_t at, size_t n) -> absl::Status {
    if (absl::Status s = ReadAt(at, n, chunk.data()); !s.ok()) return s;
    return WriteAt(at + static_cast<uint64_t>(static_cast<int64_t>(delta)), absl::string_view(chunk.data(), n));
  };
  if (delta < 0) {
    for (uint64_t at = from; at < end; at += chunk.size()) {
      if (absl::Status s = move(at, static_cast<size_t>(std::min<uint64_t>(chunk.size(), end - at))); !s.ok()) {
        return s;
      }
    }
    if (ftruncate(fd_, static_cast<off_t>(end - static_cast<uint64_t>(-delta))) != 0) {
      return Failed("truncate", errno);
    }
    flushed_ = end - static_cast<uint64_t>(-delta);
  } else {
    for (uint64_t stop = end; stop > from;) {
      const uint64_t at = stop - std::min<uint64_t>(chunk.size(), stop - from);
      if (absl::Status s = move(at, static_cast<size_t>(stop - at)); !s.ok()) return s;
      stop = at;
    }
    flushed_ = end + static_cast<uint64_t>(delta);
  }
  return absl::OkStatus();
}

absl::Status WireWriter::Patch(uint64_t offset, absl::string_view bytes) {
  size_t in_file = 0;
  if (offset < flushed_) {
    in_file = static_cast<size_t>(std::min<uint64_t>(bytes.size(), flushed_ - offset));
    if (absl::Status s = WriteAt(offset, bytes.substr(0, in_file)); !s.ok()) return s;
  }
  if (in_file < bytes.size()) {
    std::memcpy(buffer_.data() + (offset + in_file - flushed_), bytes.data() + in_file, bytes.size() - in_file);
  }
  return absl::OkStatus();
}

}  // namespace hilo

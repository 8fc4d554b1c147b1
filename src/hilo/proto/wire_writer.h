// Protobuf's binary wire format written in order, to memory or streamed to
// a file, with length-delimited fields whose length is known only once
// their payload was written (docs/proto-format.md "Writing").
//
// A length-delimited field's length comes before its payload, and the
// payload of a module's entry computation is nearly the whole file: to
// write it before knowing its length, Begin() leaves room for the length
// a payload of the expected size has, and End() writes the length there.
// When the guess was wrong (the length needs more or fewer bytes), the
// payload is moved, in memory or inside the file, so the bytes are always
// exactly protobuf's. Written to a file, at most about `flush_bytes` of the
// output is in memory at once (the 300k-instruction generated module's
// round trip held its 34 MB output whole before: docs/performance.md).
#ifndef HILO_PROTO_WIRE_WRITER_H_
#define HILO_PROTO_WIRE_WRITER_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace hilo {

class WireWriter {
 public:
  static constexpr size_t kDefaultFlushBytes = size_t{1} << 20;

  // In memory: every byte stays in buffer() (TakeBytes()).
  WireWriter() = default;
  // To `fd`: an empty regular file open for reading and writing (written
  // with pwrite from offset 0, read back with pread when a payload moves).
  // `display` names it in errors ("cannot write '<display>': ...").
  WireWriter(int fd, std::string display, size_t flush_bytes = kDefaultFlushBytes);
  WireWriter(const WireWriter&) = delete;
  WireWriter& operator=(const WireWriter&) = delete;

  // Append the bytes here (then MaybeFlush()).
  std::string& buffer() { return buffer_; }
  // Writing to a file: hands the buffer to it once it holds flush_bytes.
  absl::Status MaybeFlush() {
    return fd_ >= 0 && buffer_.size() >= flush_bytes_ ? Flush() : absl::OkStatus();
  }
  // Whether `n` more bytes fit in the buffer without growing it. Writing to
  // a file, what the buffer holds is written out first when they would not
  // fit; false then means that they are more than the buffer holds (write
  // them with Append). In memory, always true: the buffer is the output.
  // HILO_PROTO_BOUNDED_BUFFER=0: always true (the buffer grows to take
  // large pieces, as it did; the 300k-instruction module's program shapes
  // and module fields grew it to 4 MB, docs/performance.md "thirteenth
  // session: proto memory").
  absl::StatusOr<bool> Room(size_t n);
  // Appends `bytes`: to the buffer when Room() says they fit, else
  // straight to the file after the buffer's contents.
  absl::Status Append(absl::string_view bytes);
  // Starts length-delimited field `field`: its tag, and room for the
  // length of a `length_guess`-byte payload. Its payload is everything
  // appended until the matching End(); fields nest.
  void Begin(int field, uint64_t length_guess);
  // Ends the innermost field begun: its length written in the room left,
  // the payload moved first when that length needs more or less room.
  absl::Status End();
  // Writes out what is buffered (to a file; nothing in memory).
  absl::Status Finish();
  // The bytes written so far (in memory: all of them).
  std::string TakeBytes() { return std::move(buffer_); }

  uint64_t size() const { return flushed_ + buffer_.size(); }
  // How many payloads had to be moved (a guess that was wrong), and how many
  // of those were moved inside the file (tests, docs/performance.md).
  int moves() const { return moves_; }
  int file_moves() const { return file_moves_; }

 private:
  struct Open {
    uint64_t length_at;  // where the length's room starts
    int room;            // its bytes
  };
  absl::Status Flush();
  // Moves the bytes from `from` to the end by `delta` (either way).
  absl::Status MoveTail(uint64_t from, int delta);
  // Overwrites the bytes at `offset` (in the file or the buffer).
  absl::Status Patch(uint64_t offset, absl::string_view bytes);
  absl::Status WriteAt(uint64_t offset, absl::string_view bytes);
  absl::Status ReadAt(uint64_t offset, size_t n, char* out);
  absl::Status Failed(absl::string_view what, int error);

  int fd_ = -1;
  std::string display_;
  size_t flush_bytes_ = kDefaultFlushBytes;
  uint64_t flushed_ = 0;  // bytes in the file; buffer_ starts there
  std::string buffer_;
  std::vector<Open> open_;
  bool bounded_ = true;  // HILO_PROTO_BOUNDED_BUFFER
  int moves_ = 0, file_moves_ = 0;
};

}  // namespace hilo

#endif  // HILO_PROTO_WIRE_WRITER_H_

// CompactString: a string that costs one pointer when empty.
//
// For texts an instruction keeps verbatim that are absent on most
// instructions and long when present (`metadata={...}`): one heap block
// holds the length and the bytes, so the member is 8 bytes instead of a
// std::string's 32, and a present text still takes a single allocation.
#ifndef HILO_IR_COMPACT_STRING_H_
#define HILO_IR_COMPACT_STRING_H_

#include <cstddef>
#include <cstring>
#include <utility>

#include "absl/strings/string_view.h"

namespace hilo {

class CompactString {
 public:
  CompactString() = default;
  explicit CompactString(absl::string_view text) { Assign(text); }
  CompactString(const CompactString& other) { Assign(other.view()); }
  CompactString(CompactString&& other) noexcept : block_(std::exchange(other.block_, nullptr)) {}
  CompactString& operator=(const CompactString& other) {
    if (this != &other) Assign(other.view());
    return *this;
  }
  CompactString& operator=(CompactString&& other) noexcept {
    if (this != &other) {
      delete[] block_;
      block_ = std::exchange(other.block_, nullptr);
    }
    return *this;
  }
  CompactString& operator=(absl::string_view text) {
    Assign(text);
    return *this;
  }
  ~CompactString() { delete[] block_; }

  bool empty() const { return block_ == nullptr; }
  absl::string_view view() const {
    if (block_ == nullptr) return absl::string_view();
    size_t size;
    std::memcpy(&size, block_, sizeof(size));
    return absl::string_view(block_ + sizeof(size), size);
  }
  // Replaces the text (an empty text frees the block).
  void Assign(absl::string_view text) {
    char* block = nullptr;
    if (!text.empty()) {
      const size_t size = text.size();
      block = new char[sizeof(size) + size];
      std::memcpy(block, &size, sizeof(size));
      std::memcpy(block + sizeof(size), text.data(), size);
    }
    delete[] block_;
    block_ = block;
  }

 private:
  char* block_ = nullptr;  // the size, then the bytes; nullptr when empty
};

}  // namespace hilo

#endif  // HILO_IR_COMPACT_STRING_H_

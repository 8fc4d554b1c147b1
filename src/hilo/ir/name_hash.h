// HashName: the hash of a name, that of the module's name indexes
// (instruction_name_index.h, computation_name_index.h).
#ifndef HILO_IR_NAME_HASH_H_
#define HILO_IR_NAME_HASH_H_

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "absl/strings/string_view.h"

namespace hilo {

// The hash of an instruction name. Names are short (`add.12`,
// `reduce_sum.43166`, `dot_general.1234.clone.2`): they are read eight
// bytes at a time and mixed inline, where absl::Hash called out to its
// large-input hash for names over 16 bytes (about half of a large module's
// names; hashing was 3.5% of a parse). The seed is the address of a static
// (ASLR), as absl's is, so that a crafted module can not count on colliding
// names.
inline uint64_t MixNameWord(uint64_t h, uint64_t word) {
  h = (h ^ word) * 0x9E3779B97F4A7C15ull;
  return h ^ (h >> 29);
}

inline size_t HashName(absl::string_view name) {
  static const char seed_anchor = 0;
  const char* p = name.data();
  size_t n = name.size();
  uint64_t h = reinterpret_cast<uintptr_t>(&seed_anchor) ^ (n * 0xC2B2AE3D27D4EB4Full);
  if (n >= 8) {
    uint64_t word;
    for (; n > 8; p += 8, n -= 8) {
      std::memcpy(&word, p, 8);
      h = MixNameWord(h, word);
    }
    // The last (possibly overlapping) eight bytes.
    std::memcpy(&word, p + n - 8, 8);
    h = MixNameWord(h, word);
  } else if (n >= 4) {
    uint32_t first;
    uint32_t last;
    std::memcpy(&first, p, 4);
    std::memcpy(&last, p + n - 4, 4);
    h = MixNameWord(h, (uint64_t{first} << 32) | last);
  } else if (n > 0) {
    const uint64_t word = (uint64_t{static_cast<unsigned char>(p[0])} << 16) |
                          (uint64_t{static_cast<unsigned char>(p[n / 2])} << 8) |
                          static_cast<unsigned char>(p[n - 1]);
    h = MixNameWord(h, word);
  }
  // A final avalanche: the set takes its 7-bit tags from the low bits and
  // its positions from the high ones.
  h ^= h >> 32;
  h *= 0xD6E8FEB86659FD93ull;
  return static_cast<size_t>(h ^ (h >> 32));
}

}  // namespace hilo

#endif  // HILO_IR_NAME_HASH_H_

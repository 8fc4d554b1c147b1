#include "hilo/text/input_check.h"

#include <cstdint>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace hilo {
namespace {

// Index of the first byte at or after `i` that is a NUL or not ASCII (or
// text.size()), adding the newlines before it to *lines. Eight bytes at a
// time: this sweep reads the whole input, so a byte loop here cost as much
// as a tenth of a round trip.
size_t SkipPlainAscii(absl::string_view text, size_t i, size_t* lines) {
  constexpr uint64_t kOnes = 0x0101010101010101ull;
  constexpr uint64_t kHighBits = 0x8080808080808080ull;
  constexpr uint64_t kLow7 = 0x7F7F7F7F7F7F7F7Full;
  const char* data = text.data();
  const size_t n = text.size();
#if defined(__SSE2__)
  // Sixteen bytes at a time first (SSE2 is part of x86-64); the word loop
  // below finishes the tail and finds the exact stop.
  // Newlines add up per byte lane (a match is -1, subtracted), and the lanes
  // are summed (psadbw) before any can pass 255: x86-64's baseline has no
  // popcnt instruction, and the libgcc call was 1.5% of a round trip.
  const __m128i zero = _mm_setzero_si128();
  const __m128i newline = _mm_set1_epi8('\n');
  __m128i lane_newlines = zero;
  int blocks = 0;
  auto flush_blocks = [&] {
    const __m128i sums = _mm_sad_epu8(lane_newlines, zero);
    *lines += static_cast<size_t>(_mm_cvtsi128_si64(sums)) +
              static_cast<size_t>(_mm_cvtsi128_si64(_mm_unpackhi_epi64(sums, sums)));
    lane_newlines = zero;
    blocks = 0;
  };
  // Thirty-two bytes a step while nothing stops the sweep (half the loop's
  // own instructions per byte); the sixteen-byte loop finds where it stops.
  while (i + 32 <= n) {
    const __m128i v0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(data + i));
    const __m128i v1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(data + i + 16));
    const __m128i stop = _mm_or_si128(_mm_or_si128(v0, _mm_cmpeq_epi8(v0, zero)),
                                      _mm_or_si128(v1, _mm_cmpeq_epi8(v1, zero)));
    if (_mm_movemask_epi8(stop) != 0) break;
    lane_newlines = _mm_sub_epi8(_mm_sub_epi8(lane_newlines, _mm_cmpeq_epi8(v0, newline)),
                                 _mm_cmpeq_epi8(v1, newline));
    i += 32;
    if ((blocks += 2) >= 254) flush_blocks();
  }
  while (i + 16 <= n) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(data + i));
    // A lane's high bit: a non-ASCII byte, or (after the or) a NUL.
    if (_mm_movemask_epi8(_mm_or_si128(v, _mm_cmpeq_epi8(v, zero))) != 0) break;
    lane_newlines = _mm_sub_epi8(lane_newlines, _mm_cmpeq_epi8(v, newline));
    i += 16;
    if (++blocks >= 255) flush_blocks();
  }
  flush_blocks();
#endif
  // Newline flags add up per byte lane; a lane gains at most one per word,
  // so lanes are summed before 255 words.
  uint64_t lane_counts = 0;
  int words = 0;
  auto flush = [&] {
    uint64_t pairs = (lane_counts & 0x00FF00FF00FF00FFull) + ((lane_counts >> 8) & 0x00FF00FF00FF00FFull);
    *lines += (pairs * 0x0001000100010001ull) >> 48;
    lane_counts = 0;
    words = 0;
  };
  while (i + 8 <= n) {
    uint64_t w;
    std::memcpy(&w, data + i, 8);
    const bool has_zero = ((w - kOnes) & ~w & kHighBits) != 0;
    if ((w & kHighBits) != 0 || has_zero) break;
    // Bytes of w are ASCII here, so a lane of x is zero exactly where w
    // holds '\n', and (x & kLow7) + kLow7 sets a lane's high bit iff the
    // lane is not zero.
    const uint64_t x = w ^ (kOnes * '\n');
    const uint64_t nonzero = ((x & kLow7) + kLow7) | x;
    lane_counts += (~nonzero & kHighBits) >> 7;
    if (++words == 255) flush();
    i += 8;
  }
  flush();
  for (; i < n; ++i) {
    unsigned char c = static_cast<unsigned char>(data[i]);
    if (c == 0 || c >= 0x80) break;
    *lines += c == '\n';
  }
  return i;
}

}  // namespace

InputCheck CheckInput(absl::string_view text) {
  InputCheck check;
  for (size_t i = 0; i < text.size();) {
    i = SkipPlainAscii(text, i, &check.lines);
    if (i >= text.size()) break;
    unsigned char c = static_cast<unsigned char>(text[i]);
    if (c == 0) {
      check.problem = "NUL byte in input";
      check.problem_offset = i;
      return check;
    }
    int len = (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 0;
    bool valid = len != 0 && c != 0xC0 && c != 0xC1 && c <= 0xF4 && i + len <= text.size();
    for (int k = 1; valid && k < len; ++k) {
      valid = (static_cast<unsigned char>(text[i + k]) & 0xC0) == 0x80;
    }
    if (!valid) {
      check.problem = "invalid UTF-8 in input";
      check.problem_offset = i;
      return check;
    }
    i += len;
  }
  return check;
}

size_t CountSpacedEquals(absl::string_view text) {
  const char* data = text.data();
  const size_t n = text.size();
  size_t count = 0;
  size_t i = 0;
#if defined(__SSE2__)
  // A lane is -1 where the block holds a space and the next byte is '='
  // (so one byte past the block must be there); lanes add up in bytes and
  // are summed (psadbw) before any can pass 255.
  const __m128i zero = _mm_setzero_si128();
  const __m128i space = _mm_set1_epi8(' ');
  const __m128i equals = _mm_set1_epi8('=');
  while (i + 17 <= n) {
    __m128i lanes = zero;
    for (int block = 0; block < 255 && i + 17 <= n; ++block, i += 16) {
      const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(data + i));
      const __m128i next = _mm_loadu_si128(reinterpret_cast<const __m128i*>(data + i + 1));
      lanes = _mm_sub_epi8(lanes, _mm_and_si128(_mm_cmpeq_epi8(v, space), _mm_cmpeq_epi8(next, equals)));
    }
    const __m128i sums = _mm_sad_epu8(lanes, zero);
    count += static_cast<size_t>(_mm_cvtsi128_si64(sums)) +
             static_cast<size_t>(_mm_cvtsi128_si64(_mm_unpackhi_epi64(sums, sums)));
  }
#endif
  for (; i + 1 < n; ++i) count += data[i] == ' ' && data[i + 1] == '=';
  return count;
}

}  // namespace hilo

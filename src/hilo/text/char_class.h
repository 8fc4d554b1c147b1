// Character classes of the HLO text format, and the identifier scan the
// parser runs on most of its input.
#ifndef HILO_TEXT_CHAR_CLASS_H_
#define HILO_TEXT_CHAR_CLASS_H_

#include <array>
#include <cstddef>
#include <cstdint>

#include "absl/strings/string_view.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace hilo {

// By table: the lexer asks for every byte of the input.
inline constexpr uint8_t kIdentClass = 1, kSpaceClass = 2, kBracketClass = 3;
inline constexpr std::array<uint8_t, 256> kCharClass = [] {
  std::array<uint8_t, 256> table{};
  for (int c = 0; c < 256; ++c) {
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
        c == '.' || c == '-' || c == '$') {
      table[c] = kIdentClass;
    }
  }
  table[' '] = table['\n'] = table['\t'] = table['\r'] = kSpaceClass;
  for (char c : {'{', '[', '(', '}', ']', ')', '"'}) table[static_cast<unsigned char>(c)] = kBracketClass;
  return table;
}();

// The bytes absl::CEscape changes (a control or non-ASCII byte, a quote, an
// apostrophe, a backslash): the printer and the proto writer write a string
// as it is when it has none. By table: one lookup per byte.
inline constexpr std::array<bool, 256> kNeedsCEscape = [] {
  std::array<bool, 256> table{};
  for (int u = 0; u < 256; ++u) table[u] = u < 0x20 || u >= 0x7f || u == '"' || u == '\'' || u == '\\';
  return table;
}();

// A name, opcode, type or attribute character: [A-Za-z0-9_.$-].
inline bool IsIdentChar(char c) { return kCharClass[static_cast<unsigned char>(c)] == kIdentClass; }

// The number of identifier characters at the start of `text`. Sixteen bytes
// at a time where SSE2 is available (all of x86-64): names such as
// `reduce_sum.43166` are most of a module's bytes, and the byte loop was
// the parser's largest single cost after shapes.
inline size_t IdentifierLength(absl::string_view text) {
  const char* data = text.data();
  const size_t size = text.size();
  size_t i = 0;
#if defined(__SSE2__)
  while (i + 16 <= size) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(data + i));
    // Letters: c | 0x20 in 'a'..'z' (bytes >= 0x80 are negative, so out).
    const __m128i folded = _mm_or_si128(v, _mm_set1_epi8(0x20));
    const __m128i letter = _mm_and_si128(_mm_cmpgt_epi8(folded, _mm_set1_epi8('a' - 1)),
                                         _mm_cmplt_epi8(folded, _mm_set1_epi8('z' + 1)));
    const __m128i digit = _mm_and_si128(_mm_cmpgt_epi8(v, _mm_set1_epi8('0' - 1)),
                                        _mm_cmplt_epi8(v, _mm_set1_epi8('9' + 1)));
    const __m128i other = _mm_or_si128(
        _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('_')), _mm_cmpeq_epi8(v, _mm_set1_epi8('.'))),
        _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('-')), _mm_cmpeq_epi8(v, _mm_set1_epi8('$'))));
    const unsigned ident = static_cast<unsigned>(
        _mm_movemask_epi8(_mm_or_si128(_mm_or_si128(letter, digit), other)));
    if (ident != 0xFFFF) return i + static_cast<size_t>(__builtin_ctz(~ident));
    i += 16;
  }
#endif
  while (i < size && IsIdentChar(data[i])) ++i;
  return i;
}

// Bit i set: text[i] is a bracket or a quote (kBracketClass), or with
// `breaks_and_slashes` also '\n', '\r' or '/', for the first min(16, size)
// bytes of `text`. Sixteen bytes at a time where SSE2 is available:
// attribute values (replica groups, metadata) are scanned for their matching
// closer and tuple shapes for their end, and most of their bytes are
// neither.
inline unsigned BracketMask(absl::string_view text, bool breaks_and_slashes = false) {
#if defined(__SSE2__)
  if (text.size() >= 16) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(text.data()));
    // '(' and ')' differ only in bit 0.
    const __m128i paren = _mm_cmpeq_epi8(_mm_and_si128(v, _mm_set1_epi8(~1)), _mm_set1_epi8('('));
    const __m128i square = _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('[')),
                                        _mm_cmpeq_epi8(v, _mm_set1_epi8(']')));
    const __m128i curly = _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('{')),
                                       _mm_cmpeq_epi8(v, _mm_set1_epi8('}')));
    __m128i found = _mm_or_si128(_mm_or_si128(paren, _mm_cmpeq_epi8(v, _mm_set1_epi8('"'))),
                                 _mm_or_si128(square, curly));
    if (breaks_and_slashes) {
      found = _mm_or_si128(
          found, _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('\n')),
                                           _mm_cmpeq_epi8(v, _mm_set1_epi8('\r'))),
                              _mm_cmpeq_epi8(v, _mm_set1_epi8('/'))));
    }
    return static_cast<unsigned>(_mm_movemask_epi8(found));
  }
#endif
  unsigned mask = 0;
  for (size_t i = 0; i < text.size() && i < 16; ++i) {
    const char c = text[i];
    if (kCharClass[static_cast<unsigned char>(c)] == kBracketClass ||
        (breaks_and_slashes && (c == '\n' || c == '\r' || c == '/'))) {
      mask |= 1u << i;
    }
  }
  return mask;
}

}  // namespace hilo

#endif  // HILO_TEXT_CHAR_CLASS_H_

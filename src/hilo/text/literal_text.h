// ParseLiteralElements: the element values of a constant's literal text.
//
// The parser keeps a constant's literal verbatim (HloInstruction::literal_text,
// the text between `constant(` and `)`); this reads the values out of it for
// the parser's validation and for the interpreter. Scalars are written bare
// (`1.5`, `true`, `-inf`, `nan`, `-nan(0x7f)`), arrays as nested braces with
// one level per dimension (`{ {1, 2}, {3, 4} }`, `/*i0=1*/` comments allowed),
// complex elements as `(re, im)`, tuples as `( {..}, {..} )`.
#ifndef HILO_TEXT_LITERAL_TEXT_H_
#define HILO_TEXT_LITERAL_TEXT_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "hilo/ir/shape.h"

namespace hilo {

// One element value. Integers and pred are exact: for signed types and pred
// (0/1) `s` holds the value and `u` its two's-complement bit pattern; for
// unsigned types `u` holds the value and `s` the same bits as int64. For
// every type `real` holds the value as a double (for integers, rounded), so a
// consumer that only wants a double can always read `real`. Complex elements
// fill `real` and `imag`.
struct LiteralElement {
  double real = 0;
  double imag = 0;
  int64_t s = 0;
  uint64_t u = 0;
};

// Element values of a constant's literal text, in row-major order (tuple
// leaves in order, each row-major). The element count must match the shape
// exactly, with one level of braces per dimension. Errors (InvalidArgument)
// say what is wrong and at which byte offset of `text`: elided `{...}`
// values, values out of range of the element type (s4 8, u32 4294967296,
// f16 -65520, a NaN payload that does not fit), wrong nesting or counts,
// malformed numbers. Never aborts, whatever the text; nesting is bounded.
absl::StatusOr<std::vector<LiteralElement>> ParseLiteralElements(const Shape& shape,
                                                                  absl::string_view text);

// The same checks as ParseLiteralElements without building the element
// vector (no allocation per element; a scalar written for an array shape is
// not expanded). The parser validates every non-elided constant this way.
absl::Status ValidateLiteralText(const Shape& shape, absl::string_view text);

}  // namespace hilo

#endif  // HILO_TEXT_LITERAL_TEXT_H_

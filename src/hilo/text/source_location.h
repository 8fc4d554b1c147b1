// Where things are in HLO text, and how an error points there.
//
// FormatErrorAt writes the `file:line:col: error: message` form the parser
// reports (the offending line, a window of it if long, and a caret);
// FindDefinition finds where a computation or instruction of a parsed
// module is written, so that an error found later (by the verifier) can
// point at the text too.
#ifndef HILO_TEXT_SOURCE_LOCATION_H_
#define HILO_TEXT_SOURCE_LOCATION_H_

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "absl/strings/string_view.h"

namespace hilo {

// Messages may quote the input; they are cut to this many bytes (and "...").
inline constexpr size_t kMaxErrorMessageBytes = 1024;

// `filename:line:col: error: message`, then the line holding byte `offset`
// of `text` (at most 200 bytes of it around the offset, tabs shown as
// spaces, control bytes and invalid UTF-8 escaped as \\xNN) and a caret
// under the offset. Lines and columns count from 1,
// columns in bytes. A message longer than kMaxErrorMessageBytes is cut.
std::string FormatErrorAt(absl::string_view filename, absl::string_view text, size_t offset,
                          absl::string_view message);

// What FormatErrorAt wrote at the front of `error` for `filename`: the line,
// the column and the message (up to the end of its line); nullopt when
// `error` does not start with `filename:line:col: error: `.
struct ErrorLocation {
  int64_t line = 0;
  int64_t column = 0;
  std::string message;
};
std::optional<ErrorLocation> ParseErrorLocation(absl::string_view error,
                                                absl::string_view filename);

// The offset in `text` of the name in the definition of instruction
// `instruction` of computation `computation` (`  ROOT %name = ...`), or of
// the computation's own name in its header when `instruction` is empty;
// nullopt if not found. Names are given without '%'. Reads the text line by
// line, as XLA writes it: a header line ends with '{', an instruction is
// defined on a line of its own.
std::optional<size_t> FindDefinition(absl::string_view text, absl::string_view computation,
                                     absl::string_view instruction);

}  // namespace hilo

#endif  // HILO_TEXT_SOURCE_LOCATION_H_

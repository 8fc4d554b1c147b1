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

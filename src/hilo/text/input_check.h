// The parser's first sweep over its input: NUL bytes and invalid UTF-8 are
// rejected before anything else reads the text, and the lines are counted
// on the way (they size the parser's tables).
#ifndef HILO_TEXT_INPUT_CHECK_H_
#define HILO_TEXT_INPUT_CHECK_H_

#include <cstddef>

#include "absl/strings/string_view.h"

namespace hilo {

struct InputCheck {
  size_t lines = 0;                // '\n' bytes before the problem (all of them if none)
  const char* problem = nullptr;   // "NUL byte in input", "invalid UTF-8 in input", or nullptr
  size_t problem_offset = 0;       // where the problem starts
};

InputCheck CheckInput(absl::string_view text);

// How many spaces in `text` a '=' follows: about one an instruction (`name
// = shape op(...)`), where a line count also counts the blank lines and the
// computations' braces. The parser counts them (a second sweep) only where
// lines are short enough for those to matter.
size_t CountSpacedEquals(absl::string_view text);

}  // namespace hilo

#endif  // HILO_TEXT_INPUT_CHECK_H_

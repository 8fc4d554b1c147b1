// PrintHloModule: HloModule -> XLA's HLO text format.
//
// Deterministic, in XLA's layout (two-space indent, `ROOT`, `%name = shape
// opcode(operands), attributes`). Everything the parser kept is printed
// back, so print(parse(print(parse(x)))) == print(parse(x)) byte for byte.
//
// There is one printer: it writes through a fixed buffer to an OutputSink.
// The string-returning forms are that printer with a sink appending to a
// string; the streaming form lets a caller (hilo-opt) write a large module
// to a file without ever holding its whole text in memory.
#ifndef HILO_TEXT_PRINTER_H_
#define HILO_TEXT_PRINTER_H_

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "hilo/ir/hlo_module.h"

namespace hilo {

// Where the streaming printer sends its text: consecutive pieces, in order,
// each valid only during the call.
class OutputSink {
 public:
  virtual ~OutputSink() = default;
  // Takes the next piece of text. An error stops the printing; the printer
  // returns it and writes nothing more.
  virtual absl::Status Write(absl::string_view text) = 0;
};

// Size of the buffer the streaming printer fills before each sink write.
// 64 KB: a megabyte was a megabyte more of peak memory (it is touched
// through once printing passes it) for no speed measurable.
inline constexpr size_t kPrintBufferSize = size_t{64} << 10;

// Prints `module` to `sink` in pieces of about kPrintBufferSize bytes. The
// bytes are exactly those of PrintHloModule(module); they always end with a
// newline. Returns the first error of `sink`.
absl::Status PrintHloModule(const HloModule& module, OutputSink& sink);

std::string PrintHloModule(const HloModule& module);
void AppendHloModule(const HloModule& module, std::string* out);
// One instruction as a single line, without indent or `ROOT`.
std::string PrintHloInstruction(const HloInstruction& instruction);
// The attributes PrintHloInstruction writes after the operands, in the same
// order, as (name, value text) pairs: `channel_id=5` is {"channel_id", "5"}.
std::vector<std::pair<std::string, std::string>> PrintHloAttributes(
    const HloInstruction& instruction);

// The names of the attributes PrintHloInstruction writes, in its order
// (for the proto writer, which records the order the text has).
std::vector<absl::string_view> PrintedAttributeNames(const HloInstruction& instruction);
// A computation's signature as XLA prints it: `(p0: f32[2], p1: s32[]) -> f32[2]`
// (parameters in number order, shapes without layouts).
std::string ComputationSignature(const HloComputation& computation);

// Whether ComputationSignature(computation) == text, without building the
// string.
bool ComputationSignatureIs(const HloComputation& computation, absl::string_view text);

}  // namespace hilo

#endif  // HILO_TEXT_PRINTER_H_

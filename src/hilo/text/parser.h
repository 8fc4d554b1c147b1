// ParseHloModule: XLA's HLO text format -> HloModule.
//
// Accepts what XLA's printer writes and XLA's parser accepts (see
// docs/text-format.md). Errors never abort: they come back as an
// InvalidArgument status whose message is
//   <filename>:<line>:<col>: error: <message>
//   <the offending source line>
//   <caret under the column>
// Nesting (tuple shapes, attribute braces) deeper than kMaxNestingDepth is
// an error, which keeps every recursive walk of the result bounded.
#ifndef HILO_TEXT_PARSER_H_
#define HILO_TEXT_PARSER_H_

#include <functional>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "hilo/ir/hlo_module.h"

namespace hilo {

inline constexpr int kMaxNestingDepth = 512;

absl::StatusOr<std::unique_ptr<HloModule>> ParseHloModule(absl::string_view text,
                                                          absl::string_view filename = "<input>");
// As above; every 128 KB or so, and with the text's size once the module is
// read, `done_before(offset)` says that the parse
// has moved past `offset`: the text before it is not needed again unless
// there is an error (or for the odd look back), so a caller whose text is a
// mapped file may drop those pages from memory (they are read back from the
// file if touched). `text` must stay readable until the parse returns.
absl::StatusOr<std::unique_ptr<HloModule>> ParseHloModule(
    absl::string_view text, absl::string_view filename,
    const std::function<void(size_t)>& done_before);
// As above; `finished(batch, parse_over)` is told (on this thread) of
// instructions that the rest of the parse changes no more than by adding
// users and control edges: opcode, name, shape, operands, attributes and
// called computations are final, and so are its operands' shapes. Those are
// the instructions defined after their operands, with their shapes
// written, in a computation without forward references or inferred shapes
// so far, and calling computations defined before them; the others are not
// told (nor instructions nested in an operand list). They come in batches
// of kFinishedBatch, in parse order (one call per batch, not one per
// instruction: the parse is the round trip's critical path); the last call,
// once the parse is over (after an error too), before the module is
// returned or freed, has `parse_over` and the rest (maybe none). hilo-opt
// checks the told ones ahead on its verifier thread (HloShapePrecheck in
// analysis/hlo_verifier.h).
using FinishedInstructions =
    std::function<void(absl::Span<const HloInstruction* const> batch, bool parse_over)>;
inline constexpr size_t kFinishedBatch = 1024;
absl::StatusOr<std::unique_ptr<HloModule>> ParseHloModule(
    absl::string_view text, absl::string_view filename,
    const std::function<void(size_t)>& done_before, const FinishedInstructions& finished);

// `s1, s2, ...`: shapes written as the text format writes them (an empty
// text is no shape), for attributes whose value holds shapes
// (`operand_layout_constraints=`, `outfeed_shape=`).
absl::StatusOr<std::vector<Shape>> ParseShapeList(absl::string_view text);

}  // namespace hilo

#endif  // HILO_TEXT_PARSER_H_

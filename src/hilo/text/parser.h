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

// `s1, s2, ...`: shapes written as the text format writes them (an empty
// text is no shape), for attributes whose value holds shapes
// (`operand_layout_constraints=`, `outfeed_shape=`).
absl::StatusOr<std::vector<Shape>> ParseShapeList(absl::string_view text);

}  // namespace hilo

#endif  // HILO_TEXT_PARSER_H_

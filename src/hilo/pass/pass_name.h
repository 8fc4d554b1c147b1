// Pass names as users type them: `-` and `_` are interchangeable
// (`neuron-looped-einsum-replacer` is `neuron_looped_einsum_replacer`), and
// an unknown name gets the closest known one as a "did you mean".
#ifndef HILO_PASS_PASS_NAME_H_
#define HILO_PASS_PASS_NAME_H_

#include <cstddef>
#include <optional>
#include <string>

#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace hilo {

// The form names are compared in: every '_' becomes '-'.
std::string NormalizePassName(absl::string_view name);

// Levenshtein distance (insertions, deletions, substitutions of one byte),
// in O(|a| * |b|) time and O(|b|) memory.
size_t EditDistance(absl::string_view a, absl::string_view b);

// The candidate a mistyped `name` most likely meant, compared normalized
// and ignoring case:
// the nearest by edit distance if it is within a third of the name's length
// (at least 2), else the only candidate containing the name (of 4 or more
// characters); nullopt if none or it is ambiguous. Names longer than 200
// bytes get no suggestion (nobody mistypes those, and it bounds the work).
std::optional<std::string> SuggestPassName(absl::string_view name,
                                           absl::Span<const std::string> candidates);

}  // namespace hilo

#endif  // HILO_PASS_PASS_NAME_H_

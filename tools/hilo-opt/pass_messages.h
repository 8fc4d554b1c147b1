// What hilo-opt says on stderr about the passes it ran, built from the
// passes' report entries and explanations (the data --report writes): the
// per-pass summary line, --explain's lines with identical decisions grouped,
// and what a --check-equivalence verdict was measured against.
#ifndef HILO_TOOLS_HILO_OPT_PASS_MESSAGES_H_
#define HILO_TOOLS_HILO_OPT_PASS_MESSAGES_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/types/span.h"
#include "hilo/eval/equivalence.h"
#include "nlohmann/json.hpp"

namespace hilo {

// `<pass>: <change summary>` for a report entry with a "change_summary"
// (passes give one only when they changed something, even if, like the
// stream-id injector without an exemplar, they report "changed": false);
// nullopt otherwise (nothing changed, a skipped pass).
std::optional<std::string> PassSummaryLine(const nlohmann::json& entry);

// Explanation lines read `<what>: <decision>`. Two or more lines with the
// same decision become one, `<n> x <decision> (<what>, <what>, <what> and
// <n-3> more)`, where the first of them was; the others stay as they are,
// in order. Linear in the total length.
std::vector<std::string> GroupExplanations(absl::Span<const std::string> lines);

// One line saying what an EQUIVALENT / NOT EQUIVALENT verdict compared: the
// structure, or both modules run on simulated devices.
std::string EquivalenceNote(const eval::EquivalenceReport& report);

}  // namespace hilo

#endif  // HILO_TOOLS_HILO_OPT_PASS_MESSAGES_H_

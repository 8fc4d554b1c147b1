#include "hilo/eval/structural.h"

#include <optional>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "hilo/text/printer.h"

namespace hilo {
namespace eval {
namespace {

// End (exclusive) of an attribute value starting at `pos`: the next ','
// outside brackets and quoted strings (with escapes), or the end.
size_t ValueEnd(const std::string& text, size_t pos) {
  int depth = 0;
  bool quoted = false;
  for (size_t k = pos; k < text.size(); ++k) {
    const char c = text[k];
    if (quoted) {
      if (c == '\\') ++k;
      else if (c == '"') quoted = false;
    } else if (c == '"') {
      quoted = true;
    } else if (c == '{' || c == '(' || c == '[') {
      ++depth;
    } else if (c == '}' || c == ')' || c == ']') {
      if (depth == 0) return k;
      --depth;
    } else if (c == ',' && depth == 0) {
      return k;
    }
  }
  return text.size();
}

// `text` (an instruction as PrintHloInstruction writes it) with the
// attributes for which `rewrite` returns nullopt removed and the others
// replaced by what it returns (the value text given, without ", name=").
template <typename Rewrite>
std::string RewriteAttributes(const std::string& text, Rewrite rewrite) {
  // Attributes follow the operand list as ", name=value".
  std::string out;
  size_t pos = 0;
  while (pos < text.size()) {
    const size_t next = text.find(", ", pos);
    if (next == std::string::npos) {
      out.append(text, pos, std::string::npos);
      break;
    }
    out.append(text, pos, next - pos);
    const size_t name_start = next + 2;
    const size_t eq = text.find('=', name_start);
    std::string name = eq == std::string::npos ? "" : text.substr(name_start, eq - name_start);
    const bool is_attribute = !name.empty() && name.find_first_of(" ({[%") == std::string::npos;
    if (!is_attribute) {
      out += ", ";
      pos = name_start;
      continue;
    }
    const size_t end = ValueEnd(text, eq + 1);
    std::optional<std::string> value = rewrite(name, absl::string_view(text).substr(eq + 1, end - eq - 1));
    if (value.has_value()) absl::StrAppend(&out, ", ", name, "=", *value);
    pos = end;
  }
  return out;
}

}  // namespace

std::string CanonicalInstructionText(const HloInstruction& instr, int64_t num_partitions) {
  const bool keep_config = instr.opcode() == HloOpcode::kCustomCall;
  const HloOpcode op = instr.opcode();
  const bool keep_channel = op == HloOpcode::kSend || op == HloOpcode::kRecv ||
                            op == HloOpcode::kSendDone || op == HloOpcode::kRecvDone;
  const bool mode_free = num_partitions == 1 &&
                         (op == HloOpcode::kAllGather || op == HloOpcode::kAllGatherStart ||
                          op == HloOpcode::kAllReduce || op == HloOpcode::kAllReduceStart ||
                          op == HloOpcode::kReduceScatter);
  return RewriteAttributes(
      PrintHloInstruction(instr),
      [&](const std::string& name, absl::string_view value) -> std::optional<std::string> {
        if (name == "metadata" || name == "frontend_attributes" || name == "control-predecessors" ||
            (name == "backend_config" && !keep_config) ||
            (mode_free && (name == "channel_id" || name == "use_global_device_ids"))) {
          return std::nullopt;
        }
        if (name == "channel_id" && !keep_channel) return std::string("*");
        return std::string(value);
      });
}

std::string InstructionTextForExtraction(const HloInstruction& instr) {
  return RewriteAttributes(
      PrintHloInstruction(instr),
      [](const std::string& name, absl::string_view value) -> std::optional<std::string> {
        if (name == "metadata" || name == "control-predecessors") return std::nullopt;
        return std::string(value);
      });
}

std::optional<std::string> ComputationDifference(const HloComputation& b, const HloComputation& a,
                                                 int64_t num_partitions) {
  if (b.root_instruction() == nullptr || a.root_instruction() == nullptr ||
      b.root_instruction()->name() != a.root_instruction()->name()) {
    return absl::StrCat("computation ", b.name(), ": the root differs");
  }
  absl::flat_hash_map<std::string, const HloInstruction*> instrs;
  for (const HloInstruction* i : a.instructions()) instrs[i->name()] = i;
  int64_t count = 0;
  for (const HloInstruction* i : b.instructions()) {
    ++count;
    auto j = instrs.find(i->name());
    if (j == instrs.end()) return absl::StrCat("computation ", b.name(), ": %", i->name(), " is gone");
    if (CanonicalInstructionText(*i, num_partitions) !=
        CanonicalInstructionText(*j->second, num_partitions)) {
      return absl::StrCat("computation ", b.name(), ": %", i->name(), " differs");
    }
  }
  if (count != static_cast<int64_t>(instrs.size())) {
    return absl::StrCat("computation ", b.name(), ": instructions were added");
  }
  return std::nullopt;
}

std::optional<std::string> StructuralDifference(const HloModule& before, const HloModule& after,
                                                int64_t num_partitions) {
  if (before.replica_count() != after.replica_count() ||
      before.num_partitions() != after.num_partitions()) {
    return "the module headers differ (replica_count / num_partitions)";
  }
  const std::vector<HloComputation*> cb = before.computations();
  const std::vector<HloComputation*> ca = after.computations();
  if (cb.size() != ca.size()) return "the modules have different numbers of computations";
  absl::flat_hash_map<std::string, const HloComputation*> by_name;
  for (const HloComputation* c : ca) by_name[c->name()] = c;
  if (before.entry_computation() == nullptr || after.entry_computation() == nullptr ||
      before.entry_computation()->name() != after.entry_computation()->name()) {
    return "the entry computations differ";
  }
  for (const HloComputation* b : cb) {
    auto it = by_name.find(b->name());
    if (it == by_name.end()) return absl::StrCat("computation ", b->name(), " is gone");
    if (auto difference = ComputationDifference(*b, *it->second, num_partitions)) return difference;
  }
  return std::nullopt;
}

}  // namespace eval
}  // namespace hilo

#include "hilo/eval/structural.h"

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

}  // namespace

std::string CanonicalInstructionText(const HloInstruction& instr, int64_t num_partitions) {
  const std::string text = PrintHloInstruction(instr);
  const bool keep_config = instr.opcode() == HloOpcode::kCustomCall;
  const bool keep_channel = instr.opcode() == HloOpcode::kSend || instr.opcode() == HloOpcode::kRecv ||
                            instr.opcode() == HloOpcode::kSendDone ||
                            instr.opcode() == HloOpcode::kRecvDone;
  const HloOpcode op = instr.opcode();
  const bool mode_free = num_partitions == 1 &&
                         (op == HloOpcode::kAllGather || op == HloOpcode::kAllGatherStart ||
                          op == HloOpcode::kAllReduce || op == HloOpcode::kAllReduceStart ||
                          op == HloOpcode::kReduceScatter);
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
    if (name == "metadata" || name == "frontend_attributes" ||
        (name == "backend_config" && !keep_config) ||
        (mode_free && (name == "channel_id" || name == "use_global_device_ids"))) {
      // dropped
    } else if (name == "channel_id" && !keep_channel) {
      out += ", channel_id=*";
    } else {
      out.append(text, next, end - next);
    }
    pos = end;
  }
  return out;
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
    const HloComputation* a = it->second;
    if (b->root_instruction() == nullptr || a->root_instruction() == nullptr ||
        b->root_instruction()->name() != a->root_instruction()->name()) {
      return absl::StrCat("computation ", b->name(), ": the root differs");
    }
    absl::flat_hash_map<std::string, const HloInstruction*> instrs;
    for (const HloInstruction* i : a->instructions()) instrs[i->name()] = i;
    int64_t count = 0;
    for (const HloInstruction* i : b->instructions()) {
      ++count;
      auto j = instrs.find(i->name());
      if (j == instrs.end()) return absl::StrCat("computation ", b->name(), ": %", i->name(), " is gone");
      if (CanonicalInstructionText(*i, num_partitions) !=
          CanonicalInstructionText(*j->second, num_partitions)) {
        return absl::StrCat("computation ", b->name(), ": %", i->name(), " differs");
      }
    }
    if (count != static_cast<int64_t>(instrs.size())) {
      return absl::StrCat("computation ", b->name(), ": instructions were added");
    }
  }
  return std::nullopt;
}

}  // namespace eval
}  // namespace hilo

#include "hilo/text/printer.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "hilo/text/text_flags.h"

namespace hilo {
namespace {

// XLA's default style for objects that were not parsed.
constexpr uint32_t kDefaultStyle =
    kTextFlagsSet | kTextPercentName | kTextOperandShapes | kTextPercentOperands |
    kTextPercentCalls | kTextPercentControl | kTextOperandIndexComments;

uint32_t ModuleStyle(const HloModule* module) {
  if (module == nullptr) return kDefaultStyle;
  uint32_t f = module->text_info().flags;
  return (f & kTextFlagsSet) ? f : kDefaultStyle;
}

uint32_t InstructionStyle(const HloInstruction& inst) {
  uint32_t f = inst.text_flags();
  if (f & kTextFlagsSet) return f;
  const HloModule* module = inst.parent() != nullptr ? inst.parent()->parent() : nullptr;
  return ModuleStyle(module) & ~(kTextAsyncSugar | (0xffu << kTextSugarOpcodeShift));
}

// Shape::AppendTo for leaves; tuples as XLA prints them, with an
// `/*index=N*/` comment before every fifth element. Recursion is bounded by
// the parser's nesting limit.
void AppendShape(const Shape& shape, std::string* out, bool print_layout) {
  if (!shape.IsTuple()) {
    shape.AppendTo(out, print_layout);
    return;
  }
  out->push_back('(');
  for (int64_t i = 0; i < shape.tuple_shapes_size(); ++i) {
    if (i > 0) {
      out->append(", ");
      if (i % 5 == 0) absl::StrAppend(out, "/*index=", i, "*/");
    }
    AppendShape(shape.tuple_shapes(i), out, print_layout);
  }
  out->push_back(')');
}

void AppendIntList(absl::Span<const int64_t> list, std::string* out) {
  out->push_back('{');
  for (size_t i = 0; i < list.size(); ++i) {
    if (i > 0) out->push_back(',');
    absl::StrAppend(out, list[i]);
  }
  out->push_back('}');
}

void AppendQuoted(absl::string_view s, std::string* out) {
  out->push_back('"');
  absl::StrAppend(out, absl::CEscape(s));
  out->push_back('"');
}

void AppendComputationName(const HloComputation* c, bool percent, std::string* out) {
  if (percent) out->push_back('%');
  out->append(c->name());
}

// Appends `name=value` for attribute `name` if the instruction has it set;
// returns false (appending nothing) otherwise.
bool AppendAttribute(const HloInstruction& inst, absl::string_view name, uint32_t style,
                     std::string* out) {
  auto begin = [&]() { absl::StrAppend(out, ", ", name, "="); };
  // A raw attribute is one the parser could not type (or does not know):
  // it is printed as written.
  if (const std::string* raw = inst.raw_attribute(name)) {
    begin();
    out->append(*raw);
    return true;
  }
  if (name == "index") {
    if (inst.opcode() == HloOpcode::kGetTupleElement && inst.tuple_index() >= 0) {
      begin();
      absl::StrAppend(out, inst.tuple_index());
      return true;
    }
  } else if (name == "dimensions") {
    if (inst.dimensions().has_value()) {
      begin();
      AppendIntList(*inst.dimensions(), out);
      return true;
    }
    return false;
  } else if (name == "lhs_batch_dims" || name == "rhs_batch_dims" ||
             name == "lhs_contracting_dims" || name == "rhs_contracting_dims") {
    const DotDimensionNumbers& dn = inst.dot_dimension_numbers();
    const std::vector<int64_t>& dims = name == "lhs_batch_dims"         ? dn.lhs_batch_dimensions
                                       : name == "rhs_batch_dims"       ? dn.rhs_batch_dimensions
                                       : name == "lhs_contracting_dims" ? dn.lhs_contracting_dimensions
                                                                        : dn.rhs_contracting_dimensions;
    // Written explicitly (in attribute_order) even when empty; otherwise only when non-empty.
    bool written = std::find(inst.attribute_order().begin(), inst.attribute_order().end(), name) !=
                   inst.attribute_order().end();
    if (!dims.empty() || written) {
      begin();
      AppendIntList(dims, out);
      return true;
    }
    return false;
  } else if (name == "replica_groups") {
    if (inst.replica_groups().has_value()) {
      begin();
      out->append(inst.replica_groups()->ToString());
      return true;
    }
    return false;
  } else if (name == "channel_id") {
    if (inst.channel_id().has_value()) {
      begin();
      absl::StrAppend(out, *inst.channel_id());
      return true;
    }
    return false;
  } else if (name == "use_global_device_ids" || name == "constrain_layout") {
    const std::optional<bool>& v =
        name == "use_global_device_ids" ? inst.use_global_device_ids() : inst.constrain_layout();
    if (v.has_value()) {
      begin();
      out->append(*v ? "true" : "false");
      return true;
    }
    return false;
  } else if (name == "source_target_pairs") {
    if (inst.source_target_pairs().has_value()) {
      begin();
      out->push_back('{');
      bool first = true;
      for (const auto& [s, t] : *inst.source_target_pairs()) {
        if (!first) out->push_back(',');
        first = false;
        absl::StrAppend(out, "{", s, ",", t, "}");
      }
      out->push_back('}');
      return true;
    }
    return false;
  } else if (name == "custom_call_target") {
    bool written = std::find(inst.attribute_order().begin(), inst.attribute_order().end(), name) !=
                   inst.attribute_order().end();
    if (!inst.custom_call_target().empty() || written) {
      begin();
      AppendQuoted(inst.custom_call_target(), out);
      return true;
    }
    return false;
  } else if (name == "api_version") {
    bool written = std::find(inst.attribute_order().begin(), inst.attribute_order().end(), name) !=
                   inst.attribute_order().end();
    if (inst.api_version() != 1 || written) {
      begin();
      absl::StrAppend(out, HloInstruction::ApiVersionName(inst.api_version()));
      return true;
    }
    return false;
  } else if (name == "backend_config") {
    if (inst.backend_config().has_value()) {
      begin();
      if (inst.backend_config_is_dict()) {
        out->append(*inst.backend_config());
      } else {
        AppendQuoted(*inst.backend_config(), out);
      }
      return true;
    }
  } else if (name == "frontend_attributes") {
    bool written = std::find(inst.attribute_order().begin(), inst.attribute_order().end(), name) !=
                   inst.attribute_order().end();
    if (!inst.frontend_attributes().empty() || written) {
      begin();
      out->push_back('{');
      bool first = true;
      for (const auto& [k, v] : inst.frontend_attributes().entries()) {
        if (!first) out->push_back(',');
        first = false;
        // A key that is not a plain identifier was written quoted.
        bool plain = !k.empty();
        for (char c : k) {
          plain &= (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                   c == '_' || c == '.' || c == '-' || c == '$';
        }
        if (plain) {
          out->append(k);
        } else {
          AppendQuoted(k, out);
        }
        out->push_back('=');
        AppendQuoted(v, out);
      }
      out->push_back('}');
      return true;
    }
    return false;
  } else if (name == "metadata") {
    bool written = std::find(inst.attribute_order().begin(), inst.attribute_order().end(), name) !=
                   inst.attribute_order().end();
    if (!inst.metadata().empty() || written) {
      begin();
      absl::StrAppend(out, "{", inst.metadata(), "}");
      return true;
    }
    return false;
  } else if (name == "sharding") {
    if (!inst.sharding().empty()) {
      begin();
      out->append(inst.sharding());
      return true;
    }
    return false;
  } else if (name == "control-predecessors") {
    if (!inst.control_predecessors().empty()) {
      begin();
      out->push_back('{');
      bool first = true;
      for (const HloInstruction* p : inst.control_predecessors()) {
        if (!first) out->append(", ");
        first = false;
        if (style & kTextPercentControl) out->push_back('%');
        out->append(p->name());
      }
      out->push_back('}');
      return true;
    }
    return false;
  }
  for (const CalledComputationAttribute& attr : inst.called_computation_attributes()) {
    if (attr.name != name) continue;
    begin();
    const bool percent = style & kTextPercentCalls;
    if (attr.braced || attr.computations.size() != 1) {
      out->push_back('{');
      for (size_t i = 0; i < attr.computations.size(); ++i) {
        if (i > 0) out->append(", ");
        AppendComputationName(attr.computations[i], percent, out);
      }
      out->push_back('}');
    } else {
      AppendComputationName(attr.computations[0], percent, out);
    }
    return true;
  }
  if (const std::string* raw = inst.raw_attribute(name)) {
    begin();
    out->append(*raw);
    return true;
  }
  return false;
}

// XLA's order for attributes that were not written in the text (set by a pass).
constexpr absl::string_view kCanonicalOrder[] = {
    "index", "dimensions", "channel_id", "replica_groups", "constrain_layout",
    "use_global_device_ids", "source_target_pairs", "lhs_batch_dims", "lhs_contracting_dims",
    "rhs_batch_dims", "rhs_contracting_dims", "custom_call_target", "api_version",
    "to_apply", "condition", "body", "calls", "branch_computations", "true_computation",
    "false_computation", "called_computations", "select", "scatter", "sharding",
    "frontend_attributes", "control-predecessors", "metadata", "backend_config"};

template <typename NameList>
bool Listed(const NameList& order, absl::string_view name) {
  for (absl::string_view s : order) {
    if (s == name) return true;
  }
  return false;
}

void AppendInstruction(const HloInstruction& inst, std::string* out) {
  const uint32_t style = InstructionStyle(inst);
  if (style & kTextPercentName) out->push_back('%');
  absl::StrAppend(out, inst.name(), " = ");
  AppendShape(inst.shape(), out, /*print_layout=*/true);
  out->push_back(' ');
  if (style & kTextAsyncSugar) {
    auto wrapped = static_cast<HloOpcode>((style >> kTextSugarOpcodeShift) & 0xff);
    absl::StrAppend(out, HloOpcodeString(wrapped),
                    inst.opcode() == HloOpcode::kAsyncStart    ? "-start"
                    : inst.opcode() == HloOpcode::kAsyncUpdate ? "-update"
                                                               : "-done");
  } else {
    absl::StrAppend(out, HloOpcodeString(inst.opcode()));
  }
  out->push_back('(');
  if (inst.opcode() == HloOpcode::kParameter) {
    absl::StrAppend(out, inst.parameter_number());
  } else if (inst.opcode() == HloOpcode::kConstant) {
    out->append(inst.literal_text());
  } else {
    for (int64_t i = 0; i < inst.operand_count(); ++i) {
      if (i > 0) {
        out->append(", ");
        if (i % 5 == 0 && (style & kTextOperandIndexComments)) {
          absl::StrAppend(out, "/*index=", i, "*/");
        }
      }
      const HloInstruction* operand = inst.operand(i);
      if (style & kTextOperandShapes) {
        AppendShape(operand->shape(), out, /*print_layout=*/true);
        out->push_back(' ');
      }
      if (style & kTextPercentOperands) out->push_back('%');
      out->append(operand->name());
    }
  }
  out->push_back(')');
  const auto& order = inst.attribute_order();
  for (absl::string_view name : order) AppendAttribute(inst, name, style, out);
  for (absl::string_view name : kCanonicalOrder) {
    if (!Listed(order, name)) AppendAttribute(inst, name, style, out);
  }
  for (const CalledComputationAttribute& attr : inst.called_computation_attributes()) {
    bool canonical = false;
    for (absl::string_view c : kCanonicalOrder) canonical |= c == attr.name;
    if (!canonical && !Listed(order, attr.name)) AppendAttribute(inst, attr.name, style, out);
  }
  for (const RawAttribute& raw : inst.raw_attributes()) {
    bool canonical = false;
    for (absl::string_view c : kCanonicalOrder) canonical |= c == raw.name;
    if (!canonical && !Listed(order, raw.name)) absl::StrAppend(out, ", ", raw.name, "=", raw.value);
  }
}

// The order instructions are printed in. Parsed instructions keep the
// order they were written in (so a parsed module prints back as written,
// forward references included). An instruction a pass created is appended
// to the instruction list, which would print it after `ROOT`; instead it
// is printed just before the first instruction that needs it (after its own
// pass-created operands), as XLA's post-order printing would place it. A
// created instruction nothing uses comes at the end. Iterative: no
// recursion on graph depth.
std::vector<const HloInstruction*> PrintOrder(const HloComputation& comp) {
  std::vector<HloInstruction*> list = comp.instructions();
  auto created = [](const HloInstruction* inst) { return !(inst->text_flags() & kTextFlagsSet); };
  // The common case, a parsed computation no pass added to, is list order.
  if (std::none_of(list.begin(), list.end(), created)) {
    return std::vector<const HloInstruction*>(list.begin(), list.end());
  }
  absl::flat_hash_set<const HloInstruction*> placed;
  placed.reserve(list.size());
  std::vector<const HloInstruction*> order;
  order.reserve(list.size());
  std::vector<std::pair<const HloInstruction*, size_t>> stack;  // (instruction, next edge)
  auto place = [&](const HloInstruction* start) {
    if (placed.contains(start)) return;
    placed.insert(start);
    stack.push_back({start, 0});
    while (!stack.empty()) {
      auto& [inst, next] = stack.back();
      const size_t operands = inst->operands().size();
      const size_t edges = operands + inst->control_predecessors().size();
      if (next < edges) {
        const HloInstruction* dep = next < operands ? inst->operands()[next]
                                                    : inst->control_predecessors()[next - operands];
        ++next;
        if (created(dep) && dep->parent() == &comp && !placed.contains(dep)) {
          placed.insert(dep);
          stack.push_back({dep, 0});
        }
        continue;
      }
      order.push_back(inst);
      stack.pop_back();
    }
  };
  for (const HloInstruction* inst : list) {
    if (!created(inst)) place(inst);
  }
  for (const HloInstruction* inst : list) place(inst);
  return order;
}

void AppendComputation(const HloComputation& comp, std::string* out) {
  uint32_t flags = comp.text_info().flags;
  if (!(flags & kTextFlagsSet)) flags = ModuleStyle(comp.parent());
  if (comp.IsEntryComputation()) out->append("ENTRY ");
  if (flags & kTextPercentName) out->push_back('%');
  out->append(comp.name());
  if (comp.text_info().has_signature) {
    // The signature is derived from the computation, as XLA does, so it
    // stays right after a pass changes parameters or the root; the written
    // one is kept while it still describes the same computation.
    std::string canonical = ComputationSignature(comp);
    out->push_back(' ');
    if (canonical == comp.text_info().canonical_signature && !comp.text_info().signature.empty()) {
      out->append(comp.text_info().signature);
    } else {
      out->append(canonical);
    }
  }
  out->append(" {\n");
  const HloInstruction* root = comp.root_instruction();
  for (const HloInstruction* inst : PrintOrder(comp)) {
    out->append(inst == root ? "  ROOT " : "  ");
    AppendInstruction(*inst, out);
    out->push_back('\n');
  }
  out->push_back('}');
  if (!comp.execution_thread().empty()) {
    out->append(", execution_thread=");
    AppendQuoted(comp.execution_thread(), out);
  }
  if (comp.text_info().flags & kTextClosingNameComment) absl::StrAppend(out, " // ", comp.name());
}

}  // namespace

std::string ComputationSignature(const HloComputation& comp) {
  std::string out = "(";
  bool first = true;
  for (const HloInstruction* p : comp.parameter_instructions()) {
    if (p == nullptr || p->parent() == nullptr) continue;
    if (!first) out.append(", ");
    first = false;
    absl::StrAppend(&out, p->name(), ": ");
    AppendShape(p->shape(), &out, /*print_layout=*/false);
  }
  out.append(") -> ");
  if (comp.root_instruction() != nullptr) {
    AppendShape(comp.root_instruction()->shape(), &out, /*print_layout=*/false);
  }
  return out;
}

void AppendHloModule(const HloModule& module, std::string* out) {
  if (module.has_header()) {
    absl::StrAppend(out, "HloModule ", module.name());
    if (module.text_info().flags & kTextHeaderColon) out->push_back(':');
    auto append_header = [&](absl::string_view name) {
      if (name == "replica_count") {
        if (module.replica_count().has_value()) {
          absl::StrAppend(out, ", replica_count=", *module.replica_count());
        }
      } else if (name == "num_partitions") {
        if (module.num_partitions().has_value()) {
          absl::StrAppend(out, ", num_partitions=", *module.num_partitions());
        }
      } else if (const std::string* v = module.header_attribute(name)) {
        absl::StrAppend(out, ", ", name, "=", *v);
      }
    };
    const std::vector<std::string>& order = module.header_order();
    for (const std::string& name : order) append_header(name);
    for (const HeaderAttribute& attr : module.header_attributes()) {
      if (!Listed(order, attr.name)) append_header(attr.name);
    }
    if (!Listed(order, "replica_count")) append_header("replica_count");
    if (!Listed(order, "num_partitions")) append_header("num_partitions");
    out->append("\n\n");
  }
  if (!module.text_info().stack_frames.empty()) {
    absl::StrAppend(out, module.text_info().stack_frames, "\n\n\n");
  }
  bool first = true;
  for (const HloComputation* comp : module.computations()) {
    if (!first) out->append("\n\n");
    first = false;
    AppendComputation(*comp, out);
  }
  out->push_back('\n');
}

std::string PrintHloModule(const HloModule& module) {
  std::string out;
  out.reserve(static_cast<size_t>(module.instruction_count()) * 96);
  AppendHloModule(module, &out);
  return out;
}

std::string PrintHloInstruction(const HloInstruction& instruction) {
  std::string out;
  AppendInstruction(instruction, &out);
  return out;
}

}  // namespace hilo

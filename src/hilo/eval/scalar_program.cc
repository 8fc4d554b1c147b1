// ScalarProgram (ops_internal.h): a scalar computation (a sort comparator,
// select-and-scatter's select, map's function) compiled once into a flat
// list of steps and run per call without building Values. Each step rounds
// (floats) or wraps (integers) to its element type, as the instruction's own
// evaluation does, so the result is the nested evaluation's, only faster.
#include <cmath>
#include <unordered_map>

#include "absl/strings/ascii.h"
#include "absl/strings/strip.h"
#include "hilo/eval/ops_internal.h"

namespace hilo {
namespace eval {

std::optional<ScalarProgram> ScalarProgram::Compile(const HloComputation* computation) {
  if (computation == nullptr || computation->root_instruction() == nullptr) return std::nullopt;
  ScalarProgram program;
  std::unordered_map<const HloInstruction*, int64_t> slot;
  for (const HloInstruction* instr : computation->MakeInstructionPostOrder()) {
    const Shape& shape = instr->shape();
    if (!shape.IsArray() || shape.rank() != 0 || !IsSupportedElementType(shape.element_type())) {
      return std::nullopt;
    }
    Step step;
    step.op = instr->opcode();
    step.type = shape.element_type();
    step.is_float = IsFloatingPointType(step.type);
    int64_t* operand_slots[] = {&step.a, &step.b, &step.c};
    if (instr->operand_count() > 3) return std::nullopt;
    for (int64_t k = 0; k < instr->operand_count(); ++k) {
      auto it = slot.find(instr->operand(k));
      if (it == slot.end()) return std::nullopt;
      *operand_slots[k] = it->second;
    }
    switch (step.op) {
      case HloOpcode::kParameter:
        step.a = instr->parameter_number();
        if (step.a < 0 || step.a >= computation->num_parameters()) return std::nullopt;
        break;
      case HloOpcode::kConstant: {
        ApplyFn none = [](const HloComputation*, std::vector<Value>) -> absl::StatusOr<Value> {
          return absl::InternalError("unused");
        };
        auto v = EvaluateLocalInstruction(*instr, {}, DeviceIds{}, none);
        if (!v.ok() || !v->is_array() || v->array().size() != 1) return std::nullopt;
        step.constant = {v->array().GetDouble(0), step.is_float ? 0 : v->array().i()[0]};
        break;
      }
      case HloOpcode::kCompare: {
        const std::string* dir = instr->raw_attribute("direction");
        const std::string* type = instr->raw_attribute("type");
        step.direction = dir == nullptr ? -1 : ComparisonDirection(*dir);
        if (step.direction < 0 || instr->operand(0)->shape().element_type() != instr->operand(1)->shape().element_type()) {
          return std::nullopt;
        }
        step.total_order =
            type != nullptr && absl::AsciiStrToUpper(absl::StripAsciiWhitespace(*type)) == "TOTALORDER";
        step.operand_type = instr->operand(0)->shape().element_type();
        break;
      }
      case HloOpcode::kSelect:
      case HloOpcode::kAdd: case HloOpcode::kSubtract: case HloOpcode::kMultiply:
      case HloOpcode::kDivide: case HloOpcode::kMaximum: case HloOpcode::kMinimum:
      case HloOpcode::kAnd: case HloOpcode::kOr: case HloOpcode::kXor:
      case HloOpcode::kNot: case HloOpcode::kNegate: case HloOpcode::kAbs:
        if (step.op != HloOpcode::kSelect && instr->operand_count() > 0 &&
            instr->operand(0)->shape().element_type() != step.type) {
          return std::nullopt;
        }
        break;
      default:
        return std::nullopt;
    }
    slot[instr] = static_cast<int64_t>(program.steps_.size());
    program.steps_.push_back(step);
  }
  auto root = slot.find(computation->root_instruction());
  if (root == slot.end()) return std::nullopt;
  program.root_ = root->second;
  program.root_type_ = computation->root_instruction()->shape().element_type();
  program.num_parameters_ = computation->num_parameters();
  program.values_.resize(program.steps_.size());
  return program;
}

ScalarProgram::Scalar ScalarProgram::Run(absl::Span<const Array* const> args,
                                         absl::Span<const int64_t> index) const {
  std::vector<Scalar>& v = values_;
  for (size_t s = 0; s < steps_.size(); ++s) {
    const Step& step = steps_[s];
    Scalar& out = v[s];
    switch (step.op) {
      case HloOpcode::kParameter: {
        const Array& a = *args[step.a];
        out = a.is_float() ? Scalar{a.f()[index[step.a]], 0} : Scalar{0, a.i()[index[step.a]]};
        continue;
      }
      case HloOpcode::kConstant:
        out = step.constant;
        continue;
      case HloOpcode::kCompare: {
        const Scalar& x = v[step.a];
        const Scalar& y = v[step.b];
        out = {0, CompareScalars(step.operand_type, x.f, x.i, y.f, y.i, step.direction, step.total_order)};
        continue;
      }
      case HloOpcode::kSelect:
        out = v[step.a].i != 0 ? v[step.b] : v[step.c];
        continue;
      case HloOpcode::kNot:
        out = {0, WrapToIntType(step.type, step.type == PrimitiveType::PRED ? !v[step.a].i : ~v[step.a].i)};
        continue;
      case HloOpcode::kNegate:
        out = step.is_float ? Scalar{-v[step.a].f, 0}
                            : Scalar{0, WrapToIntType(step.type, static_cast<int64_t>(0 - static_cast<uint64_t>(v[step.a].i)))};
        continue;
      case HloOpcode::kAbs:
        out = step.is_float ? Scalar{std::fabs(v[step.a].f), 0}
              : IsUnsignedIntegralType(step.type) || v[step.a].i >= 0
                  ? v[step.a]
                  : Scalar{0, WrapToIntType(step.type, static_cast<int64_t>(0 - static_cast<uint64_t>(v[step.a].i)))};
        continue;
      default:
        break;
    }
    // The binary ops: validated at compile time, so these cannot fail.
    if (step.is_float) {
      out = {RoundToFloatType(step.type, FloatBinary(step.op, v[step.a].f, v[step.b].f).value_or(0)), 0};
    } else {
      out = {0, WrapToIntType(step.type, IntBinary(step.op, step.type, v[step.a].i, v[step.b].i).value_or(0))};
    }
  }
  return v[root_];
}

}  // namespace eval
}  // namespace hilo

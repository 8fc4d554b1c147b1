#include "hilo/analysis/looped_einsum_matchers.h"

namespace hilo {
namespace {

// Operand i of `inst`, or nullptr when it has fewer operands.
const HloInstruction* OperandOrNull(const HloInstruction* inst, int64_t i) {
  if (inst == nullptr || i < 0) return nullptr;
  const absl::Span<HloInstruction* const> operands = inst->operands().span();  // decoded once
  return static_cast<size_t>(i) < operands.size() ? operands[static_cast<size_t>(i)] : nullptr;
}

bool Is(const HloInstruction* inst, HloOpcode opcode) {
  return inst != nullptr && inst->opcode() == opcode;
}

// The dot operand a matcher looks at; nullptr unless `dot` is a dot with
// that operand.
const HloInstruction* DotOperand(const HloInstruction* dot, int64_t i) {
  if (!Is(dot, HloOpcode::kDot)) return nullptr;
  return OperandOrNull(dot, i);
}

bool IsReshapeOfAllGather(const HloInstruction* inst) {
  return Is(inst, HloOpcode::kReshape) && Is(OperandOrNull(inst, 0), HloOpcode::kAllGather);
}

// The ops WeightInLHS/RHS see through: the seed's pattern set {parameter,
// gte, convert, reshape} (the parameter ends the walk), plus the
// all-gather the matcher already found between the dot and the weight.
// bitcast and copy only with the opt-in wider chain
// (PassOptions::weight_chain_copy_bitcast; beyond the original).
bool IsWeightPlumbing(HloOpcode opcode, bool copy_bitcast) {
  switch (opcode) {
    case HloOpcode::kReshape:
    case HloOpcode::kConvert:
    case HloOpcode::kGetTupleElement:
    case HloOpcode::kAllGather:
      return true;
    case HloOpcode::kBitcast:
    case HloOpcode::kCopy:
      return copy_bitcast;
    default:
      return false;
  }
}

}  // namespace

bool MatchAllGatherInDotLhs(const HloInstruction* dot) {
  return Is(DotOperand(dot, 0), HloOpcode::kAllGather);
}

bool MatchAllGatherInDotLhsRS(const HloInstruction* dot) {
  return IsReshapeOfAllGather(DotOperand(dot, 0));
}

bool MatchAllGatherInDotRhs(const HloInstruction* dot) {
  return Is(DotOperand(dot, 1), HloOpcode::kAllGather);
}

bool MatchAllGatherInDotRhsRS(const HloInstruction* dot) {
  return IsReshapeOfAllGather(DotOperand(dot, 1));
}

bool MatchAllGatherInDotLhsNxD(const HloInstruction* dot) {
  const HloInstruction* reshape = DotOperand(dot, 0);
  if (!Is(reshape, HloOpcode::kReshape)) return false;
  const HloInstruction* gte = OperandOrNull(reshape, 0);
  if (!Is(gte, HloOpcode::kGetTupleElement)) return false;
  if (!Is(OperandOrNull(gte, 0), HloOpcode::kAllGather)) return false;
  // The data element, not the rank-0 ordering token (that one is #64's).
  return gte->shape().IsArray() && gte->shape().rank() >= 1;
}

HloInstruction* GetRootAllGather(HloInstruction* inst, int depth) {
  for (int hop = 0; inst != nullptr; ++hop) {
    if (inst->opcode() == HloOpcode::kAllGather) return inst;
    if (hop >= depth || inst->operands().empty()) return nullptr;
    inst = inst->mutable_operand(0);
  }
  return nullptr;
}

const HloInstruction* GetRootAllGather(const HloInstruction* inst, int depth) {
  return GetRootAllGather(const_cast<HloInstruction*>(inst), depth);
}

bool IsConvertGetTupleElementParameter(const HloInstruction* inst) {
  if (!Is(inst, HloOpcode::kConvert)) return false;
  const HloInstruction* gte = OperandOrNull(inst, 0);
  if (!Is(gte, HloOpcode::kGetTupleElement)) return false;
  return Is(OperandOrNull(OperandOrNull(gte, 0), 0), HloOpcode::kParameter);
}

const HloInstruction* FindWeightParameter(const HloInstruction* start, bool copy_bitcast) {
  const HloInstruction* inst = start;
  for (int hop = 0; inst != nullptr; ++hop) {
    if (inst->opcode() == HloOpcode::kParameter) return inst;
    if (IsConvertGetTupleElementParameter(inst)) return inst->operand(0)->operand(0)->operand(0);
    if (hop >= kWeightSearchHops || !IsWeightPlumbing(inst->opcode(), copy_bitcast)) return nullptr;
    inst = OperandOrNull(inst, 0);
  }
  return nullptr;
}

const HloInstruction* WeightInLHS(const HloInstruction* dot, bool copy_bitcast) {
  return FindWeightParameter(DotOperand(dot, 0), copy_bitcast);
}

const HloInstruction* WeightInRHS(const HloInstruction* dot, bool copy_bitcast) {
  return FindWeightParameter(DotOperand(dot, 1), copy_bitcast);
}

}  // namespace hilo

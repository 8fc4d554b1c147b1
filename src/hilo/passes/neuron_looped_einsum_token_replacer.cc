#include "hilo/passes/neuron_looped_einsum_token_replacer.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "hilo/ir/hlo_computation.h"
#include "hilo/passes/neuron_looped_einsum_replacer.h"

namespace hilo {
namespace {

// Rank 0 as the original tests it (array_state() >> 1 == 0): a scalar or a
// token; a tuple is not rank 0.
bool IsRankZero(const Shape& shape) { return !shape.IsTuple() && shape.rank() == 0; }

}  // namespace

absl::StatusOr<bool> NeuronLoopedEinsumTokenReplacer::Run(HloModule* module) {
  warnings_.clear();
  candidates_.clear();
  replaced_ = 0;
  nxd_ = options_.collective_matmul_nxd.has_value()
             ? *options_.collective_matmul_nxd
             : LoopedEinsumEnvVarSetToOne(kCollectiveMatmulNxdEnv, &warnings_);
  // Without the gate nothing is replaced: the walk would only list the
  // candidates, for the explanations nobody asked for.
  if (!nxd_ && !options_.record_details) return false;
  return OpExpanderPass::Run(module);
}

absl::Span<const HloOpcode> NeuronLoopedEinsumTokenReplacer::OfferedOpcodes() const {
  static constexpr HloOpcode kGetTupleElementOnly[] = {HloOpcode::kGetTupleElement};
  return kGetTupleElementOnly;
}

bool NeuronLoopedEinsumTokenReplacer::InstructionMatchesPattern(HloInstruction* instruction) {
  // The original tests the gate first; the candidate is still listed when
  // the gate is off, so --explain can say why nothing happened.
  if (instruction->opcode() != HloOpcode::kGetTupleElement || instruction->operand_count() < 1) {
    return false;
  }
  const HloInstruction* ag = instruction->operand(0);
  if (ag->opcode() != HloOpcode::kAllGather || !IsRankZero(instruction->shape())) return false;
  const bool match = nxd_ && ag->operand_count() >= 2 &&
                     ag->operand(1)->shape().Compatible(instruction->shape());
  replaced_ += match ? 1 : 0;
  if (!options_.record_details) return match;
  Candidate c;
  c.computation = instruction->parent() != nullptr ? std::string(instruction->parent()->name()) : "";
  c.gte = std::string(instruction->name());
  c.all_gather = std::string(ag->name());
  if (!nxd_) {
    c.reason = absl::StrCat(kCollectiveMatmulNxdEnv, " is not 1 (and --collective-matmul-nxd is not given)");
  } else if (ag->operand_count() < 2) {
    c.reason = absl::StrCat("the all-gather has ", ag->operand_count(),
                            " operand(s), so there is no operand 1 to reroute to");
  } else if (!match) {
    c.reason = absl::StrCat("the all-gather's operand 1 %", ag->operand(1)->name(), " is ",
                            ag->operand(1)->shape().ToString(false), ", not the gte's ",
                            instruction->shape().ToString(false));
  } else {
    c.replaced = true;
    c.replacement = std::string(ag->operand(1)->name());
  }
  candidates_.push_back(std::move(c));
  return match;
}

absl::StatusOr<HloInstruction*> NeuronLoopedEinsumTokenReplacer::ExpandInstruction(
    HloInstruction* gte) {
  // Pure rerouting: an existing instruction, nothing added.
  return gte->mutable_operand(0)->mutable_operand(1);
}

std::string NeuronLoopedEinsumTokenReplacer::ChangeSummary() const {
  if (replaced_ == 0) return "";
  return absl::StrCat("rerouted ", CountOf(replaced_, "all-gather token use"),
                      " to the all-gather's token operand");
}

std::vector<std::string> NeuronLoopedEinsumTokenReplacer::Explanations() const {
  std::vector<std::string> lines;
  lines.reserve(candidates_.size());
  for (const Candidate& c : candidates_) {
    std::string where = absl::StrCat("%", c.gte, " in ", c.computation, " (rank-0 get-tuple-element of %",
                                     c.all_gather, ")");
    if (c.replaced) {
      lines.push_back(absl::StrCat(where, ": replaced by the all-gather's operand 1 %", c.replacement));
    } else {
      lines.push_back(absl::StrCat(where, ": left alone: ", c.reason));
    }
  }
  return lines;
}

nlohmann::json NeuronLoopedEinsumTokenReplacer::ReportDetails() const {
  nlohmann::json entries = nlohmann::json::array();
  int64_t replaced = 0;
  for (const Candidate& c : candidates_) {
    nlohmann::json e = {{"computation", c.computation},
                        {"get_tuple_element", c.gte},
                        {"all_gather", c.all_gather},
                        {"replaced", c.replaced}};
    if (c.replaced) {
      ++replaced;
      e["replacement"] = c.replacement;
    } else {
      e["reason"] = c.reason;
    }
    entries.push_back(std::move(e));
  }
  return {{"nxd", nxd_}, {"replaced", replaced}, {"candidates", std::move(entries)}};
}

}  // namespace hilo

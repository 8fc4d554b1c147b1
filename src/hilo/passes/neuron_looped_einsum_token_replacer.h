// NeuronLoopedEinsumTokenReplacer (`neuron_looped_einsum_token_replacer`,
// seed 000, #64): the cleanup companion of neuron_looped_einsum_replacer.
//
// Only when NEURON_COLLECTIVE_MATMUL_NXD is 1 (or the collective_matmul_nxd
// flag says so): every rank-0 get-tuple-element whose operand is an
// all-gather (the ordering token of `(data, token) all-gather(w, token)`)
// is replaced by that all-gather's operand 1, an existing instruction:
// nothing is added. Once its users are rerouted the gte, and the all-gather
// if nothing else uses it, are removed.
//
// Left alone (with the reason in Explanations()): an all-gather with fewer
// than 2 operands, and an operand 1 whose shape is not the gte's (XLA would
// abort replacing one with the other; hilo explains instead).
#ifndef HILO_PASSES_NEURON_LOOPED_EINSUM_TOKEN_REPLACER_H_
#define HILO_PASSES_NEURON_LOOPED_EINSUM_TOKEN_REPLACER_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "hilo/ir/hlo_module.h"
#include "hilo/pass/op_expander_pass.h"
#include "hilo/pass/pass_options.h"

namespace hilo {

class NeuronLoopedEinsumTokenReplacer : public OpExpanderPass {
 public:
  static constexpr absl::string_view kName = "neuron_looped_einsum_token_replacer";

  NeuronLoopedEinsumTokenReplacer() = default;
  explicit NeuronLoopedEinsumTokenReplacer(const PassOptions& options) : options_(options) {}

  absl::string_view name() const override { return kName; }
  absl::StatusOr<bool> Run(HloModule* module) override;
  nlohmann::json ReportDetails() const override;
  std::vector<std::string> Warnings() const override { return warnings_; }
  std::vector<std::string> Explanations() const override;
  std::string ChangeSummary() const override;

  // One entry per rank-0 get-tuple-element of an all-gather seen by the
  // last Run (none without PassOptions::record_details).
  struct Candidate {
    std::string computation;
    std::string gte;
    std::string all_gather;
    bool replaced = false;
    std::string replacement;  // operand 1's name, when replaced
    std::string reason;       // why not, otherwise
  };
  const std::vector<Candidate>& candidates() const { return candidates_; }
  bool nxd() const { return nxd_; }

 protected:
  bool InstructionMatchesPattern(HloInstruction* instruction) override;
  absl::Span<const HloOpcode> OfferedOpcodes() const override;
  absl::StatusOr<HloInstruction*> ExpandInstruction(HloInstruction* instruction) override;

 private:
  PassOptions options_;
  bool nxd_ = false;
  int64_t replaced_ = 0;  // candidates replaced by the last Run
  std::vector<Candidate> candidates_;
  std::vector<std::string> warnings_;
};

}  // namespace hilo

#endif  // HILO_PASSES_NEURON_LOOPED_EINSUM_TOKEN_REPLACER_H_

// NeuronCollectiveStreamIdInjector (`aws_neuron_collective_stream_id_injector`):
// stamps a `stream_id` frontend attribute ("0" or "1") on every collective
// that carries replica groups (IsTypedCollective).
//
// Three scans over the computations in module order (seed 001, #81):
//  1. TP exemplar: per computation, in post order, the first typed
//     collective whose shape is not all-integer and whose `collective_type`
//     is `tp_reduce_scatter` or `tp_all_gather` sets group0; a later
//     computation overwrites it.
//  2. FSDP exemplar: the same with `fsdp_reduce_scatter` / `fsdp_all_gather`
//     into group1.
//  3. Every typed collective, in written order, integer-typed or not, gets
//     stream_id "0" if its replica groups equal group0, else "1" if they
//     equal group1, else "0" (ReplicaGroupsEqual; no attribute = `{}`; an
//     exemplar that was never found is `{}` too).
// Run returns true iff an exemplar was found; stamping happens either way
// (the original's quirk). With skip_when_stream_ids_present, a module where
// CollectiveStreamIdChecker finds a stream_id is left alone and the report
// says so. See docs/passes/stream-and-channel-ids.md.
#ifndef HILO_PASSES_NEURON_COLLECTIVE_STREAM_ID_INJECTOR_H_
#define HILO_PASSES_NEURON_COLLECTIVE_STREAM_ID_INJECTOR_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "hilo/ir/hlo_module.h"
#include "hilo/ir/replica_groups.h"
#include "hilo/pass/hlo_pass_interface.h"
#include "hilo/pass/pass_options.h"

namespace hilo {

inline constexpr absl::string_view kCollectiveTypeAttribute = "collective_type";

class NeuronCollectiveStreamIdInjector : public HloPassInterface {
 public:
  static constexpr absl::string_view kName = "aws_neuron_collective_stream_id_injector";

  NeuronCollectiveStreamIdInjector() = default;
  explicit NeuronCollectiveStreamIdInjector(const PassOptions& options,
                                            bool skip_when_stream_ids_present = false)
      : skip_when_stream_ids_present_(skip_when_stream_ids_present) {}

  absl::string_view name() const override { return kName; }
  absl::StatusOr<bool> Run(HloModule* module) override;
  nlohmann::json ReportDetails() const override;
  std::vector<std::string> Warnings() const override { return warnings_; }
  std::vector<std::string> Explanations() const override;
  std::string ChangeSummary() const override;
  // It only stamps the stream_id frontend attribute.
  ChangeScope change_scope() const override { return ChangeScope::kFrontendAttributesOnly; }

  // Where an exemplar of the last Run came from.
  struct Exemplar {
    std::string computation;
    std::string instruction;
    std::string collective_type;
    ReplicaGroups groups;
  };
  const std::optional<Exemplar>& tp_exemplar() const { return tp_; }
  const std::optional<Exemplar>& fsdp_exemplar() const { return fsdp_; }
  // True if the last Run did nothing because stream ids were present.
  bool skipped() const { return skipped_; }

 private:
  bool skip_when_stream_ids_present_ = false;

  // State of the last Run, for the report.
  bool skipped_ = false;
  std::optional<Exemplar> tp_;
  std::optional<Exemplar> fsdp_;
  // Why a collective got its stream.
  enum class Reason : uint8_t { kTpGroups, kFsdpGroups, kNeither };
  // The instruction is kept by pointer (copying ~100k names costs more than
  // the pass): ReportDetails() and Explanations() describe the module as the
  // last Run left it and must be read before the module changes, as
  // HloPassPipeline does (it reads them right after Run).
  // 16 bytes and trivially copyable: one is recorded per collective
  // (~100k on a large module), so it must cost next to nothing.
  struct Stamp {
    static constexpr int32_t kNoPrevious = -1;
    const HloInstruction* instruction;
    char stream;
    Reason reason;
    // Index into previous_stream_ids_ of the stream_id it had, or kNoPrevious.
    int32_t previous;
  };
  std::vector<Stamp> stamps_;
  std::vector<std::string> previous_stream_ids_;
  std::vector<std::string> warnings_;
};

}  // namespace hilo

#endif  // HILO_PASSES_NEURON_COLLECTIVE_STREAM_ID_INJECTOR_H_

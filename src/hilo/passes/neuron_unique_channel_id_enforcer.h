// NeuronUniqueChannelIdEnforcer (`neuron_unique_channel_id_enforcer`):
// makes channel_id unique among the collectives of IsCollective (seed 001, #82).
//
// next = NextChannelId(module); for every computation in module order and
// every instruction in written order that IsCollective: if its channel_id
// (a missing one included, as a value of its own) was seen before, it gets
// `next`, which is recorded as seen, and next grows by one; otherwise its id
// is recorded. First seen wins. Returns whether anything was renumbered.
//
// The faithful algorithm has two hazards, reported as warnings (not fixed):
// a collective that gets an id it lacked changes its group mode, and so the
// devices that take part, when the module has more than one partition, or
// (collective-permute, all-to-all: cross_partition) more than one replica;
// and a renumbered send/recv no longer
// matches its send-done/recv-done and its peer. With
// PassOptions::unique_channel_ids_skip_send_recv send/recv are left alone.
// See docs/passes/stream-and-channel-ids.md.
#ifndef HILO_PASSES_NEURON_UNIQUE_CHANNEL_ID_ENFORCER_H_
#define HILO_PASSES_NEURON_UNIQUE_CHANNEL_ID_ENFORCER_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "hilo/ir/hlo_module.h"
#include "hilo/pass/hlo_pass_interface.h"
#include "hilo/pass/pass_options.h"

namespace hilo {

class NeuronUniqueChannelIdEnforcer : public HloPassInterface {
 public:
  static constexpr absl::string_view kName = "neuron_unique_channel_id_enforcer";

  NeuronUniqueChannelIdEnforcer() = default;
  explicit NeuronUniqueChannelIdEnforcer(const PassOptions& options)
      : skip_send_recv_(options.unique_channel_ids_skip_send_recv) {}

  absl::string_view name() const override { return kName; }
  absl::StatusOr<bool> Run(HloModule* module) override;
  nlohmann::json ReportDetails() const override;
  std::vector<std::string> Warnings() const override { return warnings_; }
  std::vector<std::string> Explanations() const override;
  std::string ChangeSummary() const override;

  struct Renumbering {
    std::string computation;
    std::string instruction;
    std::string opcode;
    std::optional<int64_t> old_id;
    int64_t new_id;
  };
  const std::vector<Renumbering>& renumbered() const { return renumbered_; }

 private:
  bool skip_send_recv_ = false;

  // State of the last Run, for the report.
  int64_t first_new_id_ = 0;
  std::vector<Renumbering> renumbered_;
  std::vector<std::string> warnings_;
};

}  // namespace hilo

#endif  // HILO_PASSES_NEURON_UNIQUE_CHANNEL_ID_ENFORCER_H_

#include "hilo/passes/collective_stream_id_checker.h"

#include "hilo/analysis/collective_predicates.h"
#include "hilo/ir/hlo_computation.h"

namespace hilo {

bool CollectiveStreamIdChecker::AnyCollectiveHasStreamId(const HloModule& module) {
  for (const HloComputation* computation : module.computations()) {
    for (const HloInstruction* instruction : computation->instructions()) {
      if (!IsStreamIdCheckedCollective(*instruction)) continue;
      if (instruction->frontend_attributes().Contains(kStreamIdAttribute)) return true;
    }
  }
  return false;
}

absl::StatusOr<bool> CollectiveStreamIdChecker::Run(HloModule* module) {
  stream_id_present_ = AnyCollectiveHasStreamId(*module);
  // The original returns {OK, false} whatever it found: it is a query.
  return false;
}

nlohmann::json CollectiveStreamIdChecker::ReportDetails() const {
  nlohmann::json details = nlohmann::json::object();
  details["stream_id_present"] = stream_id_present_;
  return details;
}

}  // namespace hilo

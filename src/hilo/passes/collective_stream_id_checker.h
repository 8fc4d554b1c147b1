// CollectiveStreamIdChecker (`collective-stream-id-checker`): a read-only
// presence detector. It reports whether any collective of the checker's set
// (IsStreamIdCheckedCollective) already carries a `stream_id` frontend
// attribute. It never changes the module and Run always returns false; the
// answer is stream_id_present() and `"stream_id_present"` in the report.
// See docs/passes/stream-and-channel-ids.md.
#ifndef HILO_PASSES_COLLECTIVE_STREAM_ID_CHECKER_H_
#define HILO_PASSES_COLLECTIVE_STREAM_ID_CHECKER_H_

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "hilo/ir/hlo_module.h"
#include "hilo/pass/hlo_pass_interface.h"
#include "hilo/pass/pass_options.h"

namespace hilo {

inline constexpr absl::string_view kStreamIdAttribute = "stream_id";

class CollectiveStreamIdChecker : public HloPassInterface {
 public:
  static constexpr absl::string_view kName = "collective-stream-id-checker";

  CollectiveStreamIdChecker() = default;
  explicit CollectiveStreamIdChecker(const PassOptions& options) {}

  absl::string_view name() const override { return kName; }
  absl::StatusOr<bool> Run(HloModule* module) override;
  nlohmann::json ReportDetails() const override;

  // The result of the last Run.
  bool stream_id_present() const { return stream_id_present_; }

  // The predicate itself, for callers that only need the answer.
  static bool AnyCollectiveHasStreamId(const HloModule& module);
  // Whether any of `collectives` (instructions of the checker's set, e.g.
  // collected by a pass that needs them anyway) carries a stream_id.
  static bool AnyHasStreamId(absl::Span<HloInstruction* const> collectives);

 private:
  bool stream_id_present_ = false;
};

}  // namespace hilo

#endif  // HILO_PASSES_COLLECTIVE_STREAM_ID_CHECKER_H_

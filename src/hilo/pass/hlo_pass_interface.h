// HloPassInterface: one HLO-to-HLO transformation, as XLA lays its passes out.
#ifndef HILO_PASS_HLO_PASS_INTERFACE_H_
#define HILO_PASS_HLO_PASS_INTERFACE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "hilo/ir/hlo_module.h"
#include "nlohmann/json.hpp"

namespace hilo {

class HloPassInterface {
 public:
  virtual ~HloPassInterface() = default;

  // The registered name (`--passes=` and the report use it).
  virtual absl::string_view name() const = 0;

  // Runs the pass; true if the module changed.
  virtual absl::StatusOr<bool> Run(HloModule* module) = 0;

  // Pass-specific details of the last Run for the `--report` JSON entry
  // (the driver adds "name" and "changed"). An object; empty by default.
  virtual nlohmann::json ReportDetails() const { return nlohmann::json::object(); }

  // Warnings of the last Run: hilo-opt prints each on stderr as
  // `warning: <pass name>: <text>` and lists them in the report.
  virtual std::vector<std::string> Warnings() const { return {}; }

  // One human-readable line per candidate the last Run looked at, for
  // `hilo-opt --explain` (empty for passes with nothing to explain). A line
  // reads `<what>: <decision>`; hilo-opt groups lines whose decision is the
  // same.
  virtual std::vector<std::string> Explanations() const { return {}; }

  // What the last Run changed, in counts and words ("removed 3 dead
  // instructions"), or empty. Cheap: every report entry carries it as
  // "change_summary", and hilo-opt prints it for each pass that changed the
  // module.
  virtual std::string ChangeSummary() const { return ""; }

  // What a Run of this pass may change. kFrontendAttributesOnly: nothing
  // but frontend attributes, which VerifyHloModule does not read, so a
  // module that was valid before the pass is valid after it and
  // HloPassPipeline does not verify it again for this pass's sake (see
  // hlo_pass_pipeline.h). A pass may say so only if every change it makes
  // goes through mutable_frontend_attributes().
  enum class ChangeScope { kAnything, kFrontendAttributesOnly };
  virtual ChangeScope change_scope() const { return ChangeScope::kAnything; }

  // The instructions the last Run added, or whose operands it changed, or
  // that gained users, when the pass keeps that list; nullptr when it does
  // not. With a list, HloPassPipeline checks only these after the pass
  // (VerifyHloInstructions) instead of the whole module; an empty list
  // means the Run only removed instructions or computations. A pass may
  // keep a list only if all its changes are of that kind, made through
  // AddInstruction, ReplaceInstruction / ReplaceAllUsesWith and removal:
  // one that renames instructions or changes parameters returns nullptr.
  virtual const std::vector<const HloInstruction*>* touched_instructions() const {
    return nullptr;
  }
  // True when the last Run, with a touched list, proved that its changes
  // cannot have closed a cycle in a computation that had none: then the
  // check of the touched list leaves out the cycle search
  // (VerifyHloInstructions' `search_cycles`). OpExpanderPass says so when
  // each expansion vouched for it (NoteExpansionReadsOnlyAncestors).
  virtual bool touched_made_no_cycle() const { return false; }
};

// "1 dot", "3 dots" (`plural` when it is not `singular` + "s"), for
// ChangeSummary().
inline std::string CountOf(int64_t n, absl::string_view singular, absl::string_view plural = "") {
  if (n == 1) return absl::StrCat(n, " ", singular);
  if (plural.empty()) return absl::StrCat(n, " ", singular, "s");
  return absl::StrCat(n, " ", plural);
}

}  // namespace hilo

#endif  // HILO_PASS_HLO_PASS_INTERFACE_H_

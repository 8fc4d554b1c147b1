#include "hilo/pass/hlo_pass_pipeline.h"

#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "hilo/analysis/hlo_verifier.h"
#include "hilo/ir/env_switch.h"

namespace hilo {

HloPassInterface* HloPassPipeline::AddPass(std::unique_ptr<HloPassInterface> pass,
                                           SkipCondition skip_condition) {
  HloPassInterface* raw = pass.get();
  passes_.push_back(Entry{std::move(pass), std::move(skip_condition)});
  return raw;
}

absl::Status HloPassPipeline::InvalidAfter(absl::string_view pass_name,
                                          const absl::Status& verified) {
  return absl::InternalError(
      absl::StrCat("module is invalid after pass '", pass_name, "': ", verified.message()));
}

nlohmann::json HloPassPipeline::MakeReportEntry(const HloPassInterface& pass, bool changed,
                                                bool with_details) {
  nlohmann::json entry = nlohmann::json::object();
  nlohmann::json details = with_details ? pass.ReportDetails() : nlohmann::json();
  if (details.is_object()) {
    for (auto it = details.begin(); it != details.end(); ++it) entry[it.key()] = it.value();
  } else if (!details.is_null()) {
    entry["details"] = std::move(details);
  }
  // The driver's keys win over a pass that happens to use the same ones.
  entry["name"] = std::string(pass.name());
  entry["changed"] = changed;
  nlohmann::json warnings = nlohmann::json::array();
  for (const std::string& warning : pass.Warnings()) warnings.push_back(warning);
  entry["warnings"] = std::move(warnings);
  // Always there, details or not: the driver's summary line is this.
  if (std::string summary = pass.ChangeSummary(); !summary.empty()) {
    entry["change_summary"] = std::move(summary);
  }
  return entry;
}

absl::StatusOr<bool> HloPassPipeline::Run(HloModule* module) {
  bool changed = false;
  // Whether a pass changed something the verifier reads.
  bool needs_verification = false;
  // HILO_VERIFY_ATTRIBUTE_CHANGES=1: verify at the end after a pass that
  // only changed frontend attributes too (the switch of that saving).
  const bool verify_attribute_changes = EnvSwitchIsOne("HILO_VERIFY_ATTRIBUTE_CHANGES");
  // HILO_VERIFY_FULL=1: verify the whole module at the end even after passes
  // that list what they touched (the switch of that saving).
  const bool verify_full = EnvSwitchIsOne("HILO_VERIFY_FULL");
  int64_t passes_run = 0;
  std::vector<absl::string_view> changed_by;  // for the message of a failed final check
  for (Entry& item : passes_) {
    HloPassInterface& pass = *item.pass;
    if (item.skip_condition) {
      std::optional<std::string> reason = item.skip_condition(*module);
      if (reason.has_value()) {
        nlohmann::json entry = nlohmann::json::object();
        entry["name"] = std::string(pass.name());
        entry["changed"] = false;
        entry["skipped"] = *reason;
        entry["warnings"] = nlohmann::json::array();
        explanations_.push_back(absl::StrCat(pass.name(), ": skipped: ", *reason));
        entries_.push_back(entry);
        if (observer_) observer_(pass, entry);
        continue;
      }
    }
    absl::StatusOr<bool> pass_changed = pass.Run(module);
    if (!pass_changed.ok()) {
      return absl::Status(pass_changed.status().code(),
                          absl::StrCat("pass '", pass.name(), "': ",
                                       pass_changed.status().message()));
    }
    changed |= *pass_changed;
    ++passes_run;
    // A pass that lists what it touched is checked there, right away (a
    // later pass may remove what the list points to); the others leave it
    // to one verification of the whole module at the end.
    bool verify_touched = false;
    if (*pass_changed) {
      changed_by.push_back(pass.name());
      const bool structural = verify_attribute_changes ||
                              pass.change_scope() != ChangeScope::kFrontendAttributesOnly;
      verify_touched = structural && !verify_full && pass.touched_instructions() != nullptr;
      needs_verification |= structural && !verify_touched;
    }
    nlohmann::json entry = MakeReportEntry(pass, *pass_changed, collect_report_details_);
    for (const std::string& warning : pass.Warnings()) {
      warnings_.push_back(absl::StrCat(pass.name(), ": ", warning));
    }
    if (collect_explanations_) {
      for (const std::string& line : pass.Explanations()) {
        explanations_.push_back(absl::StrCat(pass.name(), ": ", line));
      }
    }
    if (observer_) observer_(pass, entry);
    entries_.push_back(std::move(entry));
    if (verification_ == Verification::kEachPass) {
      absl::Status verified = VerifyHloModule(*module);
      if (!verified.ok()) return InvalidAfter(pass.name(), verified);
    } else if (verification_ == Verification::kAtEnd && verify_touched) {
      // HILO_TOUCHED_NO_CYCLE_PROOF=0: search for cycles even when the pass
      // proved its change made none (the switch of this saving,
      // docs/performance.md).
      const bool search_cycles =
          !pass.touched_made_no_cycle() || EnvSwitchIsZero("HILO_TOUCHED_NO_CYCLE_PROOF");
      absl::Status verified =
          VerifyHloInstructions(*module, *pass.touched_instructions(), search_cycles);
      if (!verified.ok()) return InvalidAfter(pass.name(), verified);
    }
  }
  if (verification_ == Verification::kAtEnd && needs_verification) {
    absl::Status verified = VerifyHloModule(*module);
    if (!verified.ok()) {
      if (passes_run == 1) return InvalidAfter(changed_by.front(), verified);
      return absl::InternalError(absl::StrCat(
          "module is invalid after the passes (verified once, after the last; changed by '",
          absl::StrJoin(changed_by, "', '"),
          "'; which pass broke it is not known: rerun with --verify-each to verify after each "
          "pass and name it): ",
          verified.message()));
    }
  }
  return changed;
}

nlohmann::json HloPassPipeline::ReportDetails() const {
  nlohmann::json passes = nlohmann::json::array();
  for (const nlohmann::json& entry : entries_) passes.push_back(entry);
  nlohmann::json details = nlohmann::json::object();
  details["passes"] = std::move(passes);
  return details;
}

std::vector<std::string> HloPassPipeline::Warnings() const { return warnings_; }

std::vector<std::string> HloPassPipeline::Explanations() const { return explanations_; }

}  // namespace hilo

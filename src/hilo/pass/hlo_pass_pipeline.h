// HloPassPipeline: an ordered list of passes run one after the other on a
// module, as XLA's HloPassPipeline does.
//
// The module is verified (VerifyHloModule) once, after the last pass, when
// a pass changed it (the default, kAtEnd), as XLA's pipelines run their
// invariant checkers only when asked: verifying after every pass cost as
// much as the passes themselves (docs/performance.md). Passes whose
// change_scope() is kFrontendAttributesOnly do not count as changing it
// for this (the verifier does not read frontend attributes; a full
// verification of the generated 374k-instruction module costs ~12% of its
// round trip); the environment variable HILO_VERIFY_ATTRIBUTE_CHANGES=1
// counts them too, to measure that. A pass that lists the instructions it
// touched (HloPassInterface::touched_instructions) is checked right after
// it, on those only (VerifyHloInstructions), and does not count either;
// HILO_VERIFY_FULL=1 turns that off. kEachPass verifies
// after every pass that ran, so that the pass that broke the module is
// named (hilo-opt --verify-each); kNone never verifies (hilo-opt
// --no-verify). Either way a broken module is caught here, not by whoever
// reads it next. The input is assumed valid. Each pass run leaves one
// report entry
//   {"name": ..., "changed": bool, <the pass's ReportDetails()>, "warnings": [...],
//    "change_summary": "..." (when the pass has one)}
// (a pass skipped by its run condition also gets "skipped": "<reason>").
// Entries accumulate over every Run of the pipeline until ClearReport().
//
// Errors: a pass's own error keeps its status code and gets the pass name
// in front ("pass 'dce': ..."). A module the verifier rejects is an Internal
// error (the input was valid, a pass broke it): under kEachPass, or when
// one pass ran, "module is invalid after pass '<pass>': ..."; otherwise
// which pass broke it is not known, and the message lists the passes that
// changed the module and suggests --verify-each.
#ifndef HILO_PASS_HLO_PASS_PIPELINE_H_
#define HILO_PASS_HLO_PASS_PIPELINE_H_

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "hilo/ir/hlo_module.h"
#include "hilo/pass/hlo_pass_interface.h"
#include "nlohmann/json.hpp"

namespace hilo {

class HloPassPipeline : public HloPassInterface {
 public:
  // Decides, just before a pass would run, whether it is skipped: a reason
  // to skip it, or nullopt to run it. May look at passes that ran earlier
  // in the pipeline (their objects live as long as the pipeline).
  using SkipCondition = std::function<std::optional<std::string>(const HloModule&)>;

  // When the module is verified (see the top of this file).
  enum class Verification { kNone, kAtEnd, kEachPass };

  // Called after each pass ran (or was skipped), before the verifier runs,
  // with the pass and its report entry; hilo-opt prints warnings and
  // explanations from here so they appear even when the verifier then
  // rejects the module.
  using PassObserver =
      std::function<void(const HloPassInterface& pass, const nlohmann::json& entry)>;

  explicit HloPassPipeline(std::string name = "pipeline") : name_(std::move(name)) {}

  absl::string_view name() const override { return name_; }

  // Appends a pass; returns it so callers can keep a handle (for a later
  // SkipCondition, or to read its results after Run).
  HloPassInterface* AddPass(std::unique_ptr<HloPassInterface> pass,
                            SkipCondition skip_condition = nullptr);
  template <typename T, typename... Args>
  T* AddPass(Args&&... args) {
    auto pass = std::make_unique<T>(std::forward<Args>(args)...);
    T* raw = pass.get();
    AddPass(std::move(pass));
    return raw;
  }

  int64_t pass_count() const { return static_cast<int64_t>(passes_.size()); }
  HloPassInterface* pass(int64_t i) const { return passes_[i].pass.get(); }

  void set_verification(Verification verification) { verification_ = verification; }
  Verification verification() const { return verification_; }
  void set_observer(PassObserver observer) { observer_ = std::move(observer); }
  // Whether report entries carry each pass's ReportDetails(), and whether
  // Explanations() gathers each pass's lines (both on by default). A driver
  // that writes no report and explains nothing turns them off: on a large
  // module the details of the stream-id passes alone are hundreds of
  // thousands of JSON values and strings, built for nobody.
  void set_collect_report_details(bool collect) { collect_report_details_ = collect; }
  void set_collect_explanations(bool collect) { collect_explanations_ = collect; }

  // Runs every pass in order; true if any changed the module. Stops at the
  // first error (the entries of the passes that ran are kept).
  absl::StatusOr<bool> Run(HloModule* module) override;

  // Report entries of every pass run so far, in run order.
  const std::vector<nlohmann::json>& report_entries() const { return entries_; }
  void ClearReport() { entries_.clear(); }

  // As a pass inside another pipeline: {"passes": [entries]}.
  nlohmann::json ReportDetails() const override;
  // Warnings of every pass run so far, each as "<pass>: <text>".
  std::vector<std::string> Warnings() const override;
  // Explanations of every pass run so far, each as "<pass>: <text>".
  std::vector<std::string> Explanations() const override;

  // Builds one report entry for `pass` after a run (without the pass's
  // ReportDetails() when `with_details` is false).
  static nlohmann::json MakeReportEntry(const HloPassInterface& pass, bool changed,
                                        bool with_details = true);

 private:
  struct Entry {
    std::unique_ptr<HloPassInterface> pass;
    SkipCondition skip_condition;
  };

  // "module is invalid after pass '<pass>': <verifier message>".
  static absl::Status InvalidAfter(absl::string_view pass_name, const absl::Status& verified);

  std::string name_;
  std::vector<Entry> passes_;
  Verification verification_ = Verification::kAtEnd;
  bool collect_report_details_ = true;
  bool collect_explanations_ = true;
  PassObserver observer_;
  std::vector<nlohmann::json> entries_;
  std::vector<std::string> warnings_;
  std::vector<std::string> explanations_;
};

}  // namespace hilo

#endif  // HILO_PASS_HLO_PASS_PIPELINE_H_

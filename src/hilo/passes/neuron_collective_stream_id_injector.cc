#include "hilo/passes/neuron_collective_stream_id_injector.h"

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "hilo/analysis/collective_predicates.h"
#include "hilo/ir/hlo_computation.h"
#include "hilo/passes/collective_stream_id_checker.h"

namespace hilo {
namespace {

enum class Kind { kNone, kTp, kFsdp };

// Whether `instruction` is a candidate of discovery scan 1 (TP) or 2 (FSDP):
// typed, not integer-typed, tagged with one of the four collective_type
// values.
Kind ExemplarKind(const HloInstruction& instruction) {
  if (!IsTypedCollective(instruction)) return Kind::kNone;
  const std::string* type = instruction.frontend_attributes().Find(kCollectiveTypeAttribute);
  if (type == nullptr) return Kind::kNone;
  Kind kind = Kind::kNone;
  if (*type == "tp_reduce_scatter" || *type == "tp_all_gather") kind = Kind::kTp;
  if (*type == "fsdp_reduce_scatter" || *type == "fsdp_all_gather") kind = Kind::kFsdp;
  if (kind == Kind::kNone || instruction.shape().AreAllLeavesIntegers()) return Kind::kNone;
  return kind;
}

}  // namespace

absl::StatusOr<bool> NeuronCollectiveStreamIdInjector::Run(HloModule* module) {
  skipped_ = false;
  tp_.reset();
  fsdp_.reset();
  stamps_.clear();
  warnings_.clear();

  if (skip_when_stream_ids_present_ &&
      CollectiveStreamIdChecker::AnyCollectiveHasStreamId(*module)) {
    skipped_ = true;
    return false;
  }

  const std::vector<HloComputation*> computations = module->computations();

  // Scans 1 and 2 are independent walks with the same shape; doing both in
  // one sweep over each computation gives the same exemplars (each keeps its
  // own "first in this computation in post order, last computation wins"
  // rule). The post order is only walked when the written order could
  // disagree with it (more than one candidate of a kind), and only until
  // the first candidate of each needed kind.
  for (const HloComputation* computation : computations) {
    const HloInstruction* first_tp = nullptr;
    const HloInstruction* first_fsdp = nullptr;
    int64_t tp_count = 0, fsdp_count = 0;
    for (const HloInstruction* instruction : computation->instructions()) {
      switch (ExemplarKind(*instruction)) {
        case Kind::kTp:
          if (tp_count++ == 0) first_tp = instruction;
          break;
        case Kind::kFsdp:
          if (fsdp_count++ == 0) first_fsdp = instruction;
          break;
        case Kind::kNone:
          break;
      }
    }
    if (tp_count > 1 || fsdp_count > 1) {
      const bool find_tp = tp_count > 1, find_fsdp = fsdp_count > 1;
      if (find_tp) first_tp = nullptr;
      if (find_fsdp) first_fsdp = nullptr;
      WalkPostOrderUntil(*computation, [&](const HloInstruction* instruction) {
        const Kind kind = ExemplarKind(*instruction);
        if (find_tp && first_tp == nullptr && kind == Kind::kTp) first_tp = instruction;
        if (find_fsdp && first_fsdp == nullptr && kind == Kind::kFsdp) first_fsdp = instruction;
        return (!find_tp || first_tp != nullptr) && (!find_fsdp || first_fsdp != nullptr);
      });
    }
    auto capture = [&](const HloInstruction* found, std::optional<Exemplar>* slot) {
      if (found == nullptr) return;
      *slot = Exemplar{computation->name(), found->name(),
                       *found->frontend_attributes().Find(kCollectiveTypeAttribute),
                       ReplicaGroupsOrEmpty(*found)};
    };
    capture(first_tp, &tp_);
    capture(first_fsdp, &fsdp_);
  }
  const bool exemplar_found = tp_.has_value() || fsdp_.has_value();

  // An exemplar that was not found is the empty group list, as in the
  // original (a default-constructed vector<ReplicaGroup>).
  const ReplicaGroupsMatcher group0(tp_.has_value() ? tp_->groups : ReplicaGroups());
  const ReplicaGroupsMatcher group1(fsdp_.has_value() ? fsdp_->groups : ReplicaGroups());

  int64_t empty_groups_on_stream1 = 0;
  for (const HloComputation* computation : computations) {
    for (HloInstruction* instruction : computation->instructions()) {
      if (!IsTypedCollective(*instruction)) continue;
      const ReplicaGroups& groups = ReplicaGroupsOrEmpty(*instruction);
      Reason reason;
      char stream;
      if (group0.Matches(groups)) {
        reason = Reason::kTpGroups;
        stream = '0';
      } else if (group1.Matches(groups)) {
        reason = Reason::kFsdpGroups;
        stream = '1';
        if (!fsdp_.has_value()) ++empty_groups_on_stream1;
      } else {
        reason = Reason::kNeither;
        stream = '0';
      }
      FrontendAttributes* attributes = instruction->mutable_frontend_attributes();
      std::optional<std::string> previous;
      if (const std::string* old = attributes->Find(kStreamIdAttribute)) previous = *old;
      attributes->Set(kStreamIdAttribute, absl::string_view(&stream, 1));
      stamps_.push_back(Stamp{instruction, stream, reason, std::move(previous)});
    }
  }

  if (empty_groups_on_stream1 > 0) {
    warnings_.push_back(absl::StrCat(
        empty_groups_on_stream1,
        " collective(s) with empty replica_groups {} got stream_id=\"1\": no FSDP exemplar "
        "was found, so the FSDP exemplar is the empty group list, which they equal (the "
        "original's behaviour)"));
  }

  // The original reports "changed" only when an exemplar was found, even
  // though scan 3 stamps every collective either way.
  return exemplar_found;
}

nlohmann::json NeuronCollectiveStreamIdInjector::ReportDetails() const {
  nlohmann::json details = nlohmann::json::object();
  // "skipped": "<reason>" is the report's convention (HloPassPipeline).
  if (skipped_) {
    details["skipped"] =
        "a collective already has a stream_id (collective-stream-id-checker); "
        "--force-stream-id-injection runs the injector anyway";
  }
  auto exemplar_json = [](const std::optional<Exemplar>& e) -> nlohmann::json {
    if (!e.has_value()) return nullptr;
    return {{"computation", e->computation},
            {"instruction", e->instruction},
            {"collective_type", e->collective_type},
            {"replica_groups", e->groups.ToString()}};
  };
  details["tp_exemplar"] = exemplar_json(tp_);
  details["fsdp_exemplar"] = exemplar_json(fsdp_);
  // Instruction names are unique in a module: each stream lists the names
  // it was given to, in module and written order; "overwritten" lists the
  // collectives that already had a stream_id, with the value they had.
  nlohmann::json stream0 = nlohmann::json::array();
  nlohmann::json stream1 = nlohmann::json::array();
  nlohmann::json overwritten = nlohmann::json::array();
  for (const Stamp& s : stamps_) {
    (s.stream == '1' ? stream1 : stream0).push_back(s.instruction->name());
    if (s.previous.has_value()) {
      overwritten.push_back({{"instruction", s.instruction->name()},
                             {"previous_stream_id", *s.previous},
                             {"stream_id", std::string(1, s.stream)}});
    }
  }
  nlohmann::json stamped = nlohmann::json::object();
  stamped["0"] = std::move(stream0);
  stamped["1"] = std::move(stream1);
  details["overwritten"] = std::move(overwritten);
  details["stamped"] = std::move(stamped);
  return details;
}

std::vector<std::string> NeuronCollectiveStreamIdInjector::Explanations() const {
  std::vector<std::string> lines;
  if (skipped_) {
    lines.push_back("skipped: a collective already has a stream_id");
    return lines;
  }
  lines.reserve(stamps_.size());
  for (const Stamp& s : stamps_) {
    // An exemplar that was not found is the empty group list: say so rather
    // than name an exemplar that does not exist.
    const char* why = "replica groups match neither exemplar";
    if (s.reason == Reason::kTpGroups) {
      why = tp_.has_value() ? "replica groups equal the TP exemplar"
                            : "replica groups are empty, as is the TP exemplar (none found)";
    } else if (s.reason == Reason::kFsdpGroups) {
      why = fsdp_.has_value() ? "replica groups equal the FSDP exemplar"
                              : "replica groups are empty, as is the FSDP exemplar (none found)";
    }
    lines.push_back(absl::StrCat(s.instruction->parent() != nullptr ? s.instruction->parent()->name() : "",
                                 "/", s.instruction->name(), ": stream_id=\"",
                                 absl::string_view(&s.stream, 1), "\" (", why, ")"));
  }
  return lines;
}

}  // namespace hilo

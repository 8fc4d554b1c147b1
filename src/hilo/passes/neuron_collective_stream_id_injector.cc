#include "hilo/passes/neuron_collective_stream_id_injector.h"

#include <cstdint>
#include <vector>

#include "absl/strings/str_cat.h"
#include "hilo/analysis/collective_predicates.h"
#include "hilo/ir/hlo_computation.h"
#include "hilo/ir/prefetch.h"
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
  previous_stream_ids_.clear();
  warnings_.clear();

  // Every typed collective, in module order and written order, from one
  // sweep over each computation's instructions (the checker's, when it ran
  // just before: ScanCollectives); `begin[c]` is where computation c's
  // start. The scans below only look at this list, and change no
  // instruction's opcode or place.
  const std::shared_ptr<const CollectiveScan> scan = ScanCollectives(*module);
  const std::vector<HloComputation*> computations = module->computations();
  const std::vector<HloInstruction*>& collectives = scan->typed;
  const std::vector<size_t>& begin = scan->typed_begin;

  // The checker's set is the typed collectives (IsStreamIdCheckedCollective
  // and IsTypedCollective are both the IR's one list), so its question is
  // asked of this list instead of another sweep of the module.
  if (skip_when_stream_ids_present_ && CollectiveStreamIdChecker::AnyHasStreamId(collectives)) {
    skipped_ = true;
    return false;
  }

  // Scans 1 and 2: in each, a later computation overwrites the exemplar, so
  // the result is the last computation that has a candidate of that kind.
  // Going from the last computation backwards, the first one with a
  // candidate decides and the earlier ones need no look. Within it, the
  // first candidate in post order is taken: when it is the only candidate
  // it is the first in written order too, so the post order is walked only
  // when there is a second one, and classifying stops once that is known.
  for (size_t c = computations.size(); c-- > 0 && !(tp_.has_value() && fsdp_.has_value());) {
    const bool need_tp = !tp_.has_value(), need_fsdp = !fsdp_.has_value();
    const HloInstruction* first_tp = nullptr;
    const HloInstruction* first_fsdp = nullptr;
    bool more_tp = false, more_fsdp = false;
    constexpr size_t kAhead = 8, kAheadEntries = 4;
    for (size_t i = begin[c]; i < begin[c + 1]; ++i) {
      if ((!need_tp || more_tp) && (!need_fsdp || more_fsdp)) break;
      if (i + kAhead < begin[c + 1]) {
        PrefetchLine(&collectives[i + kAhead]->frontend_attributes());
      }
      if (i + kAheadEntries < begin[c + 1]) {
        PrefetchLine(collectives[i + kAheadEntries]->frontend_attributes().entries().data());
      }
      const HloInstruction* instruction = collectives[i];
      auto note = [&](bool needed, const HloInstruction** first, bool* more) {
        if (!needed) return;
        if (*first == nullptr) {
          *first = instruction;
        } else {
          *more = true;
        }
      };
      switch (ExemplarKind(*instruction)) {
        case Kind::kTp:
          note(need_tp, &first_tp, &more_tp);
          break;
        case Kind::kFsdp:
          note(need_fsdp, &first_fsdp, &more_fsdp);
          break;
        case Kind::kNone:
          break;
      }
    }
    if (more_tp || more_fsdp) {
      if (more_tp) first_tp = nullptr;
      if (more_fsdp) first_fsdp = nullptr;
      WalkPostOrderUntil(*computations[c], [&](const HloInstruction* instruction) {
        const Kind kind = ExemplarKind(*instruction);
        if (more_tp && first_tp == nullptr && kind == Kind::kTp) first_tp = instruction;
        if (more_fsdp && first_fsdp == nullptr && kind == Kind::kFsdp) first_fsdp = instruction;
        return (!more_tp || first_tp != nullptr) && (!more_fsdp || first_fsdp != nullptr);
      });
    }
    auto capture = [&](const HloInstruction* found, std::optional<Exemplar>* slot) {
      if (found == nullptr) return;
      *slot = Exemplar{std::string(computations[c]->name()), std::string(found->name()),
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

  // Scan 3. Each collective's replica groups and attribute list live in
  // their own heap blocks: hint them a few collectives ahead, one level of
  // indirection per distance, so that the misses overlap.
  int64_t empty_groups_on_stream1 = 0;
  stamps_.reserve(collectives.size());
  const size_t n = collectives.size();
  constexpr size_t kAhead = 12, kAheadData = 6, kAheadGroups = 3;
  for (size_t i = 0; i < n; ++i) {
    if (i + kAhead < n) {
      PrefetchEnds(&collectives[i + kAhead]->replica_groups());
      PrefetchLine(&collectives[i + kAhead]->frontend_attributes());
    }
    if (i + kAheadData < n) {
      const HloInstruction* ahead = collectives[i + kAheadData];
      if (ahead->replica_groups().has_value()) {
        PrefetchLine(ahead->replica_groups()->explicit_groups().data());
      }
      PrefetchLine(ahead->frontend_attributes().entries().data());
    }
    if (i + kAheadGroups < n && collectives[i + kAheadGroups]->replica_groups().has_value()) {
      for (const std::vector<int64_t>& group :
           collectives[i + kAheadGroups]->replica_groups()->explicit_groups()) {
        PrefetchLine(group.data());
      }
    }
    HloInstruction* instruction = collectives[i];
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
    int32_t previous = Stamp::kNoPrevious;
    if (const std::string* old = attributes->Find(kStreamIdAttribute)) {
      previous = static_cast<int32_t>(previous_stream_ids_.size());
      previous_stream_ids_.push_back(*old);
    }
    attributes->Set(kStreamIdAttribute, absl::string_view(&stream, 1));
    stamps_.push_back(Stamp{instruction, stream, reason, previous});
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
    if (s.previous != Stamp::kNoPrevious) {
      overwritten.push_back({{"instruction", s.instruction->name()},
                             {"previous_stream_id", previous_stream_ids_[s.previous]},
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

std::string NeuronCollectiveStreamIdInjector::ChangeSummary() const {
  if (skipped_ || stamps_.empty()) return "";
  int64_t stream1 = 0;
  int64_t overwritten = 0;
  for (const Stamp& s : stamps_) {
    stream1 += s.stream == '1' ? 1 : 0;
    overwritten += s.previous != Stamp::kNoPrevious ? 1 : 0;
  }
  const int64_t stream0 = static_cast<int64_t>(stamps_.size()) - stream1;
  std::string summary =
      absl::StrCat("stamped stream_id on ", CountOf(static_cast<int64_t>(stamps_.size()), "collective"),
                   " (", stream0, " on stream 0, the TP groups; ", stream1,
                   " on stream 1, the FSDP groups)");
  if (overwritten > 0) absl::StrAppend(&summary, ", replacing ", overwritten, " existing");
  return summary;
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

// An HloSnapshot's recorded values meeting the interpreter: its arguments as
// the interpreter's inputs text (docs/interpreter.md), and its recorded result
// compared with a computed output, as XLA's run_hlo_module does.
#ifndef HILO_EVAL_SNAPSHOT_VALUES_H_
#define HILO_EVAL_SNAPSHOT_VALUES_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "hilo/eval/value.h"
#include "hilo/proto/hlo.pb.h"

namespace hilo {

// `param P[.L] device * : v0 v1 ...` lines, one per array leaf of each
// argument (every device gets the same value, as the snapshot recorded one).
absl::StatusOr<std::string> SnapshotArgumentsAsInputs(
    const std::vector<xla::LiteralProto>& arguments);

struct RecordedResultComparison {
  bool matches = false;
  std::string message;  // one line, no newline: what matched or the first difference
};

// `output` against the snapshot's recorded `result`, element by element
// (NaN equals NaN; otherwise |got - want| <= 1e-5 + 1e-3 |want|). An error
// only when the recorded literal can not be read.
absl::StatusOr<RecordedResultComparison> CompareWithRecordedResult(
    const eval::Value& output, const xla::LiteralProto& result);

}  // namespace hilo

#endif  // HILO_EVAL_SNAPSHOT_VALUES_H_

#include "hilo/eval/snapshot_values.h"

#include <cmath>
#include <cstdlib>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "hilo/proto/hlo_proto_convert.h"

namespace hilo {

absl::StatusOr<std::string> SnapshotArgumentsAsInputs(
    const std::vector<xla::LiteralProto>& arguments) {
  std::string text;
  for (size_t p = 0; p < arguments.size(); ++p) {
    absl::StatusOr<std::vector<std::vector<std::string>>> leaves =
        LiteralLeafValues(arguments[p]);
    if (!leaves.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("snapshot argument ", p, ": ", leaves.status().message()));
    }
    const bool tuple = arguments[p].shape().element_type() == xla::TUPLE;
    for (size_t l = 0; l < leaves->size(); ++l) {
      absl::StrAppend(&text, "param ", p, tuple ? absl::StrCat(".", l) : "", " device * : ",
                      absl::StrJoin((*leaves)[l], " "), "\n");
    }
  }
  return text;
}

absl::StatusOr<RecordedResultComparison> CompareWithRecordedResult(
    const eval::Value& output, const xla::LiteralProto& result) {
  absl::StatusOr<std::vector<std::vector<std::string>>> recorded = LiteralLeafValues(result);
  if (!recorded.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("the recorded result can not be read: ", recorded.status().message()));
  }
  std::vector<std::pair<std::vector<int64_t>, const eval::Array*>> leaves;
  output.CollectLeafPaths(&leaves);
  if (recorded->size() != leaves.size()) {
    return RecordedResultComparison{
        false, absl::StrCat("differs from the recorded result: ", leaves.size(),
                            " output arrays, ", recorded->size(), " recorded")};
  }
  for (size_t l = 0; l < leaves.size(); ++l) {
    const eval::Array& got = *leaves[l].second;
    const std::vector<std::string>& want = (*recorded)[l];
    if (static_cast<int64_t>(want.size()) != got.size()) {
      return RecordedResultComparison{
          false, absl::StrCat("output ", l, " has ", got.size(), " elements, recorded ",
                              want.size())};
    }
    for (int64_t k = 0; k < got.size(); ++k) {
      const double w = want[k] == "true"    ? 1
                       : want[k] == "false" ? 0
                                            : std::strtod(want[k].c_str(), nullptr);
      const double g = got.GetDouble(k);
      const bool same = (std::isnan(w) && std::isnan(g)) || g == w ||
                        std::fabs(g - w) <= 1e-5 + 1e-3 * std::fabs(w);
      if (!same) {
        return RecordedResultComparison{
            false, absl::StrCat("differs from the snapshot's recorded result at output ", l,
                                " element ", k, ": ", absl::StrFormat("%.9g", g),
                                " vs recorded ", want[k])};
      }
    }
  }
  return RecordedResultComparison{true, "matches the snapshot's recorded result"};
}

}  // namespace hilo

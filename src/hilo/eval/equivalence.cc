#include "hilo/eval/equivalence.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace hilo {
namespace eval {
namespace {

std::vector<int64_t> Unravel(int64_t linear, const std::vector<int64_t>& dims) {
  std::vector<int64_t> index(dims.size(), 0);
  for (int64_t d = static_cast<int64_t>(dims.size()) - 1; d >= 0; --d) {
    if (dims[d] == 0) break;
    index[d] = linear % dims[d];
    linear /= dims[d];
  }
  return index;
}

}  // namespace

Tolerance DefaultTolerance(PrimitiveType type) {
  switch (type) {
    case PrimitiveType::F64: return {1e-12, 1e-12};
    case PrimitiveType::F32: return {1e-5, 1e-6};
    case PrimitiveType::F16: return {1e-3, 1e-3};
    case PrimitiveType::BF16: return {1e-2, 1e-2};
    default: return {0, 0};
  }
}

std::string EquivalenceReport::ToString() const {
  std::string out = absl::StrCat("equivalence check on ", grid.devices(), " devices (",
                                 grid.replica_count, " replicas x ", grid.num_partitions,
                                 " partitions), seed ", seed, "\n");
  for (const OutputComparison& c : outputs) {
    absl::StrAppend(&out, absl::StrFormat("  %s %s: max abs error %.6g, max rel error %.6g (rtol %g, atol %g): %s",
                                          c.output, c.shape, c.max_abs_error, c.max_rel_error,
                                          c.tolerance.rtol, c.tolerance.atol,
                                          c.ok ? "ok" : "MISMATCH"));
    if (!c.ok) {
      absl::StrAppend(&out, absl::StrFormat(
                                "; %d elements differ, worst at device %d index {%s}: before %.9g, after %.9g",
                                c.mismatches, c.worst_device, absl::StrJoin(c.worst_index, ","),
                                c.worst_before, c.worst_after));
    }
    out += "\n";
  }
  if (!after_error.empty()) {
    absl::StrAppend(&out, "  the module after the passes failed to run: ", after_error, "\n");
  }
  absl::StrAppend(&out, equivalent ? "EQUIVALENT\n" : "NOT EQUIVALENT\n");
  return out;
}

absl::StatusOr<EquivalenceReport> CheckEquivalence(const HloModule& before, const HloModule& after,
                                                   const EquivalenceOptions& options) {
  const HloComputation* eb = before.entry_computation();
  const HloComputation* ea = after.entry_computation();
  if (eb == nullptr || ea == nullptr) return absl::InvalidArgumentError("module has no entry computation");
  if (eb->num_parameters() != ea->num_parameters()) {
    return absl::InvalidArgumentError(absl::StrCat("the modules take different numbers of parameters (",
                                                   eb->num_parameters(), " vs ", ea->num_parameters(), ")"));
  }
  for (int64_t p = 0; p < eb->num_parameters(); ++p) {
    const Shape& sb = eb->parameter_instruction(p)->shape();
    const Shape& sa = ea->parameter_instruction(p)->shape();
    if (!sb.Compatible(sa)) {
      return absl::InvalidArgumentError(absl::StrCat("parameter ", p, " has shape ", sb.ToString(false),
                                                     " before and ", sa.ToString(false), " after"));
    }
  }
  if (!eb->root_instruction()->shape().Compatible(ea->root_instruction()->shape())) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the result shape changed: ", eb->root_instruction()->shape().ToString(false), " before, ",
        ea->root_instruction()->shape().ToString(false), " after"));
  }
  auto grid = ResolveDeviceGrid(before, options.interpreter);
  if (!grid.ok()) return grid.status();
  auto grid_after = ResolveDeviceGrid(after, options.interpreter);
  if (!grid_after.ok()) return grid_after.status();
  if (grid->replica_count != grid_after->replica_count ||
      grid->num_partitions != grid_after->num_partitions) {
    return absl::InvalidArgumentError("the modules run on different device grids");
  }
  auto inputs = MakeRandomInputs(before, *grid, options.interpreter.seed,
                                 options.interpreter.max_array_elements);
  if (!inputs.ok()) return inputs.status();
  if (!options.interpreter.inputs_text.empty()) {
    if (auto st = ApplyInputsText(before, *grid, options.interpreter.inputs_text, &*inputs); !st.ok()) {
      return st;
    }
  }
  auto rb = RunSpmd(before, *grid, *inputs, options.interpreter);
  if (!rb.ok()) {
    return absl::Status(rb.status().code(), absl::StrCat("running the module before: ", rb.status().message()));
  }
  EquivalenceReport report;
  report.grid = *grid;
  report.seed = options.interpreter.seed;
  auto ra = RunSpmd(after, *grid, *inputs, options.interpreter);
  if (!ra.ok()) {
    report.equivalent = false;
    report.after_error = std::string(ra.status().message());
    return report;
  }
  std::vector<double> worst_excess;  // per output, over all devices
  for (int64_t d = 0; d < grid->devices(); ++d) {
    std::vector<std::pair<std::vector<int64_t>, const Array*>> lb, la;
    rb->outputs[d].CollectLeafPaths(&lb);
    ra->outputs[d].CollectLeafPaths(&la);
    if (lb.size() != la.size()) return absl::InternalError("output structures differ");
    if (report.outputs.empty()) {
      for (const auto& [path, array] : lb) {
        OutputComparison c;
        c.output = path.empty() && !rb->outputs[d].is_tuple()
                       ? "output"
                       : absl::StrCat("output {", absl::StrJoin(path, ","), "}");
        c.shape = array->ShapeString();
        c.tolerance = DefaultTolerance(array->type());
        if (options.rtol.has_value()) c.tolerance.rtol = *options.rtol;
        if (options.atol.has_value()) c.tolerance.atol = *options.atol;
        report.outputs.push_back(std::move(c));
        worst_excess.push_back(-1);
      }
    }
    for (size_t leaf = 0; leaf < lb.size(); ++leaf) {
      const Array& b = *lb[leaf].second;
      const Array& a = *la[leaf].second;
      OutputComparison& c = report.outputs[leaf];
      if (a.type() != b.type() || a.dims() != b.dims()) {
        return absl::InternalError(absl::StrCat(c.output, ": shapes differ at run time"));
      }
      for (int64_t k = 0; k < b.size(); ++k) {
        const double x = b.GetDouble(k), y = a.GetDouble(k);
        double abs_err, rel_err;
        bool ok;
        if (!b.is_float()) {
          // Exact comparison on the stored integers (u64 included).
          ok = b.i()[k] == a.i()[k];
          abs_err = ok ? 0 : std::fabs(x - y);
          rel_err = ok ? 0 : (x != 0 ? abs_err / std::fabs(x) : INFINITY);
        } else if (std::isnan(x) || std::isnan(y)) {
          ok = std::isnan(x) && std::isnan(y);
          abs_err = rel_err = ok ? 0 : INFINITY;
        } else if (std::isinf(x) || std::isinf(y)) {
          ok = x == y;
          abs_err = rel_err = ok ? 0 : INFINITY;
        } else {
          abs_err = std::fabs(x - y);
          rel_err = abs_err == 0 ? 0 : (x != 0 ? abs_err / std::fabs(x) : INFINITY);
          ok = abs_err <= c.tolerance.atol + c.tolerance.rtol * std::fabs(x);
        }
        c.max_abs_error = std::max(c.max_abs_error, abs_err);
        c.max_rel_error = std::max(c.max_rel_error, rel_err);
        if (!ok) {
          ++c.mismatches;
          const double excess = abs_err - (c.tolerance.atol + c.tolerance.rtol * std::fabs(x));
          const bool first_failure = c.ok;
          c.ok = false;
          if (first_failure || excess > worst_excess[leaf]) {
            worst_excess[leaf] = std::isnan(excess) ? INFINITY : excess;
            c.worst_device = d;
            c.worst_index = Unravel(k, b.dims());
            c.worst_before = x;
            c.worst_after = y;
          }
        }
      }
    }
  }
  for (const OutputComparison& c : report.outputs) {
    if (!c.ok) report.equivalent = false;
  }
  return report;
}

}  // namespace eval
}  // namespace hilo

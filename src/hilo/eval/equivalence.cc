#include "hilo/eval/equivalence.h"

#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/match.h"
#include "hilo/eval/structural.h"

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

std::string MiB(int64_t bytes) { return absl::StrFormat("%.1f MiB", bytes / 1048576.0); }

// A check stops with a verdict-less reason (rather than "not equivalent")
// when it ran out of a budget or met something the interpreter lacks.
bool IsUndecidedStatus(const absl::Status& st) {
  return absl::IsResourceExhausted(st) || absl::IsDeadlineExceeded(st) || absl::IsUnimplemented(st);
}

// The progress line (issue 17 item 8): on a terminal only, after a second,
// redrawn in place at most every 50 ms (the interpreter's callback rate).
class ProgressLine {
 public:
  explicit ProgressLine(bool enabled) : enabled_(enabled && isatty(2) == 1) {}
  ~ProgressLine() {
    if (drawn_) std::fputs("\r\x1b[K", stderr);
  }
  void Update(absl::string_view phase, int64_t devices, int64_t executed, int64_t expected) {
    if (!enabled_) return;
    const double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    if (elapsed < 1.0) return;
    std::string line = absl::StrFormat("checking equivalence: %s, %d devices, %d instructions, %.1f s",
                                       phase, devices, executed, elapsed);
    if (expected > 0 && executed > 0 && executed < expected) {
      absl::StrAppend(&line, absl::StrFormat(", about %.0f s left",
                                             elapsed * (expected - executed) / executed));
    }
    std::fprintf(stderr, "\r%s\x1b[K", line.c_str());
    drawn_ = true;
  }

 private:
  bool enabled_;
  bool drawn_ = false;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

}  // namespace

std::string EquivalenceReport::UninterpretedSummary() const {
  std::vector<std::string> parts;
  for (const auto& [kind, n] : uninterpreted) {
    const absl::string_view plural = n == 1 ? "" : "s";
    if (absl::StartsWith(kind, "custom-call ")) {
      parts.push_back(absl::StrCat(n, " uninterpreted custom-call", plural, " ",
                                   kind.substr(std::string("custom-call ").size())));
    } else if (kind == "elided constant") {
      parts.push_back(absl::StrCat(n, " elided constant", plural));
    } else {
      parts.push_back(absl::StrCat(n, " uninterpreted ", kind, plural));
    }
  }
  return absl::StrJoin(parts, ", ");
}

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
  if (instructions_executed > 0 || !structural_difference.empty()) {
    absl::StrAppend(&out, absl::StrFormat("  %d instructions executed, values peaked at %s, %.1f s%s\n",
                                          instructions_executed, MiB(peak_value_bytes), seconds,
                                          structural_difference.empty()
                                              ? ""
                                              : absl::StrCat(" (run because ", structural_difference, ")")));
  }
  const std::string modulo = UninterpretedSummary();
  switch (verdict) {
    case Verdict::kEquivalent:
      if (structurally_identical) {
        absl::StrAppend(&out, "  the modules are structurally identical (up to metadata, frontend "
                              "attributes, non-custom-call backend configs and channel ids that "
                              "change no group): no run needed\n");
      }
      absl::StrAppend(&out, "EQUIVALENT", modulo.empty() ? "" : " modulo ", modulo, "\n");
      break;
    case Verdict::kNotEquivalent:
      absl::StrAppend(&out, "NOT EQUIVALENT", modulo.empty() ? "" : " (with ", modulo,
                      modulo.empty() ? "" : ")", "\n");
      break;
    case Verdict::kUndecided:
      absl::StrAppend(&out, "UNDECIDED: cannot decide because ", undecided_reason, "\n");
      break;
  }
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
  const auto start = std::chrono::steady_clock::now();
  EquivalenceReport report;
  report.grid = *grid;
  report.seed = options.interpreter.seed;
  ResetPeakArrayElements();
  const int64_t live_at_start = LiveArrayElements();
  auto finish = [&](Verdict verdict, std::string reason) {
    report.verdict = verdict;
    report.equivalent = verdict == Verdict::kEquivalent;
    report.undecided_reason = std::move(reason);
    report.peak_value_bytes = (PeakArrayElements() - live_at_start) * 8;
    report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return report;
  };
  InterpreterOptions run_options = options.interpreter;
  if (options.time_budget_seconds.has_value()) {
    run_options.deadline = start + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                       std::chrono::duration<double>(*options.time_budget_seconds));
  }
  auto undecided = [&](absl::string_view when, const absl::Status& st) {
    std::string reason = absl::StrCat(when, st.message());
    if (absl::IsDeadlineExceeded(st) && options.time_budget_seconds.has_value()) {
      reason = absl::StrCat("the time budget of ", *options.time_budget_seconds,
                            " s (--check-time-budget) ran out: ", when, st.message());
    }
    return finish(Verdict::kUndecided, std::move(reason));
  };
  if (options.structural) {
    std::optional<std::string> difference = StructuralDifference(before, after, grid->num_partitions);
    if (!difference.has_value()) {
      report.structurally_identical = true;
      return finish(Verdict::kEquivalent, "");
    }
    report.structural_difference = *std::move(difference);
  }
  for (const HloModule* m : {&before, &after}) {
    if (auto st = CheckStaticLimits(*m, *grid, run_options); !st.ok()) {
      return undecided(m == &before ? "" : "after the passes: ", st);
    }
  }
  auto inputs = MakeRandomInputs(before, *grid, options.interpreter.seed,
                                 options.interpreter.max_array_elements);
  if (!inputs.ok()) return undecided("", inputs.status());
  if (!options.interpreter.inputs_text.empty()) {
    if (auto st = ApplyInputsText(before, *grid, options.interpreter.inputs_text, &*inputs); !st.ok()) {
      return st;
    }
  }
  ProgressLine progress(options.progress);
  int64_t expected = 0;
  absl::string_view phase = "module before the passes";
  run_options.progress = [&](int64_t executed, int64_t) {
    progress.Update(phase, grid->devices(), executed, expected);
  };
  auto rb = RunSpmd(before, *grid, *inputs, run_options);
  if (!rb.ok()) return undecided("running the module before the passes: ", rb.status());
  report.instructions_executed = rb->instructions_executed;
  report.uninterpreted = rb->uninterpreted;
  expected = rb->instructions_executed;
  phase = "module after the passes";
  auto ra = RunSpmd(after, *grid, *inputs, run_options);
  if (!ra.ok()) {
    if (IsUndecidedStatus(ra.status())) {
      return undecided("running the module after the passes: ", ra.status());
    }
    report.after_error = std::string(ra.status().message());
    return finish(Verdict::kNotEquivalent, "");
  }
  report.instructions_executed += ra->instructions_executed;
  for (const auto& [kind, n] : ra->uninterpreted) {
    report.uninterpreted[kind] = std::max(report.uninterpreted[kind], n);
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
  bool all_ok = true;
  for (const OutputComparison& c : report.outputs) all_ok = all_ok && c.ok;
  return finish(all_ok ? Verdict::kEquivalent : Verdict::kNotEquivalent, "");
}

}  // namespace eval
}  // namespace hilo

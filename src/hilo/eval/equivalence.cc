#include "hilo/eval/equivalence.h"

#include <chrono>
#include <cmath>
#include <cstdio>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/match.h"
#include "hilo/eval/cone.h"
#include "hilo/eval/progress_line.h"
#include "hilo/eval/sampling.h"
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

// Compares one output leaf of one device, updating `c` (and the worst
// element's excess over the tolerance, `worst_excess`).
absl::Status CompareLeaf(const Array& b, const Array& a, int64_t device, OutputComparison* c,
                         double* worst_excess) {
  if (a.type() != b.type() || a.dims() != b.dims()) {
    return absl::InternalError(absl::StrCat(c->output, ": shapes differ at run time"));
  }
  // A complex element is two parts, each compared as a float (index 2k + 1:
  // the imaginary part of element k).
  const int64_t parts = b.is_complex() ? 2 : 1;
  for (int64_t p = 0; p < b.size() * parts; ++p) {
    const int64_t k = p / parts;
    const bool imag = p % parts == 1;
    const double x = imag ? b.im()[k] : b.GetDouble(k), y = imag ? a.im()[k] : a.GetDouble(k);
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
      ok = abs_err <= c->tolerance.atol + c->tolerance.rtol * std::fabs(x);
    }
    c->max_abs_error = std::max(c->max_abs_error, abs_err);
    c->max_rel_error = std::max(c->max_rel_error, rel_err);
    if (!ok) {
      ++c->mismatches;
      const double excess = abs_err - (c->tolerance.atol + c->tolerance.rtol * std::fabs(x));
      const bool first_failure = c->ok;
      c->ok = false;
      if (first_failure || excess > *worst_excess) {
        *worst_excess = std::isnan(excess) ? INFINITY : excess;
        c->worst_device = device;
        c->worst_index = Unravel(k, b.dims());
        c->worst_before = x;
        c->worst_after = y;
      }
    }
  }
  return absl::OkStatus();
}

std::string MiB(int64_t bytes) { return absl::StrFormat("%.1f MiB", bytes / 1048576.0); }

// A check stops with a verdict-less reason (rather than "not equivalent")
// when it ran out of a budget or met something the interpreter lacks.
bool IsUndecidedStatus(const absl::Status& st) {
  return absl::IsResourceExhausted(st) || absl::IsDeadlineExceeded(st) || absl::IsUnimplemented(st);
}

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
  std::string scope;
  if (local.has_value()) {
    absl::StrAppend(&out, "  checked locally (", local->why, "): the cone of ", local->regions,
                    " changed region", local->regions == 1 ? "" : "s", ", ", local->instructions_before,
                    " instructions before and ", local->instructions_after, " after, ", local->outputs,
                    " region output", local->outputs == 1 ? "" : "s", " compared on random values of ",
                    local->inputs, " region input", local->inputs == 1 ? "" : "s", "\n");
    for (size_t k = 0; k < local->sampled.size() && k < 8; ++k) {
      absl::StrAppend(&out, "  sampled ", local->sampled[k], "\n");
    }
    if (local->sampled.size() > 8) absl::StrAppend(&out, "  sampled along ", local->sampled.size() - 8, " more axes\n");
    if (!local->output_names.empty()) {
      const size_t shown = std::min<size_t>(local->output_names.size(), 8);
      absl::StrAppend(&out, "  region outputs: ",
                      absl::StrJoin(local->output_names.begin(), local->output_names.begin() + shown, ", "),
                      shown < local->output_names.size() ? ", ..." : "", "\n");
    }
    scope = absl::StrCat(" (local: the cone of ", local->regions, " changed region",
                         local->regions == 1 ? "" : "s", " on random region inputs, ", grid.devices(),
                         " devices",
                         local->sampled.empty()
                             ? ""
                             : absl::StrCat("; sampled ", local->sampled.front(),
                                            local->sampled.size() == 1
                                                ? ""
                                                : absl::StrCat(" and along ", local->sampled.size() - 1,
                                                               " more axes")),
                         ")");
  }
  const std::string modulo = UninterpretedSummary();
  switch (verdict) {
    case Verdict::kEquivalent:
      if (structurally_identical) {
        absl::StrAppend(&out, "  the modules are structurally identical (up to metadata, frontend "
                              "attributes, non-custom-call backend configs and channel ids that "
                              "change no group): no run needed\n");
      }
      absl::StrAppend(&out, "EQUIVALENT", scope, modulo.empty() ? "" : " modulo ", modulo, "\n");
      break;
    case Verdict::kNotEquivalent:
      absl::StrAppend(&out, "NOT EQUIVALENT", scope, modulo.empty() ? "" : " (with ", modulo,
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
  ProgressLine progress = ProgressLine::ForStandardError(options.progress);
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
  // The whole module when it fits, else (or with kCone) the changed cone.
  std::string why_local;
  if (options.scope == EquivalenceOptions::Scope::kCone) {
    why_local = "--check-scope=cone";
  } else {
    for (const HloModule* m : {&before, &after}) {
      if (auto st = CheckStaticLimits(*m, *grid, run_options); !st.ok()) {
        const absl::string_view side = m == &before ? "" : "after the passes: ";
        // kAuto falls back to the cone, except when structural verdicts are
        // off (--check-by-running): the point is then to run the module.
        if (options.scope == EquivalenceOptions::Scope::kModule || !options.structural) {
          return undecided(side, st);
        }
        why_local = absl::StrCat("the whole module does not fit: ", side, st.message());
        break;
      }
    }
  }
  // What runs: the two modules, or each region of the changed cone.
  struct Unit {
    const HloModule* before;
    const HloModule* after;
    const std::vector<std::string>* outputs;  // region output names, or null
  };
  std::vector<Unit> units;
  std::optional<ChangedCone> cone;
  if (why_local.empty()) {
    units.push_back({&before, &after, nullptr});
  } else {
    auto extracted = ExtractChangedCone(before, after, *grid, [&] {
      progress.Update("cutting the changed cone", grid->devices(), 0, 0);
    });
    if (!extracted.ok()) {
      return undecided(absl::StrCat(why_local, "; and no changed cone can be cut out: "),
                       extracted.status());
    }
    cone = *std::move(extracted);
    report.local = EquivalenceReport::Local{why_local,
                                            static_cast<int64_t>(cone->regions.size()),
                                            cone->instructions_before,
                                            cone->instructions_after,
                                            cone->inputs,
                                            static_cast<int64_t>(cone->outputs.size()),
                                            cone->outputs,
                                            /*sampled=*/{}};
    // No region (a rewrite of dead code only): every output is computed as before.
    for (const ConeRegion& r : cone->regions) units.push_back({r.before.get(), r.after.get(), &r.outputs});
  }
  // A kernel whose contract fails on its shapes fails on every input: the
  // region after cannot compute its outputs (NOT EQUIVALENT, nothing run).
  for (size_t u = 0; cone.has_value() && u < units.size(); ++u) {
    for (const HloInstruction* i : units[u].after->entry_computation()->instructions()) {
      if (i->opcode() != HloOpcode::kCustomCall || i->custom_call_target() != kCollectiveMatmulTarget) continue;
      if (absl::Status st = CheckCollectiveMatmulShapes(*i); !st.ok()) {
        report.after_error = absl::StrCat("the changed cone's region ", u + 1, " of ", units.size(), " (",
                                          absl::StrJoin(*units[u].outputs, ", "), "): ", st.message());
        return finish(Verdict::kNotEquivalent, "");
      }
    }
  }
  for (size_t u = 0; u < units.size(); ++u) {
    const std::string which =
        cone.has_value() ? absl::StrCat("the changed cone's region ", u + 1, " of ", units.size(), ": ") : "";
    auto fits = [&](const HloModule& b, const HloModule& a) -> absl::Status {
      for (const HloModule* m : {&b, &a}) {
        if (auto st = CheckStaticLimits(*m, *grid, run_options); !st.ok()) {
          return absl::Status(st.code(), absl::StrCat(m == &b ? "" : "after the passes: ", st.message()));
        }
      }
      return absl::OkStatus();
    };
    if (!cone.has_value()) {
      if (auto st = fits(*units[u].before, *units[u].after); !st.ok()) return undecided(which, st);
      continue;
    }
    ConeRegion& region = cone->regions[u];
    auto sampled = SampleRegion(region.before.get(), region.after.get(), options.samples, fits);
    if (!sampled.ok()) return undecided(which, sampled.status());
    for (const SampledAxis& axis : *sampled) {
      report.local->sampled.push_back(absl::StrCat(axis.kept, " of ", axis.size, " indices along ", axis.where,
                                                   " in region ", u + 1));
    }
  }
  int64_t expected = 0;
  std::string phase;
  run_options.progress = [&](int64_t executed, int64_t) {
    progress.Update(phase, grid->devices(), executed, expected);
  };
  std::vector<double> worst_excess;  // per output, over all devices
  for (size_t u = 0; u < units.size(); ++u) {
    const Unit& unit = units[u];
    const std::string region =
        cone.has_value() ? absl::StrCat("region ", u + 1, " of ", units.size(), " of the cone ") : "module ";
    auto inputs = MakeRandomInputs(*unit.before, *grid, options.interpreter.seed,
                                   options.interpreter.max_array_elements);
    if (!inputs.ok()) return undecided("", inputs.status());
    // An inputs file names the module's parameters; a cone's are other values.
    if (!options.interpreter.inputs_text.empty() && !cone.has_value()) {
      if (auto st = ApplyInputsText(before, *grid, options.interpreter.inputs_text, &*inputs); !st.ok()) {
        return st;
      }
    }
    phase = absl::StrCat(region, "before the passes");
    expected = 0;
    auto rb = RunSpmd(*unit.before, *grid, *inputs, run_options);
    if (!rb.ok()) return undecided(absl::StrCat("running the ", region, "before the passes: "), rb.status());
    report.instructions_executed += rb->instructions_executed;
    for (const auto& [kind, n] : rb->uninterpreted) report.uninterpreted[kind] += n;
    expected = rb->instructions_executed;
    phase = absl::StrCat(region, "after the passes");
    auto ra = RunSpmd(*unit.after, *grid, *inputs, run_options);
    if (!ra.ok()) {
      if (IsUndecidedStatus(ra.status())) {
        return undecided(absl::StrCat("running the ", region, "after the passes: "), ra.status());
      }
      report.after_error = std::string(ra.status().message());
      return finish(Verdict::kNotEquivalent, "");
    }
    report.instructions_executed += ra->instructions_executed;
    for (const auto& [kind, n] : ra->uninterpreted) {
      // Counted per region before; the larger of the two sides.
      const int64_t before_n = rb->uninterpreted.count(kind) ? rb->uninterpreted.at(kind) : 0;
      if (n > before_n) report.uninterpreted[kind] += n - before_n;
    }
    const size_t first_output = report.outputs.size();
    for (int64_t d = 0; d < grid->devices(); ++d) {
      std::vector<std::pair<std::vector<int64_t>, const Array*>> lb, la;
      rb->outputs[d].CollectLeafPaths(&lb);
      ra->outputs[d].CollectLeafPaths(&la);
      if (lb.size() != la.size()) return absl::InternalError("output structures differ");
      if (d == 0) {
        for (const auto& [path, array] : lb) {
          OutputComparison c;
          if (unit.outputs != nullptr && !path.empty()) {
            // Root tuple element k is region output k.
            c.output = absl::StrCat("region output ", (*unit.outputs)[path[0]]);
            if (path.size() > 1) {
              absl::StrAppend(&c.output, " {",
                              absl::StrJoin(std::vector<int64_t>(path.begin() + 1, path.end()), ","), "}");
            }
          } else {
            c.output = path.empty() && !rb->outputs[d].is_tuple()
                           ? "output"
                           : absl::StrCat("output {", absl::StrJoin(path, ","), "}");
          }
          c.shape = array->ShapeString();
          c.tolerance = DefaultTolerance(array->type());
          if (options.rtol.has_value()) c.tolerance.rtol = *options.rtol;
          if (options.atol.has_value()) c.tolerance.atol = *options.atol;
          report.outputs.push_back(std::move(c));
          worst_excess.push_back(-1);
        }
      }
      for (size_t leaf = 0; leaf < lb.size(); ++leaf) {
        if (auto st = CompareLeaf(*lb[leaf].second, *la[leaf].second, d, &report.outputs[first_output + leaf],
                                  &worst_excess[first_output + leaf]);
            !st.ok()) {
          return st;
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

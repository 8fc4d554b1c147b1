// CheckEquivalence: runs two modules (before and after a rewrite) on the same
// simulated devices and the same inputs, and compares every output leaf of
// every device within per-element-type tolerances.
#ifndef HILO_EVAL_EQUIVALENCE_H_
#define HILO_EVAL_EQUIVALENCE_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "hilo/eval/interpreter.h"
#include "hilo/ir/hlo_module.h"

namespace hilo {
namespace eval {

struct EquivalenceOptions {
  InterpreterOptions interpreter;  // devices, seed, inputs file
  // Override the per-element-type defaults (DefaultTolerance) for every output.
  std::optional<double> rtol;
  std::optional<double> atol;
  // Both runs together stop after this many seconds: the verdict is then
  // UNDECIDED (not a failure). None = no limit.
  std::optional<double> time_budget_seconds;
  // Draw a progress line on standard error when it is a terminal and the
  // check takes more than a second.
  bool progress = false;
  // Decide without running when the modules are structurally equivalent
  // (structural.h). Off: always compare on numbers.
  bool structural = true;
  // What is run when the structure differs (docs/interpreter.md,
  // "Equivalence checking"): kAuto runs the whole module when it fits the
  // interpreter's static limits and the changed cone (cone.h) otherwise;
  // kModule only the whole module; kCone only the cone. With `structural`
  // off, kAuto is kModule (--check-by-running measures what runs).
  enum class Scope { kAuto, kModule, kCone };
  Scope scope = Scope::kAuto;
  // A changed region that does not fit the limits is shrunk along
  // dimensions every instruction of both sides treats independently, each to
  // this many indices (sampling.h); 0: never.
  int64_t samples = 64;
};

struct Tolerance {
  double rtol = 0;
  double atol = 0;
};
// pred and integers: exact. f64 1e-12/1e-12, f32 1e-5/1e-6, f16 1e-3/1e-3,
// bf16 1e-2/1e-2 (rtol/atol). An element matches when
// |after - before| <= atol + rtol * |before|; NaN matches NaN only, an
// infinity only the same infinity.
Tolerance DefaultTolerance(PrimitiveType type);

struct OutputComparison {
  std::string output;  // "output" for an array root, "output {1,0}" for a tuple leaf
  std::string shape;   // e.g. "f32[8,16]"
  Tolerance tolerance;
  double max_abs_error = 0;
  double max_rel_error = 0;  // |after - before| / |before| (0 where before is 0 and after equal)
  bool ok = true;
  // The worst element (largest excess over the tolerance, else largest abs error).
  int64_t worst_device = -1;
  std::vector<int64_t> worst_index;
  double worst_before = 0;
  double worst_after = 0;
  int64_t mismatches = 0;  // elements outside tolerance, over all devices
};

enum class Verdict { kEquivalent, kNotEquivalent, kUndecided };

struct EquivalenceReport {
  DeviceGrid grid;
  uint64_t seed = 0;
  std::vector<OutputComparison> outputs;
  Verdict verdict = Verdict::kEquivalent;
  bool equivalent = true;  // verdict == kEquivalent
  // kUndecided: why ("the time budget of 60 s ran out ...", "the
  // interpreter does not support opcode fft ...", a size limit).
  std::string undecided_reason;
  // Parts evaluated as uninterpreted functions (uninterpreted.h), kind ->
  // instructions, the larger count of the two modules: the verdict holds
  // modulo them (docs/interpreter.md, "Soundness").
  std::map<std::string, int64_t> uninterpreted;
  // Largest memory held in values during the check, instructions executed
  // over both runs and all devices, wall time.
  // The verdict was reached without running: the modules are structurally
  // equivalent (structural.h).
  bool structurally_identical = false;
  // Otherwise the first structural difference, e.g. "computation main:
  // %dot.5 differs" (shown on the statistics line).
  std::string structural_difference;
  // Set when the verdict is local: only the changed cone was run (cone.h).
  struct Local {
    std::string why;  // "the whole module does not fit: ..." or "--check-scope=cone"
    int64_t regions = 0;
    int64_t instructions_before = 0;
    int64_t instructions_after = 0;
    int64_t inputs = 0;
    int64_t outputs = 0;
    std::vector<std::string> output_names;  // "%dot.5 / %custom-call.2" (before / after)
    // Per sampled axis: "region 1: 64 of 4096 indices along dim 0 of region
    // input %x bf16[4096,32]".
    std::vector<std::string> sampled;
  };
  std::optional<Local> local;
  int64_t peak_value_bytes = 0;
  int64_t instructions_executed = 0;
  double seconds = 0;
  // Set when the module before ran but the module after did not (for
  // example a fold whose operands do not fit the kernel contract): the
  // modules are then not equivalent and `outputs` is empty.
  std::string after_error;
  // Human-readable, one line per output, a statistics line, then the verdict
  // line: "EQUIVALENT", "EQUIVALENT modulo 3 uninterpreted custom-calls
  // AwsNeuronTransferWithStaticRing", "EQUIVALENT (local: the cone of 2
  // changed regions on random region inputs, 8 devices)", "NOT EQUIVALENT"
  // (also with "(local: ...)"), or "UNDECIDED:
  // cannot decide because ...".
  std::string ToString() const;
  // "3 uninterpreted custom-calls X, 1 elided constant" (empty when none).
  std::string UninterpretedSummary() const;
};

// Errors of use (parameter or output shapes that differ between the modules,
// a bad inputs file, an impossible device count) are statuses. A numerical
// mismatch, or a module after that fails to run, is NOT EQUIVALENT. A check
// that cannot reach a verdict (a size or work limit, the time budget, the
// module before failing to run, an unsupported opcode) is kUndecided with
// its reason.
absl::StatusOr<EquivalenceReport> CheckEquivalence(const HloModule& before, const HloModule& after,
                                                   const EquivalenceOptions& options);

}  // namespace eval
}  // namespace hilo

#endif  // HILO_EVAL_EQUIVALENCE_H_

// The changed cone of a rewrite (issue 17, item 5): what --check-equivalence
// runs when the whole module does not fit the interpreter's limits.
//
// The collective passes change bounded regions of a module and leave the
// rest instruction for instruction as it was. ExtractChangedCone matches the
// two entry computations in both directions:
//
// - bottom-up, an instruction of `after` is *unchanged* when `before` has an
//   instruction of the same name and the same canonical text
//   (structural.h), whose operands are all unchanged: it computes the same
//   value on every device, whatever the inputs (the computations it calls
//   are assumed equivalent to their namesakes: every pair of computations
//   that differ is cut the same way on its own, so the fold inside a while
//   body is checked in the body, not through the whole loop);
// - top-down, from the two roots, a pair (a, b) whose texts are equal up to
//   operand and own names (same opcode, shape, attributes, called
//   computations) pairs its operands in order; a pair that is not (the fold's
//   custom-call against the dot it replaced) is a *region output*, to be
//   compared. If every region output is equal on every device, so is every
//   paired instruction above it, and the roots (induction in topological
//   order; collectives included, since every device runs the same program).
//
// The *cone* of a region output is every instruction from which it is
// reached without passing a *cut point*: an unchanged instruction, a paired
// one (above), another region output, or an entry parameter. Cut points are
// the region inputs: each class of cut points asserted equal (a pair, an
// unchanged instruction and its namesake) becomes one parameter of both
// sides, with shared pseudo-random values. Assuming a cut point equal is
// justified by induction: an unchanged instruction is equal by
// construction, a pair by its operands, another region output by its own
// cone, provided no cone depends on itself through the cut points (checked:
// a cycle is an error). Unchanged instructions that depend on no parameter
// (constants, iota, replica-id, what is computed from them) are copied into
// the cone instead, so they keep their real values. Outputs whose cones
// share instructions form one *region*; each region becomes a small module
// pair, and the regions are run one at a time (memory: the largest region,
// not their sum). What such a "local" verdict proves and what it does not is
// in docs/interpreter.md ("Soundness").
#ifndef HILO_EVAL_CONE_H_
#define HILO_EVAL_CONE_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "hilo/eval/interpreter.h"
#include "hilo/ir/hlo_module.h"

namespace hilo {
namespace eval {

// One region: the cone of some region outputs, cut at region inputs, as a
// module pair. Entry: one parameter per region input (the same numbers and
// shapes on both sides), the cone, ROOT tuple of the region outputs.
struct ConeRegion {
  std::unique_ptr<HloModule> before;
  std::unique_ptr<HloModule> after;
  // Per root tuple element k: "%dot.5" or "%dot.5 / %cm.2" (before / after,
  // when the names differ).
  std::vector<std::string> outputs;
  int64_t instructions_before = 0;  // cone instructions, region inputs not counted
  int64_t instructions_after = 0;
  int64_t inputs = 0;
};

struct ChangedCone {
  std::vector<ConeRegion> regions;  // checked one at a time
  // Totals over the regions.
  int64_t instructions_before = 0;
  int64_t instructions_after = 0;
  int64_t inputs = 0;
  std::vector<std::string> outputs;
};

// Errors (FailedPrecondition) when no cone can be cut: a region output
// whose shape differs between the sides, or an extracted module that does
// not parse back. A rewrite that only changed dead code gives a cone
// without outputs.
// `tick` (may be empty) is called now and then, for a progress line.
absl::StatusOr<ChangedCone> ExtractChangedCone(const HloModule& before, const HloModule& after,
                                               const DeviceGrid& grid,
                                               const std::function<void()>& tick = {});

}  // namespace eval
}  // namespace hilo

#endif  // HILO_EVAL_CONE_H_

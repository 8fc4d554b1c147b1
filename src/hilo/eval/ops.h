// Per-device instruction semantics of the reference interpreter: everything
// that needs neither another device nor control flow (while, call,
// conditional, fusion and the collectives are driven by interpreter.cc).
#ifndef HILO_EVAL_OPS_H_
#define HILO_EVAL_OPS_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "hilo/eval/value.h"
#include "hilo/ir/hlo_computation.h"
#include "hilo/ir/hlo_instruction.h"

namespace hilo {
namespace eval {

struct DeviceIds {
  int64_t replica_id = 0;
  int64_t partition_id = 0;
};

// Runs a (collective-free) computation on arguments for this device. Used for
// reduce's and all-reduce's `to_apply` when it is not a plain binary op.
using ApplyFn =
    std::function<absl::StatusOr<Value>(const HloComputation* computation, std::vector<Value> args)>;

// Evaluates `instruction` on its operand values. Opcodes handled elsewhere
// (control flow, collectives) and unsupported ones are an error naming the
// opcode and the instruction.
absl::StatusOr<Value> EvaluateLocalInstruction(const HloInstruction& instruction,
                                               absl::Span<const Value* const> operands,
                                               const DeviceIds& ids, const ApplyFn& apply);

// A reduction computation (`to_apply`) as a combiner of elements: plain
// binary ops (add, multiply, maximum, minimum, and, or, xor of the two
// parameters) run directly; anything else is evaluated through `apply`
// element by element. Every step rounds to the element type, as the
// reducer's own instructions would.
class Reducer {
 public:
  static absl::StatusOr<Reducer> Create(const HloComputation* computation, int64_t num_values,
                                        ApplyFn apply);
  // acc[v][acc_index] = f(acc..., x[v][x_index]...) for every value v.
  absl::Status Combine(absl::Span<Array* const> acc, int64_t acc_index,
                       absl::Span<const Array* const> x, int64_t x_index) const;
  // True when Combine runs a commutative binary op directly (then the order
  // of its two arguments does not matter).
  bool is_plain_binary() const { return binary_.has_value(); }

 private:
  const HloComputation* computation_ = nullptr;
  int64_t num_values_ = 1;
  std::optional<HloOpcode> binary_;  // fast path
  ApplyFn apply_;
};

// General dot: batch dims first (in lhs order), then lhs free dims, then rhs
// free dims. Floating-point products are accumulated in double in four
// interleaved partial sums over the contracting index (row-major), combined
// as (s0 + s1) + (s2 + s3), and rounded once to `out_type`; integers
// accumulate in wrapping 64-bit arithmetic. The order is fixed, so the
// result is deterministic.
absl::StatusOr<Array> DotGeneral(const Array& lhs, const Array& rhs,
                                 absl::Span<const int64_t> lhs_batch,
                                 absl::Span<const int64_t> rhs_batch,
                                 absl::Span<const int64_t> lhs_contracting,
                                 absl::Span<const int64_t> rhs_contracting, PrimitiveType out_type);

// Concatenation of arrays along `dimension` (same type and other dims).
absl::StatusOr<Array> ConcatenateArrays(absl::Span<const Array* const> parts, int64_t dimension);
// Block `index` of `count` equal blocks of `array` along `dimension`.
absl::StatusOr<Array> SplitBlock(const Array& array, int64_t dimension, int64_t count,
                                 int64_t index);
// Same elements, new dimensions.
absl::StatusOr<Array> ReshapeArray(const Array& array, std::vector<int64_t> dims);

// Element operations per output element of the windowed instructions, for
// the work budget: convolution (window elements x input features per
// group), reduce-window and select-and-scatter (window elements), sort (about
// log2 of the sorted length comparisons); 1 for every other instruction.
int64_t WorkPerOutputElement(const HloInstruction& instruction);

// The instruction's `dimensions` (typed field or raw attribute); empty when absent.
std::vector<int64_t> InstructionDimensions(const HloInstruction& instruction);

}  // namespace eval
}  // namespace hilo

#endif  // HILO_EVAL_OPS_H_

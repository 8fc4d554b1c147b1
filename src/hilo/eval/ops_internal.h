// Helpers shared by the files that implement instruction semantics
// (ops.cc, convolution.cc, window_ops.cc, sort.cc): attribute text, index
// arithmetic and scalar semantics. Internal to src/hilo/eval.
#ifndef HILO_EVAL_OPS_INTERNAL_H_
#define HILO_EVAL_OPS_INTERNAL_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "hilo/eval/ops.h"
#include "hilo/eval/value.h"
#include "hilo/ir/hlo_instruction.h"

#define EVAL_RETURN_IF_ERROR(expr)        \
  do {                                    \
    absl::Status _st = (expr);            \
    if (!_st.ok()) return _st;            \
  } while (0)

namespace hilo {
namespace eval {

// `opcode %name: what` (InvalidArgument).
absl::Status Error(const HloInstruction& instr, absl::string_view what);
// `{1,2,3}` -> {1, 2, 3}.
absl::StatusOr<std::vector<int64_t>> ParseIntList(absl::string_view text);
// Raw attribute `name` as an integer (an error naming it when absent or bad).
absl::StatusOr<int64_t> IntAttribute(const HloInstruction& instr, absl::string_view name);
// Raw attribute `name` as `{ints}`; empty when absent and not `required`.
absl::StatusOr<std::vector<int64_t>> ListAttribute(const HloInstruction& instr, absl::string_view name,
                                                   bool required = true);
std::vector<int64_t> DimsOf(const Shape& shape);
// The low BitWidth(t) bits of `v`.
uint64_t UnsignedBits(PrimitiveType t, int64_t v);
// XLA's total order of floats as an integer key: -NaN < -inf < ... < -0 <
// +0 < ... < +inf < +NaN.
int64_t TotalOrderKey(double x);
// add, subtract, ... on doubles / wrapping integers (not rounded).
absl::StatusOr<double> FloatBinary(HloOpcode op, double a, double b);
absl::StatusOr<int64_t> IntBinary(HloOpcode op, PrimitiveType t, int64_t a, int64_t b);

// compare's `direction=` (EQ NE LT LE GT GE) as 0..5; -1 when unknown.
int ComparisonDirection(absl::string_view text);
// compare(a[i], b[j]) in `direction` (0..5), as the compare instruction
// computes it: floats as doubles (or by TotalOrderKey when `total_order`),
// unsigned integers unsigned. a and b have the same element type.
bool CompareElements(const Array& a, int64_t i, const Array& b, int64_t j, int direction, bool total_order);

// x `direction` y, direction 0..5 as ComparisonDirection gives.
template <typename T>
inline bool Holds(int direction, T x, T y) {
  switch (direction) {
    case 0: return x == y;
    case 1: return x != y;
    case 2: return x < y;
    case 3: return x <= y;
    case 4: return x > y;
    default: return x >= y;
  }
}

// compare on element values: `fa`/`ia` and `fb`/`ib` are two values of type
// `type` (the float or the integer storage, as Array keeps them).
bool CompareScalars(PrimitiveType type, double fa, int64_t ia, double fb, int64_t ib, int direction,
                    bool total_order);

// A scalar computation compiled once into a flat list of steps and run
// without building Values: parameters, scalar constants, compare, select,
// add, subtract, multiply, divide, maximum, minimum, and, or, xor, not,
// negate, abs (anything else: Compile gives nullopt and callers use the
// nested evaluation). Every step rounds / wraps to its type, so results are
// the nested evaluation's. Not thread-safe (scratch values).
class ScalarProgram {
 public:
  struct Scalar {
    double f = 0;     // floating-point types
    int64_t i = 0;    // pred and integers
  };
  static std::optional<ScalarProgram> Compile(const HloComputation* computation);
  // Parameter p is element index[p] of *args[p]; both hold num_parameters()
  // entries, each array of the parameter's type.
  Scalar Run(absl::Span<const Array* const> args, absl::Span<const int64_t> index) const;
  PrimitiveType root_type() const { return root_type_; }
  int64_t num_parameters() const { return num_parameters_; }

 private:
  struct Step {
    HloOpcode op = HloOpcode::kParameter;
    PrimitiveType type = PrimitiveType::F32;
    PrimitiveType operand_type = PrimitiveType::F32;  // compare
    bool is_float = true;
    int64_t a = -1, b = -1, c = -1;  // operand steps (parameter number for a parameter)
    int direction = 0;
    bool total_order = false;
    Scalar constant;
  };
  std::vector<Step> steps_;
  int64_t root_ = 0;
  PrimitiveType root_type_ = PrimitiveType::PRED;
  int64_t num_parameters_ = 0;
  mutable std::vector<Scalar> values_;
};

// A comparator (sort, select) of the form `compare(p_x, p_y), direction=D[,
// type=TOTALORDER]` with {x, y} = {2i, 2i+1}: evaluated directly on operand
// i's elements instead of through a nested evaluation.
struct DirectComparator {
  int64_t operand = 0;
  bool swapped = false;  // compare(p_{2i+1}, p_{2i})
  int direction = 0;
  bool total_order = false;
  // comparator(lhs = a[i], rhs = a[j]).
  bool operator()(const Array& a, int64_t i, int64_t j) const {
    return swapped ? CompareElements(a, j, a, i, direction, total_order)
                   : CompareElements(a, i, a, j, direction, total_order);
  }
};
// `operands` are the arrays whose elements the comparator's parameter pairs
// receive.
std::optional<DirectComparator> FindDirectComparator(const HloComputation* comparator,
                                                     absl::Span<const Array* const> operands);

// XLA's window attribute `{size=3x3 stride=2x2 pad=1_1x0_0 lhs_dilate=1x1
// rhs_dilate=1x1 rhs_reversal=0x1}`, one entry per windowed dimension.
struct WindowDim {
  int64_t size = 1;
  int64_t stride = 1;
  int64_t pad_low = 0;
  int64_t pad_high = 0;
  int64_t base_dilation = 1;    // lhs_dilate
  int64_t window_dilation = 1;  // rhs_dilate
  bool reversal = false;        // rhs_reversal
  // Output extent over an input of `n` elements (XLA's
  // InferWindowOutputShape); -1 if negative or absurd.
  int64_t OutputSize(int64_t n) const;
  // The input position that window element `w` of output position `o`
  // reads, or -1 when it falls into padding or a base-dilation hole.
  int64_t InputIndex(int64_t o, int64_t w, int64_t n) const {
    const int64_t dilated = o * stride - pad_low + w * window_dilation;
    if (dilated < 0 || dilated % base_dilation != 0) return -1;
    const int64_t i = dilated / base_dilation;
    return i < n ? i : -1;
  }
};
// The instruction's `window=`; `rank` entries of size 1 when absent.
absl::StatusOr<std::vector<WindowDim>> WindowAttribute(const HloInstruction& instr, int64_t rank);

// Evaluates a scalar computation (sort comparator, select, map) on scalar
// arguments through `apply`; the single array leaf of its result.
absl::StatusOr<Array> ApplyScalar(const ApplyFn& apply, const HloComputation* computation,
                                  std::vector<Value> args);
// The one array, or a tuple of the arrays when `tuple` (a variadic result).
Value ArraysToValue(std::vector<Array> arrays, bool tuple);
// Element k of `a` as a scalar value.
Value ScalarAt(const Array& a, int64_t k);

// Instructions implemented outside ops.cc, dispatched from
// EvaluateLocalInstruction.
absl::StatusOr<Array> Convolution(const HloInstruction& instr, const Array& lhs, const Array& rhs);
absl::StatusOr<Value> ReduceWindow(const HloInstruction& instr, absl::Span<const Value* const> ops,
                                   const ApplyFn& apply);
absl::StatusOr<Array> SelectAndScatter(const HloInstruction& instr, const Array& operand,
                                       const Array& source, const Array& init, const ApplyFn& apply);
absl::StatusOr<Value> Sort(const HloInstruction& instr, absl::Span<const Value* const> ops,
                           const ApplyFn& apply);
absl::StatusOr<Array> ReducePrecision(const HloInstruction& instr, const Array& x);
absl::StatusOr<Array> Map(const HloInstruction& instr, absl::Span<const Value* const> ops,
                          const ApplyFn& apply);
absl::StatusOr<Value> TopK(const HloInstruction& instr, const Array& operand, const ApplyFn& apply);

// Complex types (complex.cc).
bool IsComplexArray(const Value& v);
// An elementwise op on complex operands (abs gives the component type).
absl::StatusOr<Array> ComplexElementwise(const HloInstruction& instr, absl::Span<const Value* const> ops);
// complex(re, im); real(x) / imag(x) (of a real x: x / 0).
absl::StatusOr<Array> ComplexFromParts(const HloInstruction& instr, const Array& re, const Array& im);
absl::StatusOr<Array> ComplexPart(const HloInstruction& instr, const Array& x);
// compare EQ (direction 0) or NE (1) of two complex arrays.
absl::StatusOr<Array> ComplexCompare(const HloInstruction& instr, const Array& a, const Array& b, int direction);
// out[k] = convert(a[k]) where a or out is complex (complex -> real: the real part).
void ComplexConvertElement(const Array& a, int64_t k, Array* out);
// acc[i] = acc[i] op x[j] for a complex reducer's add or multiply.
absl::Status CombineComplex(HloOpcode op, Array* acc, int64_t acc_index, const Array& x, int64_t x_index);
// The complex dot of canonical [B, M, K] x [B, N, K] operands (either may be real).
void ComplexProduct(const Array& lc, const Array& rc, int64_t B, int64_t M, int64_t N, int64_t K, Array* out);

}  // namespace eval
}  // namespace hilo

#endif  // HILO_EVAL_OPS_INTERNAL_H_

// map and reduce-precision, with XLA's HloEvaluator as the reference.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "hilo/eval/ops_internal.h"

namespace hilo {
namespace eval {
namespace {

// XLA's reduce-precision on the bits of a float type with `M` mantissa and
// `E` exponent bits (Bits is its unsigned integer of the same width):
// round to nearest even at `mantissa_bits`, then flush values whose exponent
// does not fit `exponent_bits` to signed zero (underflow) or signed infinity
// (overflow). A NaN stays NaN unless no mantissa bit is kept (then +inf, as
// XLA's evaluator gives).
template <typename Float, typename Bits, int M, int E>
Float ReducePrecisionBits(Float value, int64_t exponent_bits, int64_t mantissa_bits) {
  Bits x;
  std::memcpy(&x, &value, sizeof(x));
  if (mantissa_bits < M) {
    const Bits last = Bits{1} << (M - mantissa_bits);
    const Bits base_bias = (last >> 1) - 1;
    const Bits x_last = (x & last) >> (M - mantissa_bits);
    const Bits truncation = ~(last - 1);
    x = (x + x_last + base_bias) & truncation;
  }
  if (exponent_bits < E) {
    const Bits sign = Bits{1} << (M + E);
    const Bits exp_mask = ((Bits{1} << E) - 1) << M;
    const Bits bias = (Bits{1} << (E - 1)) - 1;
    const Bits reduced_bias = (Bits{1} << (exponent_bits - 1)) - 1;
    const Bits max_exp = (bias + reduced_bias) << M;
    const Bits min_exp = (bias - reduced_bias) << M;
    const Bits exponent = x & exp_mask;
    if (exponent > max_exp) x = (x & sign) | exp_mask;
    else if (exponent <= min_exp) x = x & sign;
  }
  Float out;
  std::memcpy(&out, &x, sizeof(out));
  if (std::isnan(value)) {
    return mantissa_bits > 0 ? value : std::numeric_limits<Float>::infinity();
  }
  return out;
}

}  // namespace

absl::StatusOr<Array> ReducePrecision(const HloInstruction& instr, const Array& x) {
  auto e = IntAttribute(instr, "exponent_bits");
  if (!e.ok()) return e.status();
  auto m = IntAttribute(instr, "mantissa_bits");
  if (!m.ok()) return m.status();
  if (!x.is_float()) return Error(instr, "operand must be floating-point");
  if (*e < 1 || *m < 0) return Error(instr, "exponent_bits must be >= 1 and mantissa_bits >= 0");
  Array out(x.type(), x.dims());
  for (int64_t k = 0; k < x.size(); ++k) {
    // f64 on its own bits; narrower types in f32, as XLA's evaluator does.
    const double v = x.type() == PrimitiveType::F64
                         ? ReducePrecisionBits<double, uint64_t, 52, 11>(x.f()[k], *e, *m)
                         : ReducePrecisionBits<float, uint32_t, 23, 8>(static_cast<float>(x.f()[k]), *e, *m);
    out.SetDouble(k, v);
  }
  return out;
}

// map(operands...), to_apply=f: f applied to the operands' elements at each
// index (same dimensions), its scalar result rounded to the output type.
absl::StatusOr<Array> Map(const HloInstruction& instr, absl::Span<const Value* const> ops,
                          const ApplyFn& apply) {
  if (ops.empty()) return Error(instr, "needs operands");
  if (instr.to_apply() == nullptr) return Error(instr, "needs to_apply");
  for (const Value* v : ops) {
    if (!v->is_array() || v->array().dims() != ops[0]->array().dims()) {
      return Error(instr, "operands must be arrays of the same dimensions");
    }
  }
  Array out(instr.shape().element_type(), ops[0]->array().dims());
  std::optional<ScalarProgram> program = ScalarProgram::Compile(instr.to_apply());
  if (program.has_value() && program->root_type() == out.type() &&
      program->num_parameters() == static_cast<int64_t>(ops.size())) {
    std::vector<const Array*> args;
    for (const Value* v : ops) args.push_back(&v->array());
    std::vector<int64_t> index(ops.size());
    for (int64_t k = 0; k < out.size(); ++k) {
      std::fill(index.begin(), index.end(), k);
      const ScalarProgram::Scalar r = program->Run(args, index);
      if (out.is_float()) out.f()[k] = r.f;
      else out.i()[k] = r.i;
    }
    return out;
  }
  for (int64_t k = 0; k < out.size(); ++k) {
    std::vector<Value> args;
    for (const Value* v : ops) args.push_back(ScalarAt(v->array(), k));
    auto r = ApplyScalar(apply, instr.to_apply(), std::move(args));
    if (!r.ok()) return Error(instr, r.status().message());
    if (r->type() != out.type()) return Error(instr, "to_apply returns another element type");
    if (out.is_float()) out.f()[k] = r->f()[0];
    else out.i()[k] = r->i()[0];
  }
  return out;
}

}  // namespace eval
}  // namespace hilo

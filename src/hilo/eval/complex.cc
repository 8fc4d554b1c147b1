// Complex element types (c64, c128) in the interpreter, XLA's HloEvaluator
// semantics: arithmetic in std::complex of the component type (c64 in
// std::complex<float>, c128 in std::complex<double>, as the evaluator's
// complex64 / complex128), complex / real / imag, compare EQ and NE,
// convert, dot and the reducers' add and multiply. Data movement copies
// both parts through Array::CopyElement and needs nothing here.
#include <cmath>
#include <complex>

#include "Eigen/Core"
#include "absl/strings/str_cat.h"
#include "hilo/eval/ops_internal.h"

namespace hilo {
namespace eval {
namespace {

template <typename T>
std::complex<T> At(const Array& a, int64_t k) {
  return {static_cast<T>(a.f()[k]), static_cast<T>(a.im()[k])};
}

template <typename T>
absl::StatusOr<std::complex<T>> Binary(HloOpcode op, std::complex<T> a, std::complex<T> b) {
  switch (op) {
    case HloOpcode::kAdd: return a + b;
    case HloOpcode::kSubtract: return a - b;
    case HloOpcode::kMultiply: return a * b;
    case HloOpcode::kDivide: return a / b;
    case HloOpcode::kPower: return std::pow(a, b);
    default: return absl::UnimplementedError("not supported for complex types");
  }
}

template <typename T>
absl::StatusOr<std::complex<T>> Unary(HloOpcode op, std::complex<T> x) {
  switch (op) {
    case HloOpcode::kNegate: return -x;
    case HloOpcode::kExp: return std::exp(x);
    case HloOpcode::kExpm1: return std::exp(x) - std::complex<T>(1);
    case HloOpcode::kLog: return std::log(x);
    case HloOpcode::kLog1p: return std::log(x + std::complex<T>(1));
    case HloOpcode::kSqrt: return std::sqrt(x);
    case HloOpcode::kRsqrt: return std::complex<T>(1) / std::sqrt(x);
    case HloOpcode::kSin: return std::sin(x);
    case HloOpcode::kCos: return std::cos(x);
    case HloOpcode::kTan: return std::tan(x);
    case HloOpcode::kTanh: return std::tanh(x);
    case HloOpcode::kSign: return x == std::complex<T>(0) ? x : x / std::abs(x);
    default: return absl::UnimplementedError("not supported for complex types");
  }
}

template <typename T>
absl::StatusOr<Array> ElementwiseT(const HloInstruction& instr, absl::Span<const Value* const> ops, Array out) {
  const HloOpcode op = instr.opcode();
  const int64_t n = out.size();
  const Array& a = ops[0]->array();
  if (ops.size() == 1 && op == HloOpcode::kAbs) {  // complex -> its real type
    if (out.is_complex()) return Error(instr, "abs of a complex value has the component type");
    for (int64_t k = 0; k < n; ++k) out.SetDouble(k, std::abs(At<T>(a, k)));
    return out;
  }
  if (!out.is_complex()) return Error(instr, "result type does not match operand type");
  for (const Value* v : ops) {
    if (v->array().type() != out.type()) return Error(instr, "operand and result element types differ");
  }
  for (int64_t k = 0; k < n; ++k) {
    auto r = ops.size() == 1 ? Unary<T>(op, At<T>(a, k)) : Binary<T>(op, At<T>(a, k), At<T>(ops[1]->array(), k));
    if (!r.ok()) return Error(instr, absl::StrCat("not supported for ", PrimitiveTypeName(a.type())));
    out.SetComplex(k, r->real(), r->imag());
  }
  return out;
}

template <typename T>
void ProductT(const Array& lc, const Array& rc, int64_t B, int64_t M, int64_t N, int64_t K, Array* out) {
  using C = std::complex<T>;
  using Matrix = Eigen::Matrix<C, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  auto load = [](const Array& a, int64_t base, int64_t rows, int64_t cols) {
    Matrix m(rows, cols);
    for (int64_t e = 0; e < rows * cols; ++e) {
      m.data()[e] = a.is_complex() ? At<T>(a, base + e) : C(static_cast<T>(a.f()[base + e]));
    }
    return m;
  };
  int64_t k = 0;
  for (int64_t batch = 0; batch < B; ++batch) {
    const Matrix am = load(lc, batch * M * K, M, K);
    const Matrix bm = load(rc, batch * N * K, N, K);
    const Matrix c = am * bm.transpose();  // no conjugation: XLA's dot
    for (int64_t e = 0; e < M * N; ++e, ++k) out->SetComplex(k, c.data()[e].real(), c.data()[e].imag());
  }
}

}  // namespace

bool IsComplexArray(const Value& v) { return v.is_array() && v.array().is_complex(); }

absl::StatusOr<Array> ComplexElementwise(const HloInstruction& instr, absl::Span<const Value* const> ops) {
  Array out(instr.shape().element_type(), DimsOf(instr.shape()));
  for (const Value* v : ops) {
    if (!IsComplexArray(*v) || v->array().dims() != out.dims()) {
      return Error(instr, "operands must be complex arrays of the result's dimensions");
    }
  }
  if (ops[0]->array().type() == PrimitiveType::C64) return ElementwiseT<float>(instr, ops, std::move(out));
  return ElementwiseT<double>(instr, ops, std::move(out));
}

absl::StatusOr<Array> ComplexFromParts(const HloInstruction& instr, const Array& re, const Array& im) {
  Array out(instr.shape().element_type(), DimsOf(instr.shape()));
  if (!out.is_complex() || re.dims() != out.dims() || im.dims() != out.dims() || re.type() != im.type() ||
      ComplexComponentType(out.type()) != re.type()) {
    return Error(instr, "operands must be two real arrays of the result's component type and dimensions");
  }
  for (int64_t k = 0; k < out.size(); ++k) out.SetComplex(k, re.f()[k], im.f()[k]);
  return out;
}

absl::StatusOr<Array> ComplexPart(const HloInstruction& instr, const Array& x) {
  Array out(instr.shape().element_type(), DimsOf(instr.shape()));
  if (out.is_complex() || !out.is_float() || x.dims() != out.dims() ||
      (x.is_complex() && ComplexComponentType(x.type()) != out.type())) {
    return Error(instr, "result must be the operand's component type");
  }
  const bool real = instr.opcode() == HloOpcode::kReal;
  for (int64_t k = 0; k < out.size(); ++k) {
    // XLA: real(x) = x and imag(x) = 0 for a real operand.
    out.SetDouble(k, x.is_complex() ? (real ? x.f()[k] : x.im()[k]) : (real ? x.f()[k] : 0.0));
  }
  return out;
}

absl::StatusOr<Array> ComplexCompare(const HloInstruction& instr, const Array& a, const Array& b, int direction) {
  if (direction != 0 && direction != 1) return Error(instr, "complex values compare only EQ or NE");
  Array out(PrimitiveType::PRED, a.dims());
  for (int64_t k = 0; k < a.size(); ++k) {
    const bool eq = a.f()[k] == b.f()[k] && a.im()[k] == b.im()[k];
    out.i()[k] = (direction == 0) == eq ? 1 : 0;
  }
  return out;
}

void ComplexConvertElement(const Array& a, int64_t k, Array* out) {
  if (out->is_complex()) {
    out->SetComplex(k, a.GetDouble(k), a.is_complex() ? a.im()[k] : 0.0);
  } else {
    out->SetDouble(k, a.f()[k]);  // complex -> real: the real part (decision, docs/interpreter.md)
  }
}

absl::Status CombineComplex(HloOpcode op, Array* acc, int64_t acc_index, const Array& x, int64_t x_index) {
  if (op != HloOpcode::kAdd && op != HloOpcode::kMultiply) {
    return absl::UnimplementedError("complex reductions support add and multiply only");
  }
  if (acc->type() == PrimitiveType::C64) {
    auto r = Binary<float>(op, At<float>(*acc, acc_index), At<float>(x, x_index));
    acc->SetComplex(acc_index, r->real(), r->imag());
  } else {
    auto r = Binary<double>(op, At<double>(*acc, acc_index), At<double>(x, x_index));
    acc->SetComplex(acc_index, r->real(), r->imag());
  }
  return absl::OkStatus();
}

void ComplexProduct(const Array& lc, const Array& rc, int64_t B, int64_t M, int64_t N, int64_t K, Array* out) {
  if (out->type() == PrimitiveType::C64) {
    ProductT<float>(lc, rc, B, M, N, K, out);
  } else {
    ProductT<double>(lc, rc, B, M, N, K, out);
  }
}

}  // namespace eval
}  // namespace hilo

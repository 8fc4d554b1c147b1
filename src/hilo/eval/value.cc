#include "hilo/eval/value.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <algorithm>
#include <atomic>
#include <limits>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace hilo {
namespace eval {

bool IsSupportedElementType(PrimitiveType type) {
  switch (type) {
    case PrimitiveType::PRED:
    case PrimitiveType::S2:
    case PrimitiveType::S4:
    case PrimitiveType::U2:
    case PrimitiveType::U4:
    case PrimitiveType::S8:
    case PrimitiveType::S16:
    case PrimitiveType::S32:
    case PrimitiveType::S64:
    case PrimitiveType::U8:
    case PrimitiveType::U16:
    case PrimitiveType::U32:
    case PrimitiveType::U64:
    case PrimitiveType::F16:
    case PrimitiveType::BF16:
    case PrimitiveType::F32:
    case PrimitiveType::F64:
    case PrimitiveType::F8E5M2:
    case PrimitiveType::F8E4M3FN:
    case PrimitiveType::F8E4M3B11FNUZ:
    case PrimitiveType::F8E5M2FNUZ:
    case PrimitiveType::F8E4M3FNUZ:
    case PrimitiveType::F8E4M3:
    case PrimitiveType::F8E3M4:
    case PrimitiveType::F4E2M1FN:
    case PrimitiveType::F8E8M0FNU:
    case PrimitiveType::C64:
    case PrimitiveType::C128:
      return true;
    default:
      return false;
  }
}

absl::Status CheckSupportedElementType(PrimitiveType type) {
  if (IsSupportedElementType(type)) return absl::OkStatus();
  return absl::UnimplementedError(
      absl::StrCat("element type ", PrimitiveTypeName(type), " is not supported by the interpreter"));
}

namespace {

float RoundFloatToBf16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof(bits));
  if (std::isnan(f)) {
    bits = (bits & 0xffff0000u) | 0x00400000u;  // keep sign, quiet NaN
  } else {
    const uint32_t lsb = (bits >> 16) & 1u;
    bits += 0x7fffu + lsb;  // round to nearest, ties to even (overflow carries into inf)
    bits &= 0xffff0000u;
  }
  float out;
  std::memcpy(&out, &bits, sizeof(out));
  return out;
}

// An 8-bit float format: mantissa bits, the exponent of its smallest normal,
// its largest finite value, and which specials it has (the fn / fnuz types
// have no infinities; fnuz ones have no negative zero).
struct SmallFloat {
  int mantissa_bits;
  int min_exponent;
  double max;
  bool has_inf;
  bool has_negative_zero;
};

// Round to nearest even into the format. Overflow (a value that rounds
// beyond max) gives an infinity where the format has one, else NaN, as
// XLA's (ml_dtypes') non-saturating conversion does; NaN stays NaN.
double RoundToSmallFloat(const SmallFloat& fmt, double value) {
  if (std::isnan(value)) return value;
  const double a = std::fabs(value);
  double r;
  if (std::isinf(a)) {
    r = a;
  } else if (a == 0) {
    r = 0;
  } else {
    int e;
    std::frexp(a, &e);  // a = m 2^e, m in [0.5, 1): exponent e - 1
    const double quantum = std::ldexp(1.0, std::max(e - 1, fmt.min_exponent) - fmt.mantissa_bits);
    r = std::nearbyint(a / quantum) * quantum;
  }
  if (r > fmt.max) {
    r = fmt.has_inf ? std::numeric_limits<double>::infinity() : std::numeric_limits<double>::quiet_NaN();
  }
  if (r == 0 && !fmt.has_negative_zero) return 0.0;
  return std::signbit(value) ? -r : r;
}

// f8e8m0fnu (OCP MX's E8M0 scale: 2^(bits - 127), bits 0..254, 0xFF NaN; no
// sign, zero or infinity), as ml_dtypes converts from f32: round to nearest
// even on the f32 bits at the exponent (so 1.5 * 2^e goes to the even
// biased exponent); zero, negatives, infinities, NaN and values that round
// past 2^127 are NaN. Below 2^-127 (f32 subnormals) the same bit rounding
// gives 2^-127 or 2^-126.
double RoundToE8M0(float f) {
  if (!(f > 0) || std::isinf(f)) return std::numeric_limits<double>::quiet_NaN();
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof(bits));
  const uint32_t rounded = (bits + 0x3fffffu + ((bits >> 23) & 1u)) >> 23;
  if (rounded > 0xfe) return std::numeric_limits<double>::quiet_NaN();
  return std::ldexp(1.0, static_cast<int>(rounded) - 127);
}

}  // namespace

PrimitiveType ComplexComponentType(PrimitiveType type) {
  if (type == PrimitiveType::C64) return PrimitiveType::F32;
  if (type == PrimitiveType::C128) return PrimitiveType::F64;
  return type;
}

double RoundToFloatType(PrimitiveType type, double value) {
  switch (type) {
    case PrimitiveType::F64:
    case PrimitiveType::C128:
      return value;
    case PrimitiveType::F32:
    case PrimitiveType::C64:
      return static_cast<double>(static_cast<float>(value));
    case PrimitiveType::BF16:
      return static_cast<double>(RoundFloatToBf16(static_cast<float>(value)));
    case PrimitiveType::F16:
      return static_cast<double>(static_cast<_Float16>(static_cast<float>(value)));
    default:
      break;
  }
  // The fp8 types through f32 first, as XLA's evaluator computes them in f32.
  static constexpr SmallFloat kE5M2{2, -14, 57344, true, true};
  static constexpr SmallFloat kE4M3FN{3, -6, 448, false, true};
  static constexpr SmallFloat kE4M3B11FNUZ{3, -10, 30, false, false};
  static constexpr SmallFloat kE5M2FNUZ{2, -15, 57344, false, false};
  static constexpr SmallFloat kE4M3FNUZ{3, -7, 240, false, false};
  static constexpr SmallFloat kE4M3{3, -6, 240, true, true};
  static constexpr SmallFloat kE3M4{4, -2, 15.5, true, true};
  // f4e2m1fn: no infinity and no NaN. ml_dtypes maps overflow and infinities
  // to +-6 (its "infinity" is the largest value) and NaN to its "quiet NaN"
  // 0b1000, i.e. -0 (+0 for a NaN with the sign bit set).
  static constexpr SmallFloat kE2M1{1, 0, 6, true, true};
  const double f = static_cast<float>(value);
  switch (type) {
    case PrimitiveType::F4E2M1FN: {
      if (std::isnan(f)) return std::signbit(f) ? 0.0 : -0.0;
      const double r = RoundToSmallFloat(kE2M1, f);
      return std::isinf(r) ? std::copysign(6.0, r) : r;
    }
    case PrimitiveType::F8E8M0FNU: return RoundToE8M0(static_cast<float>(f));
    case PrimitiveType::F8E5M2: return RoundToSmallFloat(kE5M2, f);
    case PrimitiveType::F8E4M3FN: return RoundToSmallFloat(kE4M3FN, f);
    case PrimitiveType::F8E4M3B11FNUZ: return RoundToSmallFloat(kE4M3B11FNUZ, f);
    case PrimitiveType::F8E5M2FNUZ: return RoundToSmallFloat(kE5M2FNUZ, f);
    case PrimitiveType::F8E4M3FNUZ: return RoundToSmallFloat(kE4M3FNUZ, f);
    case PrimitiveType::F8E4M3: return RoundToSmallFloat(kE4M3, f);
    case PrimitiveType::F8E3M4: return RoundToSmallFloat(kE3M4, f);
    default: return value;
  }
}

namespace {

// The bit encoding of a float type of at most 8 bits, from its definition
// (ml_dtypes' README and the OCP FP8 / MX specifications).
struct SmallEncoding {
  enum class Nan { kIeee, kFn, kFnuz, kNone, kE8M0 };
  int exponent_bits = 0;
  int mantissa_bits = 0;
  int bias = 0;
  bool has_sign = true;
  Nan nan = Nan::kIeee;
  uint8_t canonical_nan = 0;  // the code a NaN is written as (ml_dtypes' quiet NaN)
};

std::optional<SmallEncoding> SmallEncodingOf(PrimitiveType type) {
  using N = SmallEncoding::Nan;
  switch (type) {
    case PrimitiveType::F8E5M2: return SmallEncoding{5, 2, 15, true, N::kIeee, 0x7e};
    case PrimitiveType::F8E4M3: return SmallEncoding{4, 3, 7, true, N::kIeee, 0x7c};
    case PrimitiveType::F8E3M4: return SmallEncoding{3, 4, 3, true, N::kIeee, 0x78};
    case PrimitiveType::F8E4M3FN: return SmallEncoding{4, 3, 7, true, N::kFn, 0x7f};
    case PrimitiveType::F8E4M3FNUZ: return SmallEncoding{4, 3, 8, true, N::kFnuz, 0x80};
    case PrimitiveType::F8E5M2FNUZ: return SmallEncoding{5, 2, 16, true, N::kFnuz, 0x80};
    case PrimitiveType::F8E4M3B11FNUZ: return SmallEncoding{4, 3, 11, true, N::kFnuz, 0x80};
    case PrimitiveType::F4E2M1FN: return SmallEncoding{2, 1, 1, true, N::kNone, 0};
    case PrimitiveType::F8E8M0FNU: return SmallEncoding{8, 0, 127, false, N::kE8M0, 0xff};
    default: return std::nullopt;
  }
}

double DecodeSmall(const SmallEncoding& e, uint64_t bits) {
  const int width = e.exponent_bits + e.mantissa_bits + (e.has_sign ? 1 : 0);
  bits &= (uint64_t{1} << width) - 1;
  const bool negative = e.has_sign && (bits >> (width - 1)) != 0;
  const int max_exponent = (1 << e.exponent_bits) - 1;
  const int exponent = static_cast<int>((bits >> e.mantissa_bits) & max_exponent);
  const int mantissa = static_cast<int>(bits & ((uint64_t{1} << e.mantissa_bits) - 1));
  const double nan = std::numeric_limits<double>::quiet_NaN();
  switch (e.nan) {
    case SmallEncoding::Nan::kIeee:
      if (exponent == max_exponent) {
        if (mantissa != 0) return nan;
        return negative ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity();
      }
      break;
    case SmallEncoding::Nan::kFn:
      if (exponent == max_exponent && mantissa == (1 << e.mantissa_bits) - 1) return nan;
      break;
    case SmallEncoding::Nan::kFnuz:
      if (bits == 0x80) return nan;
      break;
    case SmallEncoding::Nan::kE8M0:
      if (bits == 0xff) return nan;
      return std::ldexp(1.0, exponent - e.bias);  // no subnormals, no zero
    case SmallEncoding::Nan::kNone:
      break;
  }
  const double magnitude =
      exponent == 0 ? std::ldexp(mantissa, 1 - e.bias - e.mantissa_bits)
                    : std::ldexp((1 << e.mantissa_bits) + mantissa, exponent - e.bias - e.mantissa_bits);
  return negative ? -magnitude : magnitude;
}

}  // namespace

bool HasSmallFloatEncoding(PrimitiveType type) { return SmallEncodingOf(type).has_value(); }

double SmallFloatFromBits(PrimitiveType type, uint64_t bits) {
  auto e = SmallEncodingOf(type);
  return e.has_value() ? DecodeSmall(*e, bits) : std::numeric_limits<double>::quiet_NaN();
}

uint64_t SmallFloatBits(PrimitiveType type, double value) {
  auto e = SmallEncodingOf(type);
  if (!e.has_value()) return 0;
  if (std::isnan(value)) {
    // The canonical NaN, with the value's sign where the format has signed NaNs.
    const bool signed_nan = e->nan == SmallEncoding::Nan::kIeee || e->nan == SmallEncoding::Nan::kFn;
    return e->canonical_nan | (signed_nan && std::signbit(value) ? 0x80 : 0);
  }
  // Every stored value is one of the format's (at most 256) values: look it
  // up, zeros by sign.
  const int width = e->exponent_bits + e->mantissa_bits + (e->has_sign ? 1 : 0);
  for (uint64_t bits = 0; bits < (uint64_t{1} << width); ++bits) {
    const double d = DecodeSmall(*e, bits);
    if (d == value && std::signbit(d) == std::signbit(value)) return bits;
  }
  // Not a value of the type (not produced by the interpreter): round first.
  const double rounded = RoundToFloatType(type, value);
  return rounded == value ? 0 : SmallFloatBits(type, rounded);
}

int64_t WrapToIntType(PrimitiveType type, int64_t value) {
  switch (type) {
    case PrimitiveType::PRED:
      return value != 0 ? 1 : 0;
    case PrimitiveType::S8:
      return static_cast<int8_t>(value);
    case PrimitiveType::S16:
      return static_cast<int16_t>(value);
    case PrimitiveType::S32:
      return static_cast<int32_t>(value);
    case PrimitiveType::U8:
      return static_cast<uint8_t>(value);
    case PrimitiveType::U16:
      return static_cast<uint16_t>(value);
    case PrimitiveType::U32:
      return static_cast<uint32_t>(value);
    case PrimitiveType::S2:
    case PrimitiveType::S4: {  // sign-extend the low bits
      const int shift = 64 - BitWidth(type);
      return static_cast<int64_t>(static_cast<uint64_t>(value) << shift) >> shift;
    }
    case PrimitiveType::U2:
    case PrimitiveType::U4:
      return static_cast<int64_t>(static_cast<uint64_t>(value) & ((uint64_t{1} << BitWidth(type)) - 1));
    default:  // s64, u64 (bit pattern)
      return value;
  }
}

namespace {
std::atomic<int64_t> live_elements{0};
std::atomic<int64_t> peak_elements{0};

void CountElements(int64_t n) {
  const int64_t now = live_elements.fetch_add(n, std::memory_order_relaxed) + n;
  int64_t peak = peak_elements.load(std::memory_order_relaxed);
  while (now > peak && !peak_elements.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
  }
}
}  // namespace

int64_t LiveArrayElements() { return live_elements.load(std::memory_order_relaxed); }
int64_t PeakArrayElements() { return peak_elements.load(std::memory_order_relaxed); }
void ResetPeakArrayElements() { peak_elements.store(LiveArrayElements(), std::memory_order_relaxed); }

Array::Array(PrimitiveType type, std::vector<int64_t> dims) : type_(type), dims_(std::move(dims)) {
  size_ = 1;
  for (int64_t d : dims_) size_ *= d;
  is_complex_ = IsComplexType(type);
  is_float_ = IsFloatingPointType(type) || is_complex_;
  if (is_float_) {
    f_.assign(size_, 0.0);
    if (is_complex_) im_.assign(size_, 0.0);
  } else {
    i_.assign(size_, 0);
  }
  counted_ = is_complex_ ? 2 * size_ : size_;
  CountElements(counted_);
}

Array::Array(const Array& other)
    : type_(other.type_), dims_(other.dims_), size_(other.size_), is_float_(other.is_float_),
      is_complex_(other.is_complex_), f_(other.f_), im_(other.im_), i_(other.i_),
      counted_(other.counted_) {
  CountElements(counted_);
}

Array::Array(Array&& other) noexcept
    : type_(other.type_), dims_(std::move(other.dims_)), size_(other.size_),
      is_float_(other.is_float_), is_complex_(other.is_complex_), f_(std::move(other.f_)),
      im_(std::move(other.im_)), i_(std::move(other.i_)), counted_(other.counted_) {
  other.counted_ = 0;
  other.size_ = 0;
}

Array& Array::operator=(const Array& other) {
  if (this != &other) *this = Array(other);
  return *this;
}

Array& Array::operator=(Array&& other) noexcept {
  if (this != &other) {
    CountElements(-counted_);
    type_ = other.type_;
    dims_ = std::move(other.dims_);
    size_ = other.size_;
    is_float_ = other.is_float_;
    is_complex_ = other.is_complex_;
    f_ = std::move(other.f_);
    im_ = std::move(other.im_);
    i_ = std::move(other.i_);
    counted_ = other.counted_;
    other.counted_ = 0;
    other.size_ = 0;
  }
  return *this;
}

Array::~Array() { CountElements(-counted_); }

bool Array::is_unsigned() const { return IsUnsignedIntegralType(type_); }

double Array::GetDouble(int64_t index) const {
  if (is_float_) return f_[index];
  if (type_ == PrimitiveType::U64) return static_cast<double>(static_cast<uint64_t>(i_[index]));
  return static_cast<double>(i_[index]);
}

int64_t Array::GetInt(int64_t index) const {
  if (!is_float_) return i_[index];
  const double v = f_[index];
  if (std::isnan(v)) return 0;
  if (v >= 9.2233720368547758e18) return std::numeric_limits<int64_t>::max();
  if (v <= -9.2233720368547758e18) return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(v);
}

void Array::SetDouble(int64_t index, double value) {
  if (is_float_) {
    f_[index] = RoundToFloatType(type_, value);
    return;
  }
  if (type_ == PrimitiveType::PRED) {
    i_[index] = value != 0 ? 1 : 0;
    return;
  }
  // Float to integer: NaN -> 0, saturate to the type's range, truncate.
  double lo, hi;
  switch (type_) {
    case PrimitiveType::S8: lo = -128; hi = 127; break;
    case PrimitiveType::S16: lo = -32768; hi = 32767; break;
    case PrimitiveType::S32: lo = -2147483648.0; hi = 2147483647.0; break;
    case PrimitiveType::U8: lo = 0; hi = 255; break;
    case PrimitiveType::U16: lo = 0; hi = 65535; break;
    case PrimitiveType::U32: lo = 0; hi = 4294967295.0; break;
    case PrimitiveType::S2: lo = -2; hi = 1; break;
    case PrimitiveType::S4: lo = -8; hi = 7; break;
    case PrimitiveType::U2: lo = 0; hi = 3; break;
    case PrimitiveType::U4: lo = 0; hi = 15; break;
    case PrimitiveType::U64: lo = 0; hi = 18446744073709551615.0; break;
    default: lo = -9223372036854775808.0; hi = 9223372036854775807.0; break;
  }
  if (std::isnan(value)) {
    i_[index] = 0;
  } else if (value <= lo) {
    i_[index] = type_ == PrimitiveType::U64 ? 0 : static_cast<int64_t>(lo);
  } else if (value >= hi) {
    i_[index] = type_ == PrimitiveType::U64 ? -1 /* all ones */
                : type_ == PrimitiveType::S64 ? std::numeric_limits<int64_t>::max()
                                              : static_cast<int64_t>(hi);
  } else if (type_ == PrimitiveType::U64) {
    i_[index] = static_cast<int64_t>(static_cast<uint64_t>(value));
  } else {
    i_[index] = static_cast<int64_t>(value);
  }
}

void Array::SetComplex(int64_t index, double re, double im) {
  f_[index] = RoundToFloatType(type_, re);
  if (is_complex_) im_[index] = RoundToFloatType(type_, im);
}

void Array::FillWith(const Array& scalar) {
  if (is_float_) {
    std::fill(f_.begin(), f_.end(), scalar.f_[0]);
    if (is_complex_) std::fill(im_.begin(), im_.end(), scalar.im_[0]);
  } else {
    std::fill(i_.begin(), i_.end(), scalar.i_[0]);
  }
}

void Array::SetInt(int64_t index, int64_t value) {
  if (is_float_) {
    f_[index] = RoundToFloatType(type_, static_cast<double>(value));
  } else {
    i_[index] = WrapToIntType(type_, value);
  }
}

bool Array::IdenticalTo(const Array& other) const {
  if (type_ != other.type_ || dims_ != other.dims_) return false;
  if (!is_float_) return i_ == other.i_;
  auto same = [](const std::vector<double>& x, const std::vector<double>& y) {
    for (size_t k = 0; k < x.size(); ++k) {
      if (std::isnan(x[k]) && std::isnan(y[k])) continue;
      if (x[k] != y[k]) return false;
    }
    return true;
  };
  return same(f_, other.f_) && same(im_, other.im_);
}

std::string Array::ShapeString() const {
  return absl::StrCat(PrimitiveTypeName(type_), "[", absl::StrJoin(dims_, ","), "]");
}

namespace {

// Shortest decimal text that reads back to the same value of the type.
std::string FormatFloat(PrimitiveType type, double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[64];
  int precision = 1;
  for (; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof(buf), "%.*g", precision, v);
    if (RoundToFloatType(type, std::strtod(buf, nullptr)) == v) break;
  }
  // %g writes 1100 as 1.1e+03; moderate magnitudes read better positional.
  const double mag = std::fabs(v);
  if (std::strchr(buf, 'e') != nullptr && mag >= 1e-4 && mag < 1e15) {
    const int exponent = static_cast<int>(std::floor(std::log10(mag)));
    const int decimals = std::max(0, std::min(precision, 17) - 1 - exponent);
    std::snprintf(buf, sizeof(buf), "%.*f", decimals, v);
  }
  return buf;
}

}  // namespace

void Array::AppendElement(int64_t k, std::string* out) const {
  if (is_complex_) {
    absl::StrAppend(out, "(", FormatFloat(type_, f_[k]), ", ", FormatFloat(type_, im_[k]), ")");
  } else if (is_float_) {
    *out += FormatFloat(type_, f_[k]);
  } else if (type_ == PrimitiveType::PRED) {
    *out += i_[k] ? "true" : "false";
  } else if (type_ == PrimitiveType::U64) {
    absl::StrAppend(out, static_cast<uint64_t>(i_[k]));
  } else {
    absl::StrAppend(out, i_[k]);
  }
}

std::string Array::ToString() const {
  std::string out = ShapeString();
  out += " ";
  if (dims_.empty()) {
    AppendElement(0, &out);
    return out;
  }
  if (size_ == 0) {
    out += "{}";
    return out;
  }
  const int64_t rank = this->rank();
  std::vector<int64_t> index(rank, 0);
  for (int64_t k = 0; k < size_; ++k) {
    // Open a brace for every trailing dimension whose index is 0.
    int64_t opens = 0;
    for (int64_t d = rank - 1; d >= 0 && index[d] == 0; --d) ++opens;
    if (k > 0) out += ", ";
    out.append(opens, '{');
    AppendElement(k, &out);
    int64_t closes = 0;
    for (int64_t d = rank - 1; d >= 0; --d) {
      if (++index[d] < dims_[d]) break;
      index[d] = 0;
      ++closes;
    }
    out.append(closes, '}');
  }
  return out;
}

Value Value::FromArray(Array array) {
  return FromShared(std::make_shared<const Array>(std::move(array)));
}

Value Value::FromShared(std::shared_ptr<const Array> array) {
  Value v;
  v.kind_ = Kind::kArray;
  v.array_ = std::move(array);
  return v;
}

Value Value::Tuple(std::vector<Value> elements) {
  Value v;
  v.kind_ = Kind::kTuple;
  v.elements_ = std::move(elements);
  return v;
}

absl::Status Value::CheckShape(const Shape& shape) const {
  // Explicit stack: tuple shapes are bounded by the parser, but keep walks flat anyway.
  std::vector<std::pair<const Value*, const Shape*>> stack = {{this, &shape}};
  while (!stack.empty()) {
    auto [v, s] = stack.back();
    stack.pop_back();
    if (s->IsTuple()) {
      if (!v->is_tuple() || v->elements().size() != s->tuple_shapes().size()) {
        return absl::InternalError(absl::StrCat("value is not a tuple of ", s->tuple_shapes().size(),
                                                " elements for shape ", s->ToString(false)));
      }
      for (size_t k = 0; k < v->elements().size(); ++k) {
        stack.push_back({&v->elements()[k], &s->tuple_shapes()[k]});
      }
    } else if (s->IsToken()) {
      if (!v->is_token()) return absl::InternalError("value is not a token");
    } else {
      if (!v->is_array()) {
        return absl::InternalError(absl::StrCat("value is not an array of shape ", s->ToString(false)));
      }
      const Array& a = v->array();
      if (a.type() != s->element_type() ||
          !std::equal(a.dims().begin(), a.dims().end(), s->dimensions().begin(),
                      s->dimensions().end())) {
        return absl::InternalError(absl::StrCat("value has shape ", a.ShapeString(),
                                                ", expected ", s->ToString(false)));
      }
    }
  }
  return absl::OkStatus();
}

void Value::CollectLeaves(std::vector<const Array*>* out) const {
  std::vector<const Value*> stack = {this};
  while (!stack.empty()) {
    const Value* v = stack.back();
    stack.pop_back();
    if (v->is_array()) {
      out->push_back(&v->array());
    } else if (v->is_tuple()) {
      for (auto it = v->elements().rbegin(); it != v->elements().rend(); ++it) stack.push_back(&*it);
    }
  }
}

void Value::CollectLeafPaths(
    std::vector<std::pair<std::vector<int64_t>, const Array*>>* out) const {
  struct Item {
    const Value* v;
    std::vector<int64_t> path;
  };
  std::vector<Item> stack = {{this, {}}};
  while (!stack.empty()) {
    Item item = std::move(stack.back());
    stack.pop_back();
    if (item.v->is_array()) {
      out->push_back({item.path, &item.v->array()});
    } else if (item.v->is_tuple()) {
      for (int64_t k = static_cast<int64_t>(item.v->elements().size()) - 1; k >= 0; --k) {
        std::vector<int64_t> p = item.path;
        p.push_back(k);
        stack.push_back({&item.v->elements()[k], std::move(p)});
      }
    }
  }
}

std::string Value::ToString() const {
  if (is_token()) return "token[]";
  if (is_array()) return array().ToString();
  std::vector<std::string> parts;
  for (const Value& e : elements_) parts.push_back(e.ToString());
  return absl::StrCat("(", absl::StrJoin(parts, ", "), ")");
}

absl::StatusOr<std::vector<Array>> ZeroLeaves(const Shape& shape) {
  std::vector<Array> out;
  std::vector<const Shape*> stack = {&shape};  // depth-first, no recursion
  while (!stack.empty()) {
    const Shape* s = stack.back();
    stack.pop_back();
    if (s->IsTuple()) {
      for (auto it = s->tuple_shapes().rbegin(); it != s->tuple_shapes().rend(); ++it) stack.push_back(&*it);
      continue;
    }
    if (s->IsToken()) continue;
    if (!s->IsArray()) {
      return absl::UnimplementedError(absl::StrCat("shape ", s->ToString(false), " has no value"));
    }
    if (auto st = CheckSupportedElementType(s->element_type()); !st.ok()) return st;
    for (int64_t d = 0; d < s->rank(); ++d) {
      if (s->is_dynamic_dimension(d)) {
        return absl::UnimplementedError(absl::StrCat("dynamic shape ", s->ToString(false), " is not supported"));
      }
    }
    out.emplace_back(s->element_type(), std::vector<int64_t>(s->dimensions().begin(), s->dimensions().end()));
  }
  return out;
}

absl::StatusOr<Value> ZeroValue(const Shape& shape) {
  auto leaves = ZeroLeaves(shape);
  if (!leaves.ok()) return leaves.status();
  return ValueFromLeaves(shape, *std::move(leaves));
}

absl::StatusOr<Value> ValueFromLeaves(const Shape& shape, std::vector<Array> leaves) {
  size_t next = 0;
  auto take = [&](const Shape& s) -> absl::StatusOr<Value> {
    if (s.IsToken()) return Value::Token();
    if (next >= leaves.size()) return absl::InternalError("too few leaves for the shape");
    return Value::FromArray(std::move(leaves[next++]));
  };
  if (!shape.IsTuple()) return take(shape);
  struct Item {
    const Shape* shape;
    std::vector<Value> done;
    size_t child = 0;
  };
  std::vector<Item> stack;
  stack.push_back({&shape, {}, 0});
  Value result;
  while (!stack.empty()) {
    Item& top = stack.back();
    if (top.child == top.shape->tuple_shapes().size()) {
      Value v = Value::Tuple(std::move(top.done));
      stack.pop_back();
      if (stack.empty()) result = std::move(v);
      else stack.back().done.push_back(std::move(v));
      continue;
    }
    const Shape& s = top.shape->tuple_shapes()[top.child++];
    if (s.IsTuple()) {
      stack.push_back({&s, {}, 0});
      continue;
    }
    auto v = take(s);
    if (!v.ok()) return v.status();
    top.done.push_back(*std::move(v));
  }
  return result;
}

uint64_t SplitMix64(uint64_t* state) {
  uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

void FillPseudoRandom(uint64_t state, Array* a) {
  SplitMix64(&state);
  for (int64_t k = 0; k < a->size(); ++k) {
    const uint64_t r = SplitMix64(&state);
    if (a->is_complex()) {  // both parts uniform in [-1, 1)
      const double re = static_cast<double>(r >> 11) * (1.0 / 9007199254740992.0);
      const double im = static_cast<double>(SplitMix64(&state) >> 11) * (1.0 / 9007199254740992.0);
      a->SetComplex(k, 2.0 * re - 1.0, 2.0 * im - 1.0);
    } else if (a->type() == PrimitiveType::F8E8M0FNU) {  // no zero or negatives: 2^[-8, 7]
      a->SetDouble(k, std::ldexp(1.0, static_cast<int>(r % 16) - 8));
    } else if (a->is_float()) {
      const double u = static_cast<double>(r >> 11) * (1.0 / 9007199254740992.0);
      a->SetDouble(k, 2.0 * u - 1.0);
    } else if (a->type() == PrimitiveType::PRED) {
      a->i()[k] = static_cast<int64_t>(r & 1);
    } else if (a->is_unsigned()) {
      a->SetInt(k, static_cast<int64_t>(r % 9));
    } else {
      a->SetInt(k, static_cast<int64_t>(r % 9) - 4);
    }
  }
}

std::vector<int64_t> RowMajorStrides(absl::Span<const int64_t> dims) {
  std::vector<int64_t> strides(dims.size(), 1);
  for (int64_t d = static_cast<int64_t>(dims.size()) - 2; d >= 0; --d) {
    strides[d] = strides[d + 1] * dims[d + 1];
  }
  return strides;
}

}  // namespace eval
}  // namespace hilo

// Values of the reference interpreter: typed array buffers, tuples, tokens.
//
// An Array is an element type, dimensions and row-major storage. Storage is
// kept in a wide type: doubles for every floating-point type, int64 for pred
// and every integer type (u64 as its two's-complement bit pattern). Every
// value stored is already representable in the element type: producers round
// (floats, bf16/f16 to nearest even) or wrap (integers) at the instruction's
// output, which is what XLA's reference evaluator does when it computes in a
// wider type.
#ifndef HILO_EVAL_VALUE_H_
#define HILO_EVAL_VALUE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "hilo/ir/shape.h"

namespace hilo {
namespace eval {

// True for the element types the interpreter computes with: pred, s2, s4,
// s8, s16, s32, s64, u2, u4, u8, u16, u32, u64, f16, bf16, f32, f64, the
// fp8 types, f4e2m1fn, f8e8m0fnu, c64 and c128.
bool IsSupportedElementType(PrimitiveType type);
absl::Status CheckSupportedElementType(PrimitiveType type);

// Rounds a double to the nearest value of a floating-point element type
// (f64 unchanged; f32 by cast; bf16 and f16 via f32 then to nearest even,
// which is what XLA's evaluator does when it computes them in f32).
double RoundToFloatType(PrimitiveType type, double value);
// The bit encodings of the float types of at most 8 bits (the fp8 types,
// f4e2m1fn, f8e8m0fnu), from their definitions: value of a code, and code of
// a value of the type (a NaN: the format's canonical NaN, ml_dtypes' quiet
// NaN, signed where the format's NaNs are; a -0 in a format without one: +0).
bool HasSmallFloatEncoding(PrimitiveType type);
double SmallFloatFromBits(PrimitiveType type, uint64_t bits);
uint64_t SmallFloatBits(PrimitiveType type, double value);
// Wraps an integer to an integer element type (two's complement), or makes
// pred 0/1.
int64_t WrapToIntType(PrimitiveType type, int64_t value);

class Array {
 public:
  Array() = default;
  // Zero-filled. The type must be supported (see IsSupportedElementType).
  Array(PrimitiveType type, std::vector<int64_t> dims);
  // Copies and destruction keep the live-element count (LiveArrayElements).
  Array(const Array& other);
  Array(Array&& other) noexcept;
  Array& operator=(const Array& other);
  Array& operator=(Array&& other) noexcept;
  ~Array();

  PrimitiveType type() const { return type_; }
  const std::vector<int64_t>& dims() const { return dims_; }
  int64_t rank() const { return static_cast<int64_t>(dims_.size()); }
  int64_t size() const { return size_; }
  // Floating-point and complex types (complex: real parts in f(),
  // imaginary parts in im()).
  bool is_float() const { return is_float_; }
  bool is_complex() const { return is_complex_; }
  bool is_unsigned() const;

  // Storage: f() for floating-point types, i() otherwise.
  std::vector<double>& f() { return f_; }
  const std::vector<double>& f() const { return f_; }
  std::vector<int64_t>& i() { return i_; }
  const std::vector<int64_t>& i() const { return i_; }
  // Imaginary parts of a complex array (empty otherwise).
  std::vector<double>& im() { return im_; }
  const std::vector<double>& im() const { return im_; }

  // out[dst] = src[from] (same element type): every part of the element.
  void CopyElement(int64_t dst, const Array& src, int64_t from) {
    if (is_float_) {
      f_[dst] = src.f_[from];
      if (is_complex_) im_[dst] = src.im_[from];
    } else {
      i_[dst] = src.i_[from];
    }
  }
  // Every element = element 0 of `scalar` (same element type).
  void FillWith(const Array& scalar);
  // Stores a complex element, each part rounded to the component type.
  void SetComplex(int64_t index, double re, double im);

  // Element `index` as a double (u64 read unsigned; complex: the real part).
  double GetDouble(int64_t index) const;
  // Element as an int64 (floats truncated toward zero, saturating; NaN -> 0).
  int64_t GetInt(int64_t index) const;
  // Stores with rounding / wrapping to the element type (complex: the real
  // part; the imaginary part is left as it is).
  void SetDouble(int64_t index, double value);
  void SetInt(int64_t index, int64_t value);

  // Same type, same dimensions, same stored values (NaNs compare equal).
  bool IdenticalTo(const Array& other) const;

  // Element k as literal text (`1.5`, `true`, `(1, 2)` for complex).
  void AppendElement(int64_t k, std::string* out) const;
  // `f32[2,2] {{1, 2}, {3, 4}}` (XLA-like literal text).
  std::string ToString() const;
  // The shape as text, e.g. `f32[2,2]`.
  std::string ShapeString() const;

 private:
  PrimitiveType type_ = PrimitiveType::F32;
  std::vector<int64_t> dims_;
  int64_t size_ = 0;
  bool is_float_ = true;
  bool is_complex_ = false;
  std::vector<double> f_;
  std::vector<double> im_;
  std::vector<int64_t> i_;
  int64_t counted_ = 0;  // elements added to the live count by this array
};

// The real type of a complex type's parts (c64 -> f32, c128 -> f64); the
// type itself otherwise.
PrimitiveType ComplexComponentType(PrimitiveType type);

// Elements held by all live Arrays of the process (8 bytes each; a complex
// element counts twice), and the
// largest that count has been since the last ResetPeakArrayElements: the
// interpreter's memory, bounded by InterpreterOptions::max_memory_bytes and
// reported by the equivalence check.
int64_t LiveArrayElements();
int64_t PeakArrayElements();
void ResetPeakArrayElements();

// An HLO value: an array, a tuple of values, or a token. Arrays are shared
// and immutable once built, so copying a Value (tuple, get-tuple-element,
// while-loop state, parameters) never copies element data.
class Value {
 public:
  enum class Kind { kArray, kTuple, kToken };

  Value() : kind_(Kind::kToken) {}
  static Value Token() { return Value(); }
  static Value FromArray(Array array);
  static Value FromShared(std::shared_ptr<const Array> array);
  static Value Tuple(std::vector<Value> elements);

  Kind kind() const { return kind_; }
  bool is_array() const { return kind_ == Kind::kArray; }
  bool is_tuple() const { return kind_ == Kind::kTuple; }
  bool is_token() const { return kind_ == Kind::kToken; }

  const Array& array() const { return *array_; }
  const std::shared_ptr<const Array>& shared_array() const { return array_; }
  const std::vector<Value>& elements() const { return elements_; }
  std::vector<Value>* mutable_elements() { return &elements_; }

  // Checks that the value has `shape` (element types, dimensions, tuple
  // structure; layouts ignored).
  absl::Status CheckShape(const Shape& shape) const;

  // Array leaves in order (tuples flattened depth-first).
  void CollectLeaves(std::vector<const Array*>* out) const;
  // The same leaves with their tuple index paths ({} for an array value).
  void CollectLeafPaths(std::vector<std::pair<std::vector<int64_t>, const Array*>>* out) const;

  std::string ToString() const;

 private:
  Kind kind_;
  std::shared_ptr<const Array> array_;
  std::vector<Value> elements_;
};

// A zero-filled value of `shape` (tokens for token leaves).
absl::StatusOr<Value> ZeroValue(const Shape& shape);
// The zero-filled array leaves of `shape`, depth-first (tokens have none).
absl::StatusOr<std::vector<Array>> ZeroLeaves(const Shape& shape);
// The value of `shape` whose array leaves are `leaves`, depth-first, and
// whose token leaves are tokens: the one builder of tuple values from leaves
// (constants, random inputs, uninterpreted parts, ZeroValue). No recursion
// on depth.
absl::StatusOr<Value> ValueFromLeaves(const Shape& shape, std::vector<Array> leaves);

// splitmix64: the interpreter's one pseudo-random generator.
uint64_t SplitMix64(uint64_t* state);
// Fills `a` from the stream started at `state`: floats uniform in [-1, 1)
// (rounded to the type), signed integers in [-4, 4], unsigned in [0, 8],
// pred 0/1.
void FillPseudoRandom(uint64_t state, Array* a);

// Row-major strides of `dims`.
std::vector<int64_t> RowMajorStrides(absl::Span<const int64_t> dims);

}  // namespace eval
}  // namespace hilo

#endif  // HILO_EVAL_VALUE_H_

// Shape and Layout: the type of an HLO value.
//
// An array shape is an element type, dimensions and an optional layout; a
// tuple shape is an ordered list of shapes; token and opaque shapes have no
// dimensions. Dimensions may be static, bounded-dynamic (`<=N`) or unbounded
// (`?`). Layout details after the `:` (tiles, memory space, element size...)
// are not interpreted; they are kept verbatim so that they print back
// unchanged.
//
// Nested shapes are recursive values. The parser bounds the nesting depth
// (see text/parser.h), so recursive copies, comparisons and printing of
// shapes can not overflow the stack.
#ifndef HILO_IR_SHAPE_H_
#define HILO_IR_SHAPE_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/types/span.h"
#include "hilo/ir/primitive_type.h"

namespace hilo {

// Size recorded for an unbounded dynamic dimension (`?`).
inline constexpr int64_t kUnboundedSize = INT64_MIN;

// Dimension lists are short (rank <= 4 for almost every HLO value), so they
// live inline in the shape: parsing a module then allocates nothing per
// shape.
using DimensionVector = absl::InlinedVector<int64_t, 4>;

// A value kept behind a pointer and copied deeply: for members that are
// empty in almost every object, so that they cost one pointer there. An
// absent value reads as a default-constructed T.
template <typename T>
class OutOfLine {
 public:
  OutOfLine() = default;
  OutOfLine(const OutOfLine& other)
      : value_(other.value_ != nullptr ? std::make_unique<T>(*other.value_) : nullptr) {}
  OutOfLine(OutOfLine&&) noexcept = default;
  OutOfLine& operator=(const OutOfLine& other) {
    if (this != &other) value_ = other.value_ != nullptr ? std::make_unique<T>(*other.value_) : nullptr;
    return *this;
  }
  OutOfLine& operator=(OutOfLine&&) noexcept = default;

  const T& get() const { return value_ != nullptr ? *value_ : Empty(); }
  T* mutable_get() {
    if (value_ == nullptr) value_ = std::make_unique<T>();
    return value_.get();
  }
  void set(T value) { *mutable_get() = std::move(value); }
  bool operator==(const OutOfLine& other) const { return get() == other.get(); }

 private:
  static const T& Empty() {
    static const T* const empty = new T();
    return *empty;
  }
  std::unique_ptr<T> value_;
};

struct Layout {
  DimensionVector minor_to_major;
  // Everything between the `:` and the closing `}` (for example
  // "T(8,128)(2,1)S(1)"), verbatim; empty when there is no `:` (most
  // layouts, hence out of line).
  OutOfLine<std::string> tail;

  bool operator==(const Layout& other) const = default;
};

class Shape {
 public:
  Shape() = default;  // An invalid (tuple-less, element-less) shape: PrimitiveType::TUPLE with no elements.

  static Shape MakeArray(PrimitiveType type, absl::Span<const int64_t> dims);
  static Shape MakeArrayWithLayout(PrimitiveType type, absl::Span<const int64_t> dims,
                                   absl::Span<const int64_t> minor_to_major);
  static Shape MakeScalar(PrimitiveType type) { return MakeArray(type, {}); }
  static Shape MakeTuple(std::vector<Shape> elements);
  static Shape MakeToken();
  static Shape MakeOpaque();
  // XLA's buffer type `b(shape)`: a mutable buffer holding one array.
  static Shape MakeBuffer(Shape contents);

  PrimitiveType element_type() const { return element_type_; }
  void set_element_type(PrimitiveType type) { element_type_ = type; }

  bool IsArray() const { return IsArrayType(element_type_); }
  bool IsTuple() const { return element_type_ == PrimitiveType::TUPLE; }
  bool IsToken() const { return element_type_ == PrimitiveType::TOKEN; }
  bool IsOpaque() const { return element_type_ == PrimitiveType::OPAQUE_TYPE; }
  bool IsBuffer() const { return element_type_ == PrimitiveType::BUFFER; }
  // The shape a buffer holds (only for IsBuffer()).
  const Shape& buffer_contents() const { return tuple_shapes()[0]; }

  // Array dimensions.
  int64_t rank() const { return static_cast<int64_t>(dims_.size()); }
  absl::Span<const int64_t> dimensions() const { return dims_; }
  int64_t dimensions(int64_t i) const { return dims_[i]; }
  void set_dimensions(int64_t i, int64_t size) { dims_[i] = size; }
  // True for `<=N` and `?` dimensions.
  bool is_dynamic_dimension(int64_t i) const {
    return i < kInlineDynamicFlags ? (dynamic_low_ >> i) & 1 : extra_.get().dynamic_high[i - kInlineDynamicFlags];
  }
  void set_dynamic_dimension(int64_t i, bool dynamic);
  bool is_unbounded_dimension(int64_t i) const { return dims_[i] == kUnboundedSize; }
  bool is_static() const;  // no dynamic dimension anywhere (tuples included)
  void add_dimension(int64_t size, bool dynamic = false);

  // Number of elements of an array shape (product of dimensions; an
  // unbounded dimension counts as 0). nullopt when the product overflows int64.
  std::optional<int64_t> checked_elements() const;
  // As checked_elements(), saturating to INT64_MAX on overflow.
  int64_t elements() const;
  // elements() * ByteWidth(element_type) for arrays, saturating; 0 otherwise.
  int64_t byte_size() const;

  // Layout.
  bool has_layout() const { return has_layout_; }
  // Only when has_layout().
  const Layout& layout() const { return layout_; }
  // Gives the shape an empty layout first if it has none.
  Layout* mutable_layout() {
    has_layout_ = true;
    return &layout_;
  }
  void set_layout(Layout layout) {
    layout_ = std::move(layout);
    has_layout_ = true;
  }
  void clear_layout() {
    // Cleared in place: moving an empty Layout in makes GCC 12 warn
    // (-Wmaybe-uninitialized) about the unused inline storage abseil's
    // InlinedVector copies.
    layout_.minor_to_major.clear();
    layout_.tail = {};
    has_layout_ = false;
  }

  // Tuple elements. (A buffer keeps its contents as its single element.)
  const std::vector<Shape>& tuple_shapes() const { return extra_.get().tuple_shapes; }
  std::vector<Shape>* mutable_tuple_shapes() { return &extra_.mutable_get()->tuple_shapes; }
  int64_t tuple_shapes_size() const { return static_cast<int64_t>(tuple_shapes().size()); }
  const Shape& tuple_shapes(int64_t i) const { return tuple_shapes()[i]; }

  // True if every array leaf has an integral (signed or unsigned, not pred)
  // element type. A shape with no array leaf returns true, as XLA's
  // ShapeUtil::... ForEachSubshape-based checks do.
  bool AreAllLeavesIntegers() const;

  // Text form as XLA prints it: `f32[2,<=3,?]{1,0:T(8,128)}`, `(s32[], token[])`.
  std::string ToString(bool print_layout = true) const;
  void AppendTo(std::string* out, bool print_layout = true) const;

  // Same element types, dimensions, dynamic flags and tuple structure; layouts ignored.
  bool Compatible(const Shape& other) const;
  // Compatible and same layouts.
  bool operator==(const Shape& other) const;
  bool operator!=(const Shape& other) const { return !(*this == other); }

 private:
  // Every instruction holds a shape, so its size counts: the common parts
  // (type, up to four dimensions, a layout without tail) are inline, the
  // rest (tuple elements, dynamic flags past the 32nd dimension) behind one
  // pointer.
  static constexpr int64_t kInlineDynamicFlags = 32;
  struct Extra {
    std::vector<Shape> tuple_shapes;
    // Flags of dimensions kInlineDynamicFlags..rank-1: empty up to rank 32,
    // else rank - 32 entries.
    std::vector<bool> dynamic_high;
    bool operator==(const Extra& other) const = default;
  };

  PrimitiveType element_type_ = PrimitiveType::TUPLE;
  bool has_layout_ = false;
  uint32_t dynamic_low_ = 0;  // bit i: dimension i is dynamic (i < 32)
  DimensionVector dims_;
  Layout layout_;  // empty unless has_layout_
  OutOfLine<Extra> extra_;
};

}  // namespace hilo

#endif  // HILO_IR_SHAPE_H_

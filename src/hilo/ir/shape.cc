#include "hilo/ir/shape.h"

#include "hilo/ir/text_form.h"

namespace hilo {

Shape Shape::MakeArray(PrimitiveType type, absl::Span<const int64_t> dims) {
  Shape shape;
  shape.element_type_ = type;
  shape.dims_.assign(dims.begin(), dims.end());
  if (shape.rank() > kInlineDynamicFlags) {
    shape.extra_.mutable_get()->dynamic_high.assign(shape.rank() - kInlineDynamicFlags, false);
  }
  return shape;
}

Shape Shape::MakeArrayWithLayout(PrimitiveType type, absl::Span<const int64_t> dims,
                                 absl::Span<const int64_t> minor_to_major) {
  Shape shape = MakeArray(type, dims);
  shape.mutable_layout()->minor_to_major.assign(minor_to_major.begin(), minor_to_major.end());
  return shape;
}

Shape Shape::MakeTuple(std::vector<Shape> elements) {
  Shape shape;
  shape.element_type_ = PrimitiveType::TUPLE;
  if (!elements.empty()) *shape.mutable_tuple_shapes() = std::move(elements);
  return shape;
}

Shape Shape::MakeToken() {
  Shape shape;
  shape.element_type_ = PrimitiveType::TOKEN;
  return shape;
}

Shape Shape::MakeOpaque() {
  Shape shape;
  shape.element_type_ = PrimitiveType::OPAQUE_TYPE;
  return shape;
}

Shape Shape::MakeBuffer(Shape contents) {
  Shape shape;
  shape.element_type_ = PrimitiveType::BUFFER;
  shape.mutable_tuple_shapes()->push_back(std::move(contents));
  return shape;
}

void Shape::add_dimension(int64_t size, bool dynamic) {
  dims_.push_back(size);
  const int64_t i = rank() - 1;
  if (i < kInlineDynamicFlags) {
    dynamic_low_ |= static_cast<uint32_t>(dynamic) << i;
  } else {
    extra_.mutable_get()->dynamic_high.push_back(dynamic);
  }
}

void Shape::set_dynamic_dimension(int64_t i, bool dynamic) {
  if (i < kInlineDynamicFlags) {
    dynamic_low_ = (dynamic_low_ & ~(uint32_t{1} << i)) | (static_cast<uint32_t>(dynamic) << i);
  } else {
    extra_.mutable_get()->dynamic_high[i - kInlineDynamicFlags] = dynamic;
  }
}

bool Shape::is_static() const {
  if (dynamic_low_ != 0) return false;
  for (bool d : extra_.get().dynamic_high) {
    if (d) return false;
  }
  for (const Shape& s : tuple_shapes()) {
    if (!s.is_static()) return false;
  }
  return true;
}

std::optional<int64_t> Shape::checked_elements() const {
  int64_t product = 1;
  for (int64_t d : dims_) {
    int64_t size = d == kUnboundedSize ? 0 : d;
    if (__builtin_mul_overflow(product, size, &product)) return std::nullopt;
  }
  return product;
}

int64_t Shape::elements() const {
  std::optional<int64_t> n = checked_elements();
  return n ? *n : INT64_MAX;
}

int64_t Shape::byte_size() const {
  if (!IsArray()) return 0;
  int64_t bytes;
  if (__builtin_mul_overflow(elements(), ByteWidth(element_type_), &bytes)) return INT64_MAX;
  return bytes;
}

bool Shape::AreAllLeavesIntegers() const {
  if (IsTuple() || IsBuffer()) {
    for (const Shape& s : tuple_shapes()) {
      if (!s.AreAllLeavesIntegers()) return false;
    }
    return true;
  }
  if (!IsArray()) return true;
  return IsIntegralType(element_type_);
}

void Shape::AppendTo(std::string* out, bool print_layout) const {
  StringTextOut text(out);
  WriteShape(*this, print_layout, /*index_comments=*/false, text);
}

std::string Shape::ToString(bool print_layout) const {
  std::string out;
  AppendTo(&out, print_layout);
  return out;
}

bool Shape::Compatible(const Shape& other) const {
  if (element_type_ != other.element_type_) return false;
  if (IsTuple() || IsBuffer()) {
    if (tuple_shapes().size() != other.tuple_shapes().size()) return false;
    for (size_t i = 0; i < tuple_shapes().size(); ++i) {
      if (!tuple_shapes()[i].Compatible(other.tuple_shapes()[i])) return false;
    }
    return true;
  }
  return dims_ == other.dims_ && dynamic_low_ == other.dynamic_low_ &&
         extra_.get().dynamic_high == other.extra_.get().dynamic_high;
}

bool Shape::operator==(const Shape& other) const {
  if (element_type_ != other.element_type_ || dims_ != other.dims_ ||
      dynamic_low_ != other.dynamic_low_ || has_layout_ != other.has_layout_ ||
      !(layout_ == other.layout_) || !(extra_.get().dynamic_high == other.extra_.get().dynamic_high) ||
      tuple_shapes().size() != other.tuple_shapes().size()) {
    return false;
  }
  for (size_t i = 0; i < tuple_shapes().size(); ++i) {
    if (tuple_shapes()[i] != other.tuple_shapes()[i]) return false;
  }
  return true;
}

}  // namespace hilo

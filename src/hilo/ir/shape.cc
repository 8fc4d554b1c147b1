#include "hilo/ir/shape.h"

#include "absl/strings/str_cat.h"

namespace hilo {

Shape Shape::MakeArray(PrimitiveType type, absl::Span<const int64_t> dims) {
  Shape shape;
  shape.element_type_ = type;
  shape.dynamic_.assign(dims.size(), false);
  shape.dims_.assign(dims.begin(), dims.end());
  return shape;
}

Shape Shape::MakeArrayWithLayout(PrimitiveType type, absl::Span<const int64_t> dims,
                                 absl::Span<const int64_t> minor_to_major) {
  Shape shape = MakeArray(type, dims);
  shape.layout_ = Layout{DimensionVector(minor_to_major.begin(), minor_to_major.end()), ""};
  return shape;
}

Shape Shape::MakeTuple(std::vector<Shape> elements) {
  Shape shape;
  shape.element_type_ = PrimitiveType::TUPLE;
  shape.tuple_shapes_ = std::move(elements);
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
  shape.tuple_shapes_.push_back(std::move(contents));
  return shape;
}

void Shape::add_dimension(int64_t size, bool dynamic) {
  dims_.push_back(size);
  dynamic_.push_back(dynamic);
}

bool Shape::is_static() const {
  for (bool d : dynamic_) {
    if (d) return false;
  }
  for (const Shape& s : tuple_shapes_) {
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
    for (const Shape& s : tuple_shapes_) {
      if (!s.AreAllLeavesIntegers()) return false;
    }
    return true;
  }
  if (!IsArray()) return true;
  return IsIntegralType(element_type_);
}

void Shape::AppendTo(std::string* out, bool print_layout) const {
  if (IsBuffer()) {
    out->append("b(");
    buffer_contents().AppendTo(out, print_layout);
    out->push_back(')');
    return;
  }
  if (IsTuple()) {
    out->push_back('(');
    for (size_t i = 0; i < tuple_shapes_.size(); ++i) {
      if (i > 0) out->append(", ");
      tuple_shapes_[i].AppendTo(out, print_layout);
    }
    out->push_back(')');
    return;
  }
  absl::StrAppend(out, PrimitiveTypeName(element_type_));
  out->push_back('[');
  for (size_t i = 0; i < dims_.size(); ++i) {
    if (i > 0) out->push_back(',');
    if (dims_[i] == kUnboundedSize) {
      out->push_back('?');
      continue;
    }
    if (dynamic_[i]) out->append("<=");
    absl::StrAppend(out, dims_[i]);
  }
  out->push_back(']');
  if (print_layout && layout_.has_value()) {
    out->push_back('{');
    for (size_t i = 0; i < layout_->minor_to_major.size(); ++i) {
      if (i > 0) out->push_back(',');
      absl::StrAppend(out, layout_->minor_to_major[i]);
    }
    if (!layout_->tail.empty()) {
      out->push_back(':');
      out->append(layout_->tail);
    }
    out->push_back('}');
  }
}

std::string Shape::ToString(bool print_layout) const {
  std::string out;
  AppendTo(&out, print_layout);
  return out;
}

bool Shape::Compatible(const Shape& other) const {
  if (element_type_ != other.element_type_) return false;
  if (IsTuple() || IsBuffer()) {
    if (tuple_shapes_.size() != other.tuple_shapes_.size()) return false;
    for (size_t i = 0; i < tuple_shapes_.size(); ++i) {
      if (!tuple_shapes_[i].Compatible(other.tuple_shapes_[i])) return false;
    }
    return true;
  }
  return dims_ == other.dims_ && dynamic_ == other.dynamic_;
}

bool Shape::operator==(const Shape& other) const {
  if (element_type_ != other.element_type_ || dims_ != other.dims_ ||
      dynamic_ != other.dynamic_ || layout_ != other.layout_ ||
      tuple_shapes_.size() != other.tuple_shapes_.size()) {
    return false;
  }
  for (size_t i = 0; i < tuple_shapes_.size(); ++i) {
    if (tuple_shapes_[i] != other.tuple_shapes_[i]) return false;
  }
  return true;
}

}  // namespace hilo

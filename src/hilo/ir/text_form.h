// How XLA writes a shape and replica groups, written once for every output:
// Shape::ToString and ReplicaGroups::ToString write to a string
// (StringTextOut), the printer to its buffered writer. `Out` is any type
// with Push(char), Append(absl::string_view) and AppendInt(int64_t).
#ifndef HILO_IR_TEXT_FORM_H_
#define HILO_IR_TEXT_FORM_H_

#include <cstdint>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "hilo/ir/primitive_type.h"
#include "hilo/ir/replica_groups.h"
#include "hilo/ir/shape.h"

namespace hilo {

// Appends to a std::string.
class StringTextOut {
 public:
  explicit StringTextOut(std::string* out) : out_(out) {}
  void Push(char c) { out_->push_back(c); }
  void Append(absl::string_view s) { out_->append(s.data(), s.size()); }
  void AppendInt(int64_t v) { absl::StrAppend(out_, v); }

 private:
  std::string* out_;
};

// `a,b,c` from any container of integers.
template <typename Ints, typename Out>
void WriteJoinedInts(const Ints& list, Out& out) {
  bool first = true;
  for (int64_t v : list) {
    if (!first) out.Push(',');
    first = false;
    out.AppendInt(v);
  }
}

// `{a,b,c}`.
template <typename Ints, typename Out>
void WriteIntList(const Ints& list, Out& out) {
  out.Push('{');
  WriteJoinedInts(list, out);
  out.Push('}');
}

// A shape as XLA prints it: `f32[2,<=3,?]{1,0:T(8,128)}`, `(s32[], token[])`,
// `b(f32[2])`. In an instruction line a tuple has an `/*index=N*/` comment
// before every fifth element (`index_comments`); the contents of a buffer
// never do, nor does Shape::ToString. Recursion is bounded by the parser's
// nesting limit.
template <typename Out>
void WriteShape(const Shape& shape, bool print_layout, bool index_comments, Out& out) {
  if (shape.IsBuffer()) {
    out.Append("b(");
    WriteShape(shape.buffer_contents(), print_layout, /*index_comments=*/false, out);
    out.Push(')');
    return;
  }
  if (shape.IsTuple()) {
    out.Push('(');
    for (int64_t i = 0; i < shape.tuple_shapes_size(); ++i) {
      if (i > 0) {
        out.Append(", ");
        if (index_comments && i % 5 == 0) {
          out.Append("/*index=");
          out.AppendInt(i);
          out.Append("*/");
        }
      }
      WriteShape(shape.tuple_shapes(i), print_layout, index_comments, out);
    }
    out.Push(')');
    return;
  }
  out.Append(PrimitiveTypeName(shape.element_type()));
  out.Push('[');
  for (int64_t i = 0; i < shape.rank(); ++i) {
    if (i > 0) out.Push(',');
    if (shape.is_unbounded_dimension(i)) {
      out.Push('?');
      continue;
    }
    if (shape.is_dynamic_dimension(i)) out.Append("<=");
    out.AppendInt(shape.dimensions(i));
  }
  out.Push(']');
  if (print_layout && shape.has_layout()) {
    const Layout& layout = shape.layout();
    out.Push('{');
    WriteJoinedInts(layout.minor_to_major, out);
    if (!layout.tail.get().empty()) {
      out.Push(':');
      out.Append(layout.tail.get());
    }
    out.Push('}');
  }
}

// The explicit form `{{0,1},{2,3}}` (`{}` when empty).
template <typename Out>
void WriteExplicitReplicaGroups(const ReplicaGroups& groups, Out& out) {
  out.Push('{');
  bool first = true;
  for (const auto& group : groups.explicit_groups()) {
    if (!first) out.Push(',');
    first = false;
    WriteIntList(group, out);
  }
  out.Push('}');
}

// Replica groups as XLA prints them, without the `replica_groups=` prefix:
// `{{0,1},{2,3}}`, `{}`, `[2,4]<=[4,2]T(1,0)`, or the raw text.
template <typename Out>
void WriteReplicaGroups(const ReplicaGroups& groups, Out& out) {
  switch (groups.form()) {
    case ReplicaGroups::Form::kExplicit:
      WriteExplicitReplicaGroups(groups, out);
      return;
    case ReplicaGroups::Form::kIota: {
      const IotaReplicaGroupList& iota = groups.iota();
      out.Push('[');
      out.AppendInt(iota.num_groups);
      out.Push(',');
      out.AppendInt(iota.group_size);
      out.Append("]<=[");
      WriteJoinedInts(iota.reshape_dims, out);
      out.Push(']');
      if (!iota.transpose_perm.empty()) {
        out.Append("T(");
        WriteJoinedInts(iota.transpose_perm, out);
        out.Push(')');
      }
      return;
    }
    case ReplicaGroups::Form::kRaw:
      out.Append(groups.raw());
      return;
  }
}

}  // namespace hilo

#endif  // HILO_IR_TEXT_FORM_H_

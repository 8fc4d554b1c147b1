// reduce-window (variadic) and select-and-scatter, with XLA's HloEvaluator as
// the reference: window positions that fall into padding or into a
// base-dilation hole are skipped (not combined with anything), and elements
// are visited in row-major order of the window.
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "hilo/eval/ops_internal.h"

namespace hilo {
namespace eval {
namespace {

// The windows of an array of dimensions `dims`: for each output position, the
// input offsets its window reads, in row-major window order.
class WindowWalk {
 public:
  WindowWalk(const std::vector<WindowDim>& window, const std::vector<int64_t>& dims)
      : window_(window), dims_(dims), strides_(RowMajorStrides(dims)) {
    for (size_t d = 0; d < window.size(); ++d) out_dims_.push_back(window[d].OutputSize(dims[d]));
  }
  // -1 entries when a dimension has no valid windowed size.
  const std::vector<int64_t>& out_dims() const { return out_dims_; }

  // Calls visit(input_offset) for every in-bounds element of the window of
  // output position `out_index` (a row-major offset into out_dims()).
  template <typename Visit>
  void ForEach(int64_t out_index, Visit visit) {
    const int64_t rank = static_cast<int64_t>(dims_.size());
    pos_.resize(rank);
    win_.assign(rank, 0);
    for (int64_t d = rank - 1; d >= 0; --d) {
      pos_[d] = out_index % out_dims_[d];
      out_index /= out_dims_[d];
    }
    int64_t count = 1;
    for (const WindowDim& w : window_) count *= w.size;
    for (int64_t e = 0; e < count; ++e) {
      int64_t offset = 0;
      bool inside = true;
      for (int64_t d = 0; d < rank && inside; ++d) {
        const int64_t i = window_[d].InputIndex(pos_[d], win_[d], dims_[d]);
        inside = i >= 0;
        offset += i * strides_[d];
      }
      if (inside) visit(offset);
      for (int64_t d = rank - 1; d >= 0; --d) {
        if (++win_[d] < window_[d].size) break;
        win_[d] = 0;
      }
    }
  }

 private:
  const std::vector<WindowDim>& window_;
  std::vector<int64_t> dims_, strides_, out_dims_, pos_, win_;
};

absl::Status CheckWindowedDims(const HloInstruction& instr, const std::vector<int64_t>& dims,
                               const Shape& expected) {
  if (!expected.IsArray() || dims != DimsOf(expected)) {
    return Error(instr, absl::StrCat("computed dimensions [", absl::StrJoin(dims, ","), "] differ from ",
                                     expected.ToString(false)));
  }
  return absl::OkStatus();
}

Array Filled(PrimitiveType type, const std::vector<int64_t>& dims, const Array& scalar) {
  Array out(type, dims);
  if (out.is_float()) std::fill(out.f().begin(), out.f().end(), scalar.f()[0]);
  else std::fill(out.i().begin(), out.i().end(), scalar.i()[0]);
  return out;
}

}  // namespace

absl::StatusOr<Value> ReduceWindow(const HloInstruction& instr, absl::Span<const Value* const> ops,
                                   const ApplyFn& apply) {
  if (ops.empty() || ops.size() % 2 != 0) return Error(instr, "needs N inputs and N init values");
  const size_t n = ops.size() / 2;
  for (const Value* v : ops) {
    if (!v->is_array()) return Error(instr, "operand is not an array");
  }
  const Array& first = ops[0]->array();
  auto window = WindowAttribute(instr, first.rank());
  if (!window.ok()) return window.status();
  WindowWalk walk(*window, first.dims());
  std::vector<Array> outs;
  std::vector<const Array*> xs;
  for (size_t v = 0; v < n; ++v) {
    const Array& x = ops[v]->array();
    const Array& init = ops[n + v]->array();
    if (x.dims() != first.dims()) return Error(instr, "inputs have different dimensions");
    if (init.size() != 1 || init.type() != x.type()) return Error(instr, "init value is not a scalar of the input's type");
    const Shape& expected = n == 1 ? instr.shape() : instr.shape().tuple_shapes(v);
    if (n > 1 && (!instr.shape().IsTuple() || instr.shape().tuple_shapes_size() != static_cast<int64_t>(n))) {
      return Error(instr, "a variadic reduce-window needs a tuple result");
    }
    EVAL_RETURN_IF_ERROR(CheckWindowedDims(instr, walk.out_dims(), expected));
    outs.push_back(Filled(x.type(), walk.out_dims(), init));
    xs.push_back(&x);
  }
  auto reducer = Reducer::Create(instr.to_apply(), static_cast<int64_t>(n), apply);
  if (!reducer.ok()) return Error(instr, reducer.status().message());
  std::vector<Array*> accs;
  for (Array& a : outs) accs.push_back(&a);
  absl::Status status;
  for (int64_t o = 0; o < outs[0].size() && status.ok(); ++o) {
    walk.ForEach(o, [&](int64_t offset) {
      if (status.ok()) status = reducer->Combine(accs, o, xs, offset);
    });
  }
  if (!status.ok()) return Error(instr, status.message());
  return ArraysToValue(std::move(outs), n > 1);
}

// select-and-scatter(operand, source, init): the result starts as init
// everywhere; for each source element (row-major) the window of the operand
// at its position is scanned in row-major order, the first in-bounds element
// selected and replaced by a later one whenever select(selected, candidate)
// is false; then result[selected] = scatter(source element, result[selected]).
absl::StatusOr<Array> SelectAndScatter(const HloInstruction& instr, const Array& operand,
                                       const Array& source, const Array& init, const ApplyFn& apply) {
  const HloComputation* select = instr.called_computation("select");
  const HloComputation* scatter = instr.called_computation("scatter");
  if (select == nullptr || scatter == nullptr) return Error(instr, "needs select= and scatter= computations");
  if (init.size() != 1 || init.type() != operand.type() || source.type() != operand.type()) {
    return Error(instr, "source and init value must have the operand's type");
  }
  auto window = WindowAttribute(instr, operand.rank());
  if (!window.ok()) return window.status();
  WindowWalk walk(*window, operand.dims());
  if (walk.out_dims() != source.dims()) {
    return Error(instr, absl::StrCat("the source's dimensions differ from the windowed operand's [",
                                     absl::StrJoin(walk.out_dims(), ","), "]"));
  }
  const Array* arrays[] = {&operand};
  const std::optional<DirectComparator> direct = FindDirectComparator(select, arrays);
  std::optional<ScalarProgram> program;
  if (!direct.has_value()) {
    program = ScalarProgram::Compile(select);
    if (program.has_value() && (program->root_type() != PrimitiveType::PRED || program->num_parameters() != 2)) {
      program.reset();
    }
  }
  const Array* program_args[] = {&operand, &operand};
  auto reducer = Reducer::Create(scatter, 1, apply);
  if (!reducer.ok()) return Error(instr, reducer.status().message());
  Array out = Filled(operand.type(), operand.dims(), init);
  Array* outp = &out;
  const Array* srcp = &source;
  absl::Status status;
  for (int64_t s = 0; s < source.size() && status.ok(); ++s) {
    int64_t selected = -1;
    walk.ForEach(s, [&](int64_t offset) {
      if (!status.ok()) return;
      if (selected < 0) {
        selected = offset;
        return;
      }
      bool keep;
      if (direct.has_value()) {
        keep = (*direct)(operand, selected, offset);
      } else if (program.has_value()) {
        const int64_t index[] = {selected, offset};
        keep = program->Run(program_args, index).i != 0;
      } else {
        auto r = ApplyScalar(apply, select, {ScalarAt(operand, selected), ScalarAt(operand, offset)});
        if (!r.ok()) {
          status = r.status();
          return;
        }
        keep = r->i()[0] != 0;
      }
      if (!keep) selected = offset;
    });
    if (!status.ok() || selected < 0) continue;
    if (reducer->is_plain_binary()) {
      status = reducer->Combine({&outp, 1}, selected, {&srcp, 1}, s);
      continue;
    }
    auto r = ApplyScalar(apply, scatter, {ScalarAt(source, s), ScalarAt(out, selected)});
    if (!r.ok() || r->type() != out.type()) {
      status = r.ok() ? absl::InvalidArgumentError("scatter returns another type") : r.status();
      continue;
    }
    if (out.is_float()) out.f()[selected] = r->f()[0];
    else out.i()[selected] = r->i()[0];
  }
  if (!status.ok()) return Error(instr, status.message());
  return out;
}

}  // namespace eval
}  // namespace hilo

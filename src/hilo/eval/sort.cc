// sort (variadic, any comparator, stable), the topk instruction and the TopK
// custom-call, with XLA's HloEvaluator as the reference: each 1-D slice along
// the sort dimension is ordered by the comparator, which receives
// (lhs_0, rhs_0, lhs_1, rhs_1, ...) and returns true when lhs goes first.
//
// The order is computed by one bottom-up merge sort: stable, O(n log n)
// comparator calls, no recursion, and well-defined (no out-of-range access)
// even for a comparator that is not a strict weak order. An unstable sort
// (is_stable=false) may order equivalent elements any way; the stable order
// is one of those, so both use it.
#include <algorithm>
#include <optional>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "hilo/eval/ops_internal.h"

namespace hilo {
namespace eval {
namespace {

// Orders order[0..n) (positions along the sorted dimension) so that
// less(order[i+1], order[i]) is false: a stable merge sort. `less` returns
// false after an error, which it records itself.
template <typename Less>
void MergeSort(std::vector<int64_t>* order, Less less) {
  const int64_t n = static_cast<int64_t>(order->size());
  std::vector<int64_t> tmp(n);
  for (int64_t width = 1; width < n; width *= 2) {
    for (int64_t lo = 0; lo < n; lo += 2 * width) {
      const int64_t mid = std::min(lo + width, n), hi = std::min(lo + 2 * width, n);
      int64_t i = lo, j = mid, k = lo;
      while (i < mid && j < hi) {
        // Take from the right run only when it strictly goes first: stable.
        tmp[k++] = less((*order)[j], (*order)[i]) ? (*order)[j++] : (*order)[i++];
      }
      while (i < mid) tmp[k++] = (*order)[i++];
      while (j < hi) tmp[k++] = (*order)[j++];
    }
    order->swap(tmp);
  }
}

// Sorts every 1-D slice of `operands` (same dimensions) along `dimension`
// by `comparator`, which sees the first `compared` operands, and returns the
// permuted arrays.
absl::StatusOr<std::vector<Array>> SortArrays(absl::Span<const Array* const> operands, size_t compared,
                                              int64_t dimension, const HloComputation* comparator,
                                              const ApplyFn& apply) {
  const Array& first = *operands[0];
  const int64_t len = first.dims()[dimension];
  const int64_t stride = RowMajorStrides(first.dims())[dimension];
  std::vector<Array> out;
  for (const Array* a : operands) out.emplace_back(a->type(), a->dims());
  if (first.size() == 0) return out;
  const std::optional<DirectComparator> direct =
      FindDirectComparator(comparator, operands.subspan(0, compared));
  if (!direct.has_value() && comparator == nullptr) return absl::InvalidArgumentError("missing comparator");
  // Otherwise a compiled scalar program when the comparator is simple
  // enough (e.g. JAX's NaN- and zero-canonicalizing ones), else nested
  // evaluation. The program's parameters: (lhs_0, rhs_0, lhs_1, rhs_1, ...).
  std::optional<ScalarProgram> program;
  std::vector<const Array*> program_args;
  std::vector<int64_t> program_index(2 * compared);
  if (!direct.has_value()) {
    program = ScalarProgram::Compile(comparator);
    if (program.has_value() && (program->root_type() != PrimitiveType::PRED ||
                                program->num_parameters() != static_cast<int64_t>(2 * compared))) {
      program.reset();
    }
    for (size_t v = 0; v < compared; ++v) program_args.insert(program_args.end(), 2, operands[v]);
  }
  absl::Status error;
  int64_t base = 0;
  auto less = [&](int64_t l, int64_t r) -> bool {
    const int64_t li = base + l * stride, ri = base + r * stride;
    if (direct.has_value()) return (*direct)(*operands[direct->operand], li, ri);
    if (program.has_value()) {
      for (size_t v = 0; v < compared; ++v) {
        program_index[2 * v] = li;
        program_index[2 * v + 1] = ri;
      }
      return program->Run(program_args, program_index).i != 0;
    }
    if (!error.ok()) return false;
    std::vector<Value> args;
    for (size_t v = 0; v < compared; ++v) {
      args.push_back(ScalarAt(*operands[v], li));
      args.push_back(ScalarAt(*operands[v], ri));
    }
    auto result = ApplyScalar(apply, comparator, std::move(args));
    if (!result.ok()) {
      error = result.status();
      return false;
    }
    if (result->type() != PrimitiveType::PRED) {
      error = absl::InvalidArgumentError(
          absl::StrCat("comparator ", comparator->name(), " does not return pred"));
      return false;
    }
    return result->i()[0] != 0;
  };
  std::vector<int64_t> order(len);
  const int64_t slices = first.size() / len;
  for (int64_t s = 0; s < slices; ++s) {
    // Slice s: the index with the sorted dimension removed, row-major.
    base = (s / stride) * stride * len + s % stride;
    for (int64_t k = 0; k < len; ++k) order[k] = k;
    MergeSort(&order, less);
    if (!error.ok()) return error;
    for (size_t v = 0; v < operands.size(); ++v) {
      const Array& a = *operands[v];
      for (int64_t k = 0; k < len; ++k) {
        const int64_t dst = base + k * stride, src = base + order[k] * stride;
        if (a.is_float()) out[v].f()[dst] = a.f()[src];
        else out[v].i()[dst] = a.i()[src];
      }
    }
  }
  return out;
}

// The first k of each row (last dimension) of `sorted` values and of the
// positions `indices`: topk's (values, s32 indices) tuple.
Value FirstK(const Array& values, const Array& indices, int64_t k) {
  std::vector<int64_t> dims = values.dims();
  const int64_t len = dims.back();
  dims.back() = k;
  Array v(values.type(), dims), ix(PrimitiveType::S32, dims);
  const int64_t rows = len == 0 ? 0 : values.size() / len;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t j = 0; j < k; ++j) {
      if (values.is_float()) v.f()[r * k + j] = values.f()[r * len + j];
      else v.i()[r * k + j] = values.i()[r * len + j];
      ix.i()[r * k + j] = indices.i()[r * len + j];
    }
  }
  return Value::Tuple({Value::FromArray(std::move(v)), Value::FromArray(std::move(ix))});
}

}  // namespace

absl::StatusOr<Value> Sort(const HloInstruction& instr, absl::Span<const Value* const> ops,
                           const ApplyFn& apply) {
  if (ops.empty()) return Error(instr, "needs operands");
  std::vector<const Array*> arrays;
  for (const Value* v : ops) {
    if (!v->is_array()) return Error(instr, "operand is not an array");
    if (v->array().dims() != ops[0]->array().dims()) return Error(instr, "operands have different dimensions");
    arrays.push_back(&v->array());
  }
  const std::vector<int64_t> dims = InstructionDimensions(instr);
  if (dims.size() != 1 || dims[0] < 0 || dims[0] >= arrays[0]->rank()) return Error(instr, "needs dimensions={d}");
  if (instr.to_apply() == nullptr) return Error(instr, "needs to_apply=comparator");
  auto sorted = SortArrays(arrays, arrays.size(), dims[0], instr.to_apply(), apply);
  if (!sorted.ok()) return Error(instr, sorted.status().message());
  return ArraysToValue(*std::move(sorted), instr.shape().IsTuple());
}

// topk(x), k=K, largest=B: the K largest (smallest) elements of each row
// along the last dimension, in order, and their s32 positions. Decision
// (XLA's TopkDecomposer sorts with a GT/LT comparator): floats are ordered
// by XLA's total order (-NaN < -inf < ... < -0 < +0 < ... < +NaN), so a NaN
// counts as the largest value, and ties keep the lower position first. The
// TopK custom-call sorts by its called comparator instead.
absl::StatusOr<Value> TopK(const HloInstruction& instr, const Array& operand, const ApplyFn& apply) {
  if (operand.rank() < 1) return Error(instr, "operand must have rank >= 1");
  if (!instr.shape().IsTuple() || instr.shape().tuple_shapes_size() != 2 ||
      !instr.shape().tuple_shapes(0).IsArray() || instr.shape().tuple_shapes(0).rank() != operand.rank()) {
    return Error(instr, "result must be a (values, indices) tuple of the operand's rank");
  }
  const int64_t k = instr.shape().tuple_shapes(0).dimensions(operand.rank() - 1);
  const int64_t len = operand.dims().back();
  if (k < 0 || k > len) return Error(instr, absl::StrCat("k=", k, " exceeds the last dimension ", len));
  if (instr.opcode() == HloOpcode::kTopK && instr.raw_attribute("k") != nullptr) {
    auto attr = IntAttribute(instr, "k");
    if (!attr.ok()) return attr.status();
    if (*attr != k) return Error(instr, absl::StrCat("k=", *attr, " differs from the result shape"));
  }
  Array iota(PrimitiveType::S32, operand.dims());
  for (int64_t e = 0; e < iota.size(); ++e) iota.i()[e] = len == 0 ? 0 : e % len;
  const Array* arrays[] = {&operand, &iota};
  const HloComputation* comparator = nullptr;
  if (instr.opcode() == HloOpcode::kCustomCall) {
    std::vector<HloComputation*> called = instr.called_computations();
    if (called.size() != 1) return Error(instr, "the TopK custom-call needs one comparator computation");
    comparator = called[0];
    // The positions: an iota sorted alongside, the comparator sees the values.
    auto both = SortArrays(arrays, 1, operand.rank() - 1, comparator, apply);
    if (!both.ok()) return Error(instr, both.status().message());
    return FirstK((*both)[0], (*both)[1], k);
  }
  bool largest = true;
  if (const std::string* raw = instr.raw_attribute("largest")) {
    largest = absl::AsciiStrToLower(absl::StripAsciiWhitespace(*raw)) != "false";
  }
  std::vector<int64_t> order(len);
  Array values(operand.type(), operand.dims()), positions(PrimitiveType::S32, operand.dims());
  const int64_t rows = len == 0 ? 0 : operand.size() / len;
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t base = r * len;
    for (int64_t j = 0; j < len; ++j) order[j] = j;
    MergeSort(&order, [&](int64_t l, int64_t rr) {
      return CompareElements(operand, base + l, operand, base + rr, largest ? 4 : 2, /*total_order=*/true);
    });
    for (int64_t j = 0; j < len; ++j) {
      if (operand.is_float()) values.f()[base + j] = operand.f()[base + order[j]];
      else values.i()[base + j] = operand.i()[base + order[j]];
      positions.i()[base + j] = order[j];
    }
  }
  return FirstK(values, positions, k);
}

}  // namespace eval
}  // namespace hilo

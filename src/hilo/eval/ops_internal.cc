#include "hilo/eval/ops_internal.h"

#include <algorithm>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace hilo {
namespace eval {

int64_t WindowDim::OutputSize(int64_t n) const {
  const __int128 padded = static_cast<__int128>(n > 0 ? n - 1 : 0) * base_dilation + (n > 0 ? 1 : 0) +
                          pad_low + pad_high;
  const __int128 window = static_cast<__int128>(size - 1) * window_dilation + 1;
  if (padded < 0) return -1;
  const __int128 out = padded < window ? 0 : (padded - window) / stride + 1;
  return out > (int64_t{1} << 62) ? -1 : static_cast<int64_t>(out);
}

absl::StatusOr<std::vector<WindowDim>> WindowAttribute(const HloInstruction& instr, int64_t rank) {
  std::vector<WindowDim> window(rank);
  const std::string* raw = instr.raw_attribute("window");
  if (raw == nullptr) return window;
  auto bad = [&](absl::string_view why) {
    return Error(instr, absl::StrCat("window=", *raw, ": ", why));
  };
  absl::string_view text = absl::StripAsciiWhitespace(*raw);
  if (!absl::ConsumePrefix(&text, "{") || !absl::ConsumeSuffix(&text, "}")) return bad("expected {...}");
  for (absl::string_view field : absl::StrSplit(text, ' ', absl::SkipWhitespace())) {
    std::pair<absl::string_view, absl::string_view> kv = absl::StrSplit(field, absl::MaxSplits('=', 1));
    std::vector<absl::string_view> items = absl::StrSplit(kv.second, 'x');
    if (static_cast<int64_t>(items.size()) != rank) {
      return bad(absl::StrCat(kv.first, " has ", items.size(), " dimensions, expected ", rank));
    }
    for (int64_t d = 0; d < rank; ++d) {
      WindowDim& w = window[d];
      if (kv.first == "pad") {
        std::pair<absl::string_view, absl::string_view> lh = absl::StrSplit(items[d], '_');
        if (!absl::SimpleAtoi(lh.first, &w.pad_low) || !absl::SimpleAtoi(lh.second, &w.pad_high)) {
          return bad(absl::StrCat("bad padding '", items[d], "'"));
        }
        continue;
      }
      // Every other field is a positive count, but rhs_reversal (0 or 1).
      static constexpr std::pair<const char*, int64_t WindowDim::*> kFields[] = {
          {"size", &WindowDim::size},
          {"stride", &WindowDim::stride},
          {"lhs_dilate", &WindowDim::base_dilation},
          {"rhs_dilate", &WindowDim::window_dilation}};
      int64_t v;
      if (!absl::SimpleAtoi(items[d], &v)) return bad(absl::StrCat("bad number '", items[d], "'"));
      if (kv.first == "rhs_reversal" && (v == 0 || v == 1)) {
        w.reversal = v == 1;
        continue;
      }
      int64_t WindowDim::*field = nullptr;
      for (const auto& [name, member] : kFields) {
        if (kv.first == name) field = member;
      }
      if (field == nullptr || v < 1) return bad(absl::StrCat("bad field ", kv.first, "=", items[d]));
      w.*field = v;
    }
  }
  return window;
}

std::optional<DirectComparator> FindDirectComparator(const HloComputation* comparator,
                                                     absl::Span<const Array* const> operands) {
  if (comparator == nullptr) return std::nullopt;
  const HloInstruction* root = comparator->root_instruction();
  if (root == nullptr || root->opcode() != HloOpcode::kCompare || root->operand_count() != 2) {
    return std::nullopt;
  }
  const HloInstruction* x = root->operand(0);
  const HloInstruction* y = root->operand(1);
  if (x->opcode() != HloOpcode::kParameter || y->opcode() != HloOpcode::kParameter) return std::nullopt;
  const int64_t px = x->parameter_number(), py = y->parameter_number();
  if (px / 2 != py / 2 || px == py || px / 2 >= static_cast<int64_t>(operands.size())) return std::nullopt;
  const Array& a = *operands[px / 2];
  if (!x->shape().IsArray() || x->shape().element_type() != a.type() || y->shape().element_type() != a.type()) {
    return std::nullopt;
  }
  DirectComparator d;
  d.operand = px / 2;
  d.swapped = px % 2 == 1;
  const std::string* dir = root->raw_attribute("direction");
  d.direction = dir == nullptr ? -1 : ComparisonDirection(*dir);
  if (d.direction < 0) return std::nullopt;
  const std::string* type = root->raw_attribute("type");
  d.total_order = type != nullptr && absl::AsciiStrToUpper(absl::StripAsciiWhitespace(*type)) == "TOTALORDER";
  return d;
}

bool CompareScalars(PrimitiveType type, double fa, int64_t ia, double fb, int64_t ib, int direction,
                    bool total_order) {
  if (IsFloatingPointType(type)) {
    return total_order ? Holds(direction, TotalOrderKey(fa), TotalOrderKey(fb)) : Holds(direction, fa, fb);
  }
  if (IsUnsignedIntegralType(type)) return Holds(direction, UnsignedBits(type, ia), UnsignedBits(type, ib));
  return Holds(direction, ia, ib);
}

bool CompareElements(const Array& a, int64_t i, const Array& b, int64_t j, int direction, bool total_order) {
  return a.is_float() ? CompareScalars(a.type(), a.f()[i], 0, b.f()[j], 0, direction, total_order)
                      : CompareScalars(a.type(), 0, a.i()[i], 0, b.i()[j], direction, total_order);
}

int ComparisonDirection(absl::string_view text) {
  const std::string d = absl::AsciiStrToUpper(absl::StripAsciiWhitespace(text));
  static constexpr const char* kDirections[] = {"EQ", "NE", "LT", "LE", "GT", "GE"};
  for (int k = 0; k < 6; ++k) {
    if (d == kDirections[k]) return k;
  }
  return -1;
}


int64_t WorkPerOutputElement(const HloInstruction& instr) {
  if (instr.operand_count() < 1 || !instr.operand(0)->shape().IsArray()) return 1;
  const Shape& first = instr.operand(0)->shape();
  int64_t work = 1;
  switch (instr.opcode()) {
    case HloOpcode::kConvolution: {
      const std::string* labels = instr.raw_attribute("dim_labels");
      if (labels == nullptr || instr.operand_count() != 2 || !instr.operand(1)->shape().IsArray()) return 1;
      const Shape& kernel = instr.operand(1)->shape();
      const size_t from = labels->find('_'), o = labels->find('o', from);
      if (from == std::string::npos || o == std::string::npos || o - from - 1 >= static_cast<size_t>(kernel.rank())) {
        return 1;
      }
      const int64_t out_features = std::max<int64_t>(kernel.dimensions(o - from - 1), 1);
      for (int64_t d = 0; d < kernel.rank(); ++d) work *= std::max<int64_t>(kernel.dimensions(d), 1);
      return std::max<int64_t>(work / out_features, 1);
    }
    case HloOpcode::kReduceWindow:
    case HloOpcode::kSelectAndScatter: {
      auto window = WindowAttribute(instr, first.rank());
      if (!window.ok()) return 1;
      for (const WindowDim& w : *window) work = std::min<int64_t>(work * std::max<int64_t>(w.size, 1), int64_t{1} << 40);
      return work;
    }
    case HloOpcode::kSort:
    case HloOpcode::kTopK:
      for (int64_t n = first.rank() > 0 ? first.dimensions(first.rank() - 1) : 1; n > 1; n /= 2) ++work;
      return work;
    default:
      return 1;
  }
}

Value ArraysToValue(std::vector<Array> arrays, bool tuple) {
  if (!tuple && arrays.size() == 1) return Value::FromArray(std::move(arrays[0]));
  std::vector<Value> elements;
  for (Array& a : arrays) elements.push_back(Value::FromArray(std::move(a)));
  return Value::Tuple(std::move(elements));
}

Value ScalarAt(const Array& a, int64_t k) {
  Array s(a.type(), {});
  s.CopyElement(0, a, k);
  return Value::FromArray(std::move(s));
}

absl::StatusOr<Array> ApplyScalar(const ApplyFn& apply, const HloComputation* computation,
                                  std::vector<Value> args) {
  if (computation == nullptr) return absl::InvalidArgumentError("missing computation");
  auto result = apply(computation, std::move(args));
  if (!result.ok()) return result.status();
  if (!result->is_array() || result->array().size() != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("computation ", computation->name(), " does not return a scalar"));
  }
  return result->array();
}

}  // namespace eval
}  // namespace hilo

#include "hilo/text/literal_text.h"

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace hilo {
namespace {

// Tuple literals nest like tuple shapes; the text parser bounds shape
// nesting to 512 levels, and this bound keeps direct callers safe too.
constexpr int kMaxLiteralTupleDepth = 512;

struct FloatFormat {
  int mantissa_bits;  // explicit mantissa bits
  double max_finite;
  bool ieee_nan;      // NaN carries a payload in the mantissa (IEEE-like types)
  bool saturates;     // no inf and no NaN: out-of-range values saturate (f4e2m1fn)
};

FloatFormat FormatOf(PrimitiveType type) {
  switch (type) {
    case PrimitiveType::F16: return {10, 65504.0, true, false};
    case PrimitiveType::BF16: return {7, std::ldexp(255.0, 120), true, false};
    case PrimitiveType::F32: return {23, std::numeric_limits<float>::max(), true, false};
    case PrimitiveType::F64: return {52, std::numeric_limits<double>::max(), true, false};
    case PrimitiveType::F8E5M2: return {2, 57344.0, true, false};
    case PrimitiveType::F8E4M3FN: return {3, 448.0, false, false};
    case PrimitiveType::F8E4M3B11FNUZ: return {3, 30.0, false, false};
    case PrimitiveType::F8E5M2FNUZ: return {2, 57344.0, false, false};
    case PrimitiveType::F8E4M3FNUZ: return {3, 240.0, false, false};
    case PrimitiveType::F8E4M3: return {3, 240.0, true, false};
    case PrimitiveType::F8E3M4: return {4, 15.5, true, false};
    case PrimitiveType::F4E2M1FN: return {1, 6.0, false, true};
    case PrimitiveType::F8E8M0FNU: return {0, std::ldexp(1.0, 127), false, false};
    case PrimitiveType::C64: return FormatOf(PrimitiveType::F32);
    case PrimitiveType::C128: return FormatOf(PrimitiveType::F64);
    default: return {52, std::numeric_limits<double>::max(), true, false};
  }
}

// Smallest magnitude that rounds to infinity (or NaN) in the format: the
// largest finite value plus half an ulp at that exponent (round to nearest
// even rounds the halfway point up, since the largest mantissa is odd).
double OverflowThreshold(const FloatFormat& f) {
  if (f.mantissa_bits == 52) return std::numeric_limits<double>::infinity();
  int exp;
  std::frexp(f.max_finite, &exp);  // max = m * 2^exp, m in [0.5, 1)
  return f.max_finite + std::ldexp(1.0, exp - 1 - f.mantissa_bits - 1);
}

bool IsIdentStart(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }

class LiteralReader {
 public:
  explicit LiteralReader(absl::string_view text) : text_(text) {}

  absl::Status Read(const Shape& shape, std::vector<LiteralElement>* out) {
    if (text_.find("...") != absl::string_view::npos) {
      return absl::InvalidArgumentError(
          "the literal's values are elided ('{...}'); they can not be read");
    }
    absl::Status s = ReadShape(shape, 0, out);
    if (!s.ok()) return s;
    s = SkipSpace();
    if (!s.ok()) return s;
    if (pos_ != text_.size()) return Error("unexpected text after the literal");
    return absl::OkStatus();
  }

 private:
  absl::Status Error(absl::string_view message) const {
    return absl::InvalidArgumentError(absl::StrCat(message, " (at offset ", pos_,
                                                   " of literal '", Excerpt(), "')"));
  }
  std::string Excerpt() const {
    constexpr size_t kMax = 60;
    if (text_.size() <= kMax) return std::string(text_);
    return absl::StrCat(text_.substr(0, kMax), "...");
  }

  absl::Status SkipSpace() {
    while (pos_ < text_.size()) {
      char c = text_[pos_];
      if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
        ++pos_;
      } else if (c == '/' && pos_ + 1 < text_.size() && text_[pos_ + 1] == '*') {
        size_t end = text_.find("*/", pos_ + 2);
        if (end == absl::string_view::npos) return Error("unterminated /* comment");
        pos_ = end + 2;
      } else {
        break;
      }
    }
    return absl::OkStatus();
  }

  bool Peek(char c) const { return pos_ < text_.size() && text_[pos_] == c; }

  absl::Status Expect(char c) {
    absl::Status s = SkipSpace();
    if (!s.ok()) return s;
    if (!Peek(c)) return Error(absl::StrCat("expected '", std::string(1, c), "'"));
    ++pos_;
    return absl::OkStatus();
  }

  absl::Status ReadShape(const Shape& shape, int depth, std::vector<LiteralElement>* out) {
    if (shape.IsTuple()) {
      if (depth >= kMaxLiteralTupleDepth) return Error("tuple literal nested too deeply");
      absl::Status s = Expect('(');
      if (!s.ok()) return s;
      for (int64_t i = 0; i < shape.tuple_shapes_size(); ++i) {
        if (i > 0) {
          s = Expect(',');
          if (!s.ok()) return s;
        }
        s = ReadShape(shape.tuple_shapes(i), depth + 1, out);
        if (!s.ok()) return s;
      }
      return Expect(')');
    }
    if (!shape.IsArray()) {
      return Error(absl::StrCat("a ", PrimitiveTypeName(shape.element_type()),
                                " shape has no literal values"));
    }
    return ReadArray(shape, out);
  }

  // One level of braces per dimension, walked with explicit per-level counts
  // (no recursion: the rank is not bounded by anything but the input).
  absl::Status ReadArray(const Shape& shape, std::vector<LiteralElement>* out) {
    const int64_t rank = shape.rank();
    absl::Status s;
    if (rank == 0) return ReadElement(shape.element_type(), out);
    s = SkipSpace();
    if (!s.ok()) return s;
    if (!Peek('{')) {
      // A bare scalar for an array shape: every element has that value
      // (XLA's parser accepts `f32[3] constant(0)`).
      if (out == nullptr) return ReadElement(shape.element_type(), out);  // validating only
      const int64_t n = shape.elements();
      constexpr int64_t kMaxBroadcast = int64_t{1} << 26;
      if (n > kMaxBroadcast) {
        return Error(absl::StrCat("a scalar literal for shape ", shape.ToString(),
                                  " would expand to more than ", kMaxBroadcast, " elements"));
      }
      s = ReadElement(shape.element_type(), out);
      if (!s.ok()) return s;
      if (n == 0) {
        out->pop_back();
      } else {
        out->resize(out->size() + n - 1, out->back());
      }
      return absl::OkStatus();
    }
    std::vector<int64_t> counts;
    s = Expect('{');
    if (!s.ok()) return s;
    counts.push_back(0);
    bool need_separator = false;
    while (!counts.empty()) {
      s = SkipSpace();
      if (!s.ok()) return s;
      if (pos_ >= text_.size()) return Error("literal ends before its closing '}'");
      const int64_t level = static_cast<int64_t>(counts.size()) - 1;
      if (text_[pos_] == '}') {
        if (!CountFits(shape, level, counts.back(), /*closing=*/true)) {
          return Error(absl::StrCat("dimension ", level, " of the literal has ", counts.back(),
                                    " elements, but the shape ", shape.ToString(),
                                    " says ", DimText(shape, level)));
        }
        ++pos_;
        counts.pop_back();
        if (!counts.empty()) ++counts.back();
        need_separator = true;
        continue;
      }
      if (need_separator) {
        if (text_[pos_] != ',') return Error("expected ',' or '}'");
        ++pos_;
        need_separator = false;
        s = SkipSpace();
        if (!s.ok()) return s;
      }
      if (!CountFits(shape, level, counts.back() + 1, /*closing=*/false)) {
        return Error(absl::StrCat("dimension ", level, " of the literal has more than ",
                                  counts.back(), " elements, but the shape ",
                                  shape.ToString(), " says ", DimText(shape, level)));
      }
      if (level + 1 < rank) {
        if (!Peek('{')) {
          return Error(absl::StrCat("expected '{' for dimension ", level + 1,
                                    " of the literal of shape ", shape.ToString()));
        }
        ++pos_;
        counts.push_back(0);
        need_separator = false;
      } else {
        s = ReadElement(shape.element_type(), out);
        if (!s.ok()) return s;
        ++counts.back();
        need_separator = true;
      }
    }
    return absl::OkStatus();
  }

  static std::string DimText(const Shape& shape, int64_t level) {
    if (shape.is_unbounded_dimension(level)) return "?";
    return absl::StrCat(shape.is_dynamic_dimension(level) ? "<=" : "",
                        shape.dimensions(level));
  }

  // A bounded-dynamic dimension holds up to its bound; an unbounded one any count.
  static bool CountFits(const Shape& shape, int64_t level, int64_t count, bool closing) {
    if (shape.is_unbounded_dimension(level)) return true;
    int64_t dim = shape.dimensions(level);
    if (shape.is_dynamic_dimension(level) || !closing) return count <= dim;
    return count == dim;
  }

  absl::Status ReadElement(PrimitiveType type, std::vector<LiteralElement>* out) {
    absl::Status s = SkipSpace();
    if (!s.ok()) return s;
    LiteralElement e;
    if (IsComplexType(type)) {
      const FloatFormat f = FormatOf(type);
      if (!Peek('(')) return Error("expected '(' starting a complex value (re, im)");
      ++pos_;
      s = SkipSpace();
      if (!s.ok()) return s;
      s = ReadFloat(f, &e.real);
      if (!s.ok()) return s;
      s = Expect(',');
      if (!s.ok()) return s;
      s = SkipSpace();
      if (!s.ok()) return s;
      s = ReadFloat(f, &e.imag);
      if (!s.ok()) return s;
      s = Expect(')');
      if (!s.ok()) return s;
    } else if (IsFloatingPointType(type)) {
      s = ReadFloat(FormatOf(type), &e.real);
      if (!s.ok()) return s;
    } else if (type == PrimitiveType::PRED) {
      s = ReadPred(&e);
      if (!s.ok()) return s;
    } else if (IsIntegralType(type)) {
      s = ReadInteger(type, &e);
      if (!s.ok()) return s;
    } else {
      return Error(absl::StrCat("a ", PrimitiveTypeName(type), " element has no literal value"));
    }
    if (out != nullptr) out->push_back(e);
    return absl::OkStatus();
  }

  // The token of a number or keyword: a sign, then letters, digits, '.',
  // and a sign right after an exponent 'e'.
  absl::string_view NumberToken() {
    size_t start = pos_;
    size_t i = pos_;
    if (i < text_.size() && text_[i] == '-') ++i;
    while (i < text_.size()) {
      char c = text_[i];
      if (IsDigit(c) || IsIdentStart(c) || c == '.' || c == '_') {
        ++i;
      } else if ((c == '+' || c == '-') && i > start &&
                 (text_[i - 1] == 'e' || text_[i - 1] == 'E')) {
        ++i;
      } else {
        break;
      }
    }
    pos_ = i;
    return text_.substr(start, i - start);
  }

  absl::Status ReadPred(LiteralElement* e) {
    size_t start = pos_;
    absl::string_view tok = NumberToken();
    int v;
    if (tok == "true" || tok == "1") {
      v = 1;
    } else if (tok == "false" || tok == "0") {
      v = 0;
    } else {
      pos_ = start;
      return Error(absl::StrCat("expected true, false, 1 or 0 for a pred value, got '", tok, "'"));
    }
    e->s = v;
    e->u = static_cast<uint64_t>(v);
    e->real = v;
    return absl::OkStatus();
  }

  absl::Status ReadInteger(PrimitiveType type, LiteralElement* e) {
    size_t start = pos_;
    absl::string_view tok = NumberToken();
    bool negative = !tok.empty() && tok[0] == '-';
    absl::string_view digits = negative ? tok.substr(1) : tok;
    uint64_t magnitude = 0;
    auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), magnitude);
    if (digits.empty() || ec == std::errc::invalid_argument ||
        ptr != digits.data() + digits.size()) {
      pos_ = start;
      return Error(absl::StrCat("expected an integer for a ", PrimitiveTypeName(type),
                                " value, got '", tok, "'"));
    }
    const int bits = BitWidth(type);
    bool out_of_range = ec == std::errc::result_out_of_range;
    if (!out_of_range && IsSignedIntegralType(type)) {
      // Allowed magnitudes: up to 2^(bits-1)-1, or 2^(bits-1) when negative.
      const uint64_t limit = uint64_t{1} << (bits - 1);
      if (negative ? magnitude > limit : magnitude >= limit) out_of_range = true;
      if (!out_of_range) {
        e->s = negative ? static_cast<int64_t>(0 - magnitude) : static_cast<int64_t>(magnitude);
        e->u = static_cast<uint64_t>(e->s);
        e->real = static_cast<double>(e->s);
      }
    } else if (!out_of_range) {
      const uint64_t max = bits >= 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1;
      if ((negative && magnitude != 0) || magnitude > max) out_of_range = true;
      if (!out_of_range) {
        e->u = magnitude;
        e->s = static_cast<int64_t>(magnitude);
        e->real = static_cast<double>(magnitude);
      }
    }
    if (out_of_range) {
      pos_ = start;
      return Error(absl::StrCat("value ", tok, " is out of range for ", PrimitiveTypeName(type)));
    }
    return absl::OkStatus();
  }

  absl::Status ReadFloat(const FloatFormat& f, double* value) {
    size_t start = pos_;
    absl::string_view tok = NumberToken();
    bool negative = !tok.empty() && tok[0] == '-';
    absl::string_view body = negative ? tok.substr(1) : tok;
    if (body == "inf") {
      *value = negative ? -std::numeric_limits<double>::infinity()
                        : std::numeric_limits<double>::infinity();
      return absl::OkStatus();
    }
    if (body == "nan") {
      *value = negative ? -std::numeric_limits<double>::quiet_NaN()
                        : std::numeric_limits<double>::quiet_NaN();
      // `nan(0x7f)`: a payload, which must fit the format's mantissa.
      if (Peek('(')) {
        size_t close = text_.find(')', pos_);
        if (close == absl::string_view::npos) return Error("unterminated NaN payload");
        absl::string_view payload = text_.substr(pos_ + 1, close - pos_ - 1);
        uint64_t p = 0;
        if (payload.size() < 3 || payload[0] != '0' || (payload[1] != 'x' && payload[1] != 'X')) {
          return Error(absl::StrCat("NaN payload '", payload, "' is not a hexadecimal 0x number"));
        }
        auto [ptr, ec] = std::from_chars(payload.data() + 2, payload.data() + payload.size(), p, 16);
        if (ec != std::errc() || ptr != payload.data() + payload.size()) {
          return Error(absl::StrCat("NaN payload '", payload, "' is not a hexadecimal 0x number"));
        }
        if (!f.ieee_nan || f.mantissa_bits <= 0 || p == 0 ||
            (f.mantissa_bits < 64 && p >= (uint64_t{1} << f.mantissa_bits))) {
          return Error(absl::StrCat("NaN payload ", payload, " does not fit the element type"));
        }
        pos_ = close + 1;
      }
      return absl::OkStatus();
    }
    double v = 0;
    bool bad = body.empty() || !(IsDigit(body[0]) || body[0] == '.');
    if (!bad) {
      auto [ptr, ec] = std::from_chars(tok.data(), tok.data() + tok.size(), v);
      if (ec == std::errc::invalid_argument || ptr != tok.data() + tok.size()) {
        bad = true;
      } else if (ec == std::errc::result_out_of_range) {
        // from_chars leaves the value unset on overflow and on underflow;
        // strtod tells them apart (huge -> inf, tiny -> 0 or a denormal).
        std::string copy(tok);
        v = std::strtod(copy.c_str(), nullptr);
      }
    }
    if (bad) {
      pos_ = start;
      return Error(absl::StrCat("expected a floating-point value, got '", tok, "'"));
    }
    if (!f.saturates && (std::isinf(v) || std::fabs(v) >= OverflowThreshold(f))) {
      pos_ = start;
      return Error(absl::StrCat("value ", tok, " is out of range for the element type"));
    }
    *value = v;
    return absl::OkStatus();
  }

  absl::string_view text_;
  size_t pos_ = 0;
};

}  // namespace

absl::StatusOr<std::vector<LiteralElement>> ParseLiteralElements(const Shape& shape,
                                                                  absl::string_view text) {
  std::vector<LiteralElement> out;
  LiteralReader reader(text);
  absl::Status s = reader.Read(shape, &out);
  if (!s.ok()) return s;
  return out;
}

absl::Status ValidateLiteralText(const Shape& shape, absl::string_view text) {
  LiteralReader reader(text);
  return reader.Read(shape, nullptr);
}

}  // namespace hilo
